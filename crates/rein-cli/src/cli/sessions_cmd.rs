//! `rein sessions …` and `rein trace report`: reading the store.
//!
//! Each command reads a session's log and prints a projection of it: the
//! list of sessions, a transcript, the turn tree, a golden trace, a trace
//! report. None of them takes the session's lock or changes the log
//! (`import` writes a new session).

use std::collections::HashMap;
use std::io::Write;

use rein_sessions::{Event, Store, StoredEvent, TurnInfo};
use rein_wire::visible::visible;
use rein_wire::{AgentError, ContentBlock, error::codes};
use serde_json::{Value, json};

/// Read a session's whole log.
pub async fn whole_log(store: &dyn Store, id: &str) -> Result<Vec<StoredEvent>, AgentError> {
    let mut events = Vec::new();
    loop {
        let from = events.len() as u64 + 1;
        let page = store.read(id, from, 10_000).await?;
        if page.is_empty() {
            break;
        }
        events.extend(page);
    }
    if events.is_empty() {
        store.session(id).await?;
    }
    Ok(events)
}

fn out_error(err: std::io::Error) -> AgentError {
    super::output::output_error(err)
}

/// `rein sessions list`.
pub async fn list(
    store: &dyn Store,
    limit: usize,
    as_json: bool,
    out: &mut impl Write,
) -> Result<(), AgentError> {
    let sessions = store.list_sessions(limit).await?;
    if as_json {
        let v = serde_json::to_string(&sessions)
            .map_err(|e| AgentError::new(codes::INTERNAL, e.to_string()))?;
        return writeln!(out, "{v}").map_err(out_error);
    }
    if sessions.is_empty() {
        return writeln!(out, "no sessions yet (start one with `rein chat`)").map_err(out_error);
    }
    for s in sessions {
        let title = s
            .metadata
            .get("title")
            .and_then(|t| t.as_str())
            .unwrap_or("");
        writeln!(
            out,
            "{}  {:>6} events  {}",
            s.id,
            s.head_seq,
            visible(title)
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
            Event::TurnFinished { outcome, .. } if outcome != "finished" => {
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
            // shown, never sent to the terminal.
            writeln!(out, "{}", visible(&line)).map_err(out_error)?;
        }
    }
    Ok(())
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
            turn.outcome.as_deref().unwrap_or("open")
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
    rein_trace::golden::export(&whole_log(store, id).await?)
}

/// `rein trace report ID`.
pub async fn report(
    store: &dyn Store,
    id: &str,
    as_json: bool,
    out: &mut impl Write,
) -> Result<(), AgentError> {
    let events = whole_log(store, id).await?;
    let report = rein_trace::report(id, &events);
    if as_json {
        let v = serde_json::to_string(&json!(report))
            .map_err(|e| AgentError::new(codes::INTERNAL, e.to_string()))?;
        writeln!(out, "{v}").map_err(out_error)
    } else {
        write!(out, "{}", report.render()).map_err(out_error)
    }
}
