//! `rein sessions …` and `rein trace report`: reading the store.
//!
//! Each command reads a session's log and prints a projection of it: the
//! list of sessions, a transcript, the turn tree, a golden trace, a trace
//! report. None of them takes the session's lock or changes the log
//! (`import` writes a new session).

use std::collections::HashMap;
use std::io::Write;

use rein::sessions::{Event, Store, StoredEvent, TurnInfo};
use rein::wire::visible::visible;
use rein::wire::{AgentError, ContentBlock, error::codes};
use serde_json::{Value, json};

/// Read a session's whole log.
pub async fn whole_log(store: &dyn Store, id: &str) -> Result<Vec<StoredEvent>, AgentError> {
    rein::sessions::read_all(store, id).await
}

fn out_error(err: std::io::Error) -> AgentError {
    super::output::output_error(err)
}

/// A session as `rein sessions list` shows it.
#[derive(Debug, serde::Serialize)]
struct Listed {
    id: String,
    /// The first words of the first turn.
    title: String,
    model: Option<String>,
    created_ms: i64,
    /// When its last event was appended.
    last_ms: i64,
    /// `finished`, `waiting for approval`, `interrupted`, `failed`,
    /// `unfinished` (a turn open without an approval: running, or cut
    /// short by a crash) or `empty`.
    state: String,
    events: u64,
    /// What the application recorded when it opened the session.
    metadata: Value,
}

/// The most words of a first turn a title keeps.
const TITLE_WORDS: usize = 8;

/// How a session is summed up without reading its whole log: its first
/// events (the title), its last ones (state, last activity) and its
/// control record (a pending approval).
async fn listed(
    store: &dyn Store,
    info: rein::sessions::SessionInfo,
) -> Result<Listed, AgentError> {
    let first = store.read(&info.id, 1, 16).await?;
    let title = first
        .iter()
        .find_map(|e| match &e.event {
            Event::TurnStarted { prompt, .. } => Some(prompt.clone()),
            _ => None,
        })
        .map(|prompt| {
            let words: Vec<&str> = prompt.split_whitespace().collect();
            let mut title = words[..words.len().min(TITLE_WORDS)].join(" ");
            if words.len() > TITLE_WORDS {
                title.push('…');
            }
            title
        })
        .unwrap_or_default();
    let tail = store
        .read(&info.id, info.head_seq.saturating_sub(63).max(1), 64)
        .await?;
    let last_ms = tail.last().map_or(info.created_ms, |e| e.at_ms);
    let pending = !store.control(&info.id).await?.pending.is_empty();
    let last_turn = tail.iter().rev().find_map(|e| match &e.event {
        Event::TurnFinished { outcome, .. } => Some(Some(*outcome)),
        Event::TurnStarted { .. } => Some(None),
        _ => None,
    });
    let state = match (pending, last_turn) {
        (true, _) => "waiting for approval".to_owned(),
        (false, None) => "empty".to_owned(),
        (false, Some(None)) => "unfinished".to_owned(),
        (false, Some(Some(outcome))) => match outcome.as_str() {
            "error" => "failed".to_owned(),
            other => other.replace('_', " "),
        },
    };
    Ok(Listed {
        model: info.metadata["model"].as_str().map(str::to_owned),
        metadata: info.metadata,
        id: info.id,
        title,
        created_ms: info.created_ms,
        last_ms,
        state,
        events: info.head_seq,
    })
}

/// `then` as a person reads it from `now`: `just now`, `5 min ago`, …
pub(crate) fn ago(now_ms: i64, then_ms: i64) -> String {
    let s = (now_ms - then_ms).max(0) / 1000;
    match s {
        0..60 => "just now".to_owned(),
        60..3_600 => format!("{} min ago", s / 60),
        3_600..86_400 => format!("{} h ago", s / 3_600),
        _ => format!("{} days ago", s / 86_400),
    }
}

/// `rein sessions list`: newest activity first, with title, model, last
/// activity and state (`--json` for the same as objects).
pub async fn list(
    store: &dyn Store,
    limit: usize,
    as_json: bool,
    out: &mut impl Write,
) -> Result<(), AgentError> {
    let mut sessions = Vec::new();
    for info in store.list_sessions(limit).await? {
        sessions.push(listed(store, info).await?);
    }
    sessions.sort_by(|a, b| b.last_ms.cmp(&a.last_ms).then_with(|| b.id.cmp(&a.id)));
    if as_json {
        let v = serde_json::to_string(&sessions)
            .map_err(|e| AgentError::new(codes::INTERNAL, e.to_string()))?;
        return writeln!(out, "{v}").map_err(out_error);
    }
    if sessions.is_empty() {
        return writeln!(out, "no sessions yet (start one with `rein chat`)").map_err(out_error);
    }
    let now = rein::wire::clock::now_ms();
    for s in sessions {
        // Titles and model names came from a person or a provider: shown
        // visibly, never as raw control bytes.
        writeln!(
            out,
            "{}  {:<12} {:<22} {:<20}  {}",
            s.id,
            ago(now, s.last_ms),
            s.state,
            visible(s.model.as_deref().unwrap_or("-")),
            visible(&s.title)
        )
        .map_err(out_error)?;
    }
    Ok(())
}

/// `rein sessions show ID`: the transcript, in log order.
pub async fn show(store: &dyn Store, id: &str, out: &mut impl Write) -> Result<(), AgentError> {
    let events = whole_log(store, id).await?;
    writeln!(out, "session {id}").map_err(out_error)?;
    for stored in &events {
        let line = match &stored.event {
            Event::TurnStarted { prompt, .. } => format!("you> {prompt}"),
            Event::ModelCompleted { message, .. } => {
                let mut parts = Vec::new();
                for block in &message.content {
                    match block {
                        ContentBlock::Text { text } if !text.is_empty() => {
                            parts.push(format!("rein> {text}"))
                        }
                        ContentBlock::ToolUse { name, input, .. } => {
                            parts.push(format!("  call {name} {input}"))
                        }
                        _ => {}
                    }
                }
                parts.join("\n")
            }
            Event::ToolResult {
                status,
                source,
                content,
                ..
            } => {
                let head = format!("  result {status:?} ({source:?})").to_lowercase();
                match (&content["error"]["code"], &content["error"]["message"]) {
                    (Value::String(code), Value::String(message)) => {
                        format!("{head}: {code}: {message}")
                    }
                    _ => head,
                }
            }
            Event::ApprovalRequested {
                tool, permission, ..
            } => format!("  approval asked: {tool} ({permission})"),
            Event::ApprovalDecided { decision, by, .. } => format!("  approval {decision} by {by}"),
            Event::SteerSaid { text } => format!("  (said mid-turn) {text}"),
            Event::Stopped { by } => format!("  stopped by {by}"),
            Event::AuthorityAccepted { by, .. } => {
                format!("  changed authority accepted by {by}")
            }
            Event::HookRan {
                hook,
                point,
                effect,
                ..
            } => {
                format!("  hook {hook} at {point}: {effect}")
            }
            Event::TurnFinished { outcome, .. } if *outcome != rein::wire::Ending::Finished => {
                format!("  [turn ended: {outcome}]")
            }
            Event::BranchCreated { from_turn } => format!(
                "  [branch from {}]",
                from_turn.as_deref().unwrap_or("the start")
            ),
            _ => String::new(),
        };
        if !line.is_empty() {
            // The transcript quotes the model: its control characters are
            // shown, never sent to the terminal; a huge one is cut.
            writeln!(out, "{}", visible(&shown_part(&line))).map_err(out_error)?;
        }
    }
    Ok(())
}

/// The most characters of one event `rein sessions show` prints.
const MAX_SHOWN_CHARS: usize = 4_000;

/// `line`, or its start and how much was left out (the export has it all).
fn shown_part(line: &str) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(MAX_SHOWN_CHARS) {
        None => std::borrow::Cow::Borrowed(line),
        Some((at, _)) => std::borrow::Cow::Owned(format!(
            "{} … ({} more characters; `rein sessions export` has them all)",
            &line[..at],
            line[at..].chars().count()
        )),
    }
}

/// `rein sessions tree ID`: the turn tree, children indented under parents.
pub async fn tree(store: &dyn Store, id: &str, out: &mut impl Write) -> Result<(), AgentError> {
    let info = store.session(id).await?;
    let turns = store.turns(id).await?;
    let mut children: HashMap<Option<&str>, Vec<&TurnInfo>> = HashMap::new();
    for t in &turns {
        children.entry(t.parent.as_deref()).or_default().push(t);
    }
    writeln!(out, "session {id}").map_err(out_error)?;
    let head = info.head_turn.as_deref();
    let mut stack: Vec<(&TurnInfo, usize)> = children
        .get(&None)
        .map(|roots| roots.iter().rev().map(|t| (*t, 0)).collect())
        .unwrap_or_default();
    while let Some((turn, depth)) = stack.pop() {
        let prompt: String = turn.prompt.chars().take(60).collect();
        let prompt = visible(&prompt);
        let marker = if Some(turn.id.as_str()) == head {
            "  <- head"
        } else {
            ""
        };
        writeln!(
            out,
            "{}{} [{}] {prompt}{marker}",
            "  ".repeat(depth + 1),
            turn.id,
            turn.outcome.map_or("open", rein::wire::Ending::as_str)
        )
        .map_err(out_error)?;
        if let Some(kids) = children.get(&Some(turn.id.as_str())) {
            stack.extend(kids.iter().rev().map(|t| (*t, depth + 1)));
        }
    }
    Ok(())
}

/// `rein sessions export ID`: the golden trace.
pub async fn export(store: &dyn Store, id: &str) -> Result<String, AgentError> {
    rein::trace::golden::export(&whole_log(store, id).await?)
}

/// `rein trace report ID`.
pub async fn report(
    store: &dyn Store,
    id: &str,
    as_json: bool,
    out: &mut impl Write,
) -> Result<(), AgentError> {
    let report = rein::runner::report_with_agents(store, id).await?;
    if as_json {
        let v = serde_json::to_string(&json!(report))
            .map_err(|e| AgentError::new(codes::INTERNAL, e.to_string()))?;
        writeln!(out, "{v}").map_err(out_error)
    } else {
        write!(out, "{}", report.render()).map_err(out_error)
    }
}
