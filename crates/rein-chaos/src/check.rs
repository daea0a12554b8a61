//! What must hold after a trial, however often it was killed: the log
//! whole and gapless with nothing left unfinished, every call the model
//! made answered exactly once, no change run twice (or at all, when
//! refused), every decision the person's, the files as the results say,
//! and the story — the calls made, their results and the replies — the
//! same as an uninterrupted run's apart from what the recorded
//! interruptions changed.
//!
//! Not here: running or killing the trial (`child`, `campaign`).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use rein_sessions::recovery::dangling;
use rein_sessions::{Event, ResultSource, SqliteStore, Store, StoredEvent, ToolStatus};
use rein_wire::ContentBlock;
use rein_wire::permission::Decision;

use crate::child::{Surface, finished_turns, main_session, person, root_path, store_path};
use crate::counted::executions;
use crate::model::{STAMPED, TURNS};

/// The tools whose execution changes something: run at most once.
const CHANGES: &[&str] = &["write_file", "edit_file", "delete_file", "run_command"];

/// A finished trial as the model and the person saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Story {
    /// Every call the model made: (call id, tool), in order.
    pub calls: Vec<(String, String)>,
    /// Every result: (call id, how it ended: `ok`, the error's code, or
    /// `interrupted`), in order.
    pub results: Vec<(String, String)>,
    /// The turns' replies.
    pub replies: Vec<String>,
}

impl Story {
    /// Whether `self` (a trial) tells `reference` (an uninterrupted run)
    /// apart from what interruptions changed: the same calls and replies,
    /// and the same results up to the first interrupted one.
    pub fn matches(&self, reference: &Story) -> Result<(), String> {
        if self.calls != reference.calls {
            return Err(format!("calls {:?} != {:?}", self.calls, reference.calls));
        }
        if self.replies != reference.replies {
            return Err(format!(
                "replies {:?} != {:?}",
                self.replies, reference.replies
            ));
        }
        let cut = self
            .results
            .iter()
            .position(|(_, how)| how == "interrupted")
            .unwrap_or(self.results.len());
        if self.results[..cut] != reference.results[..cut.min(reference.results.len())] {
            return Err(format!(
                "results {:?} != {:?}",
                &self.results[..cut],
                reference.results
            ));
        }
        if cut == self.results.len() && self.results != reference.results {
            return Err(format!(
                "results {:?} != {:?}",
                self.results, reference.results
            ));
        }
        Ok(())
    }

    /// How many calls of `tool` had their results recorded as interrupted.
    pub fn interrupted_calls_of(&self, tool: &str) -> usize {
        self.results
            .iter()
            .filter(|(call, how)| {
                how == "interrupted" && self.calls.iter().any(|(c, t)| c == call && t == tool)
            })
            .count()
    }

    /// How many results were recorded as interrupted.
    pub fn interrupted(&self) -> usize {
        self.results
            .iter()
            .filter(|(_, how)| how == "interrupted")
            .count()
    }
}

/// A finished trial's sessions, each read whole.
pub(crate) struct Logs {
    /// The conversation's own sessions, in order: the main session, or a
    /// graph's task sessions in the graph's order.
    pub(crate) own: Vec<Vec<StoredEvent>>,
    /// The sub-agents' sessions.
    pub(crate) helpers: Vec<Vec<StoredEvent>>,
    /// A graph's record.
    pub(crate) record: Option<Vec<StoredEvent>>,
}

/// Check the finished trial in `dir`: its story, or every broken promise.
pub async fn trial(dir: &Path) -> Result<Story, Vec<String>> {
    if Surface::of(dir) == Surface::Hosted {
        return crate::hosted_check::check(dir).await;
    }
    let logs = match read_logs(dir).await {
        Ok(logs) => logs,
        Err(err) => return Err(vec![err]),
    };
    let log = logs.own.concat();
    let mcp = Surface::of(dir) == Surface::Mcp;
    let mut broken = Vec::new();
    for session in &logs.own {
        closed(session, "", &mut broken);
    }
    // An MCP client's calls are a turn each, as many as reached the server.
    if !mcp && finished_turns(&log) != TURNS.len() {
        broken.push(format!(
            "{} turns finished, not {}",
            finished_turns(&log),
            TURNS.len()
        ));
    }
    if let Some(record) = &logs.record {
        crate::graph::record_whole(record, &mut broken);
    }
    let (story, _) = story(&log);
    answered_once(&log, &story, &mut broken);
    for helper in &logs.helpers {
        helper_whole(helper, &mut broken);
    }
    // Every session's calls, results and decisions: the sub-agent's go
    // through the same tools and the same person.
    let all: Vec<StoredEvent> = log
        .iter()
        .chain(logs.helpers.iter().flatten())
        .cloned()
        .collect();
    let (_, ends) = self::story(&all);
    decided_by_the_person(&all, mcp, &mut broken);
    match executions(dir) {
        Ok(ran) => ran_at_most_once(&ran, &ends, &all, &mut broken),
        Err(err) => broken.push(format!("the executions file is unreadable: {err}")),
    }
    files_as_results_say(dir, &ends, &all, &mut broken);
    if broken.is_empty() {
        Ok(story)
    } else {
        Err(broken)
    }
}

/// Whether the uninterrupted run in `dir` ran the whole scenario: a
/// change approved, a delete refused by the person, a compaction made, the
/// sandboxed command run and a sub-agent's task finished — else the
/// campaign would test less than it says.
pub async fn scenario_ran(dir: &Path) -> Result<(), String> {
    if Surface::of(dir) == Surface::Hosted {
        return crate::hosted_check::scenario_ran(dir).await;
    }
    let logs = read_logs(dir).await?;
    let log = logs.own.concat();
    // An MCP client hands no task to a sub-agent, and asks no compaction.
    let mcp = Surface::of(dir) == Surface::Mcp;
    if !mcp && !logs.helpers.iter().any(|h| finished_turns(h) == 1) {
        return Err("the scenario did not run whole: no sub-agent finished its task".into());
    }
    let decided = |wanted: Decision| {
        log.iter().any(
            |e| matches!(&e.event, Event::ApprovalDecided { decision, .. } if *decision == wanted),
        )
    };
    // A graph's tasks are separate conversations: none is compacted.
    let compacted = logs.record.is_some()
        || mcp
        || log.iter().any(|e| {
            matches!(
                &e.event,
                Event::CompactionCreated { summary, .. }
                    if matches!(**summary, rein_sessions::Compaction::Compact(_))
            )
        });
    let (_, ends) = story(&log);
    let commanded = ends
        .values()
        .any(|(tool, how)| tool == "run_command" && how == "ok");
    match (
        decided(Decision::Approved),
        decided(Decision::Denied),
        compacted,
        commanded,
    ) {
        (true, true, true, true) => Ok(()),
        seen => Err(format!(
            "the scenario did not run whole (approved, denied, compacted, command ran): {seen:?}"
        )),
    }
}

/// The trial's sessions, each read whole.
async fn read_logs(dir: &Path) -> Result<Logs, String> {
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(store_path(dir))
            .await
            .map_err(|e| format!("the store does not open: {e}"))?,
    );
    if Surface::of(dir) == Surface::Graph {
        return crate::graph::read_logs(store.as_ref()).await;
    }
    let main = main_session(store.as_ref())
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the store holds no session")?;
    let sessions = store
        .list_sessions(100)
        .await
        .map_err(|e| format!("the sessions do not list: {e}"))?;
    let mut helpers = Vec::new();
    for session in sessions {
        if session.metadata["parent_session"].as_str() == Some(main.as_str()) {
            helpers.push(read_whole(store.as_ref(), &session.id).await?);
        } else if session.id != main {
            return Err(format!("a session of no known parent: {}", session.id));
        }
    }
    Ok(Logs {
        own: vec![read_whole(store.as_ref(), &main).await?],
        helpers,
        record: None,
    })
}

/// Session `id`'s log, whole.
pub(crate) async fn read_whole(store: &dyn Store, id: &str) -> Result<Vec<StoredEvent>, String> {
    rein_sessions::read_all(store, id)
        .await
        .map_err(|e| format!("the log of {id} does not read: {e}"))
}

/// A sub-agent's session: gapless, nothing left unfinished, every call
/// answered exactly once.
fn helper_whole(log: &[StoredEvent], broken: &mut Vec<String>) {
    closed(log, "a sub-agent's ", broken);
    let (story, _) = story(log);
    answered_once(log, &story, broken);
}

/// A session's log gapless and with nothing left unfinished; `whose`
/// begins each break's words ("" for the main session's).
pub(crate) fn closed(log: &[StoredEvent], whose: &str, broken: &mut Vec<String>) {
    for (i, e) in log.iter().enumerate() {
        if e.seq != i as u64 + 1 {
            broken.push(format!(
                "{whose}event {} has sequence number {}",
                i + 1,
                e.seq
            ));
            break;
        }
    }
    let open = dangling(log);
    if !open.is_clean() {
        broken.push(format!("{whose}work left unfinished: {open:?}"));
    }
}

/// The story, and how each call ended (call id → tool, how).
fn story(log: &[StoredEvent]) -> (Story, HashMap<String, (String, String)>) {
    let mut story = Story {
        calls: Vec::new(),
        results: Vec::new(),
        replies: Vec::new(),
    };
    let mut tools = HashMap::new();
    let mut ends = HashMap::new();
    for e in log {
        match &e.event {
            Event::ModelCompleted { message, .. } => {
                for block in &message.content {
                    if let ContentBlock::ToolUse { id, name, .. } = block {
                        story.calls.push((id.clone(), name.clone()));
                        tools.insert(id.clone(), name.clone());
                    }
                }
            }
            Event::ToolResult {
                call_id,
                status,
                source,
                content,
                ..
            } => {
                let how = match (status, source) {
                    (_, ResultSource::Interrupted) => "interrupted".to_owned(),
                    (ToolStatus::Ok, _) => "ok".to_owned(),
                    (ToolStatus::Error, _) => content["error"]["code"]
                        .as_str()
                        .unwrap_or("error")
                        .to_owned(),
                };
                story.results.push((call_id.clone(), how.clone()));
                let tool = tools.get(call_id).cloned().unwrap_or_default();
                ends.insert(call_id.clone(), (tool, how));
            }
            Event::TurnFinished { reply, .. } => {
                story.replies.push(reply.clone().unwrap_or_default());
            }
            _ => {}
        }
    }
    (story, ends)
}

/// Every call the model made has exactly one result, and every result
/// answers a call the model made.
pub(crate) fn answered_once(log: &[StoredEvent], story: &Story, broken: &mut Vec<String>) {
    let mut results: BTreeMap<&str, usize> = BTreeMap::new();
    for (call, _) in &story.results {
        *results.entry(call.as_str()).or_default() += 1;
    }
    for (call, _) in &story.calls {
        match results.remove(call.as_str()) {
            Some(1) => {}
            n => broken.push(format!("call {call} has {} results", n.unwrap_or(0))),
        }
    }
    for call in results.keys() {
        broken.push(format!(
            "a result answers {call}, which the model never called"
        ));
    }
    let called = log
        .iter()
        .filter(|e| matches!(e.event, Event::ToolCalled { .. }))
        .count();
    if called > story.calls.len() {
        broken.push(format!(
            "{called} calls recorded as run for {} made",
            story.calls.len()
        ));
    }
}

/// Every decision recorded is the person's own answer, made once — or,
/// when `server_stops` (`rein mcp serve`), a stop of a call whose server
/// was killed while it waited.
fn decided_by_the_person(log: &[StoredEvent], server_stops: bool, broken: &mut Vec<String>) {
    let mut asked = HashMap::new();
    let mut decided = HashMap::new();
    for e in log {
        match &e.event {
            Event::ApprovalRequested {
                approval_id, tool, ..
            } => {
                asked.insert(approval_id.clone(), tool.clone());
            }
            Event::ApprovalDecided {
                approval_id,
                decision,
                by,
                ..
            } => {
                let tool = asked.get(approval_id).cloned().unwrap_or_default();
                let wanted = match person(&tool) {
                    rein_approvals::Answer::Deny => Decision::Denied,
                    rein_approvals::Answer::Approve(_) => Decision::Approved,
                };
                let stopped = server_stops
                    && *decision == Decision::Stopped
                    && crate::mcp::is_server_gone(by);
                if *decision != wanted && !stopped {
                    broken.push(format!(
                        "{approval_id} ({tool}) {decision:?}, the person said {wanted:?}"
                    ));
                }
                if decided.insert(approval_id.clone(), *decision).is_some() {
                    broken.push(format!("{approval_id} decided twice"));
                }
            }
            _ => {}
        }
    }
}

/// No change ran twice; a refused one never ran; one whose result says it
/// ran, ran once.
fn ran_at_most_once(
    ran: &[(String, String)],
    ends: &HashMap<String, (String, String)>,
    log: &[StoredEvent],
    broken: &mut Vec<String>,
) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (call, _) in ran {
        *counts.entry(call.as_str()).or_default() += 1;
    }
    let called: std::collections::HashSet<&str> = log
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolCalled { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    for (call, tool) in ran {
        if !called.contains(call.as_str()) {
            broken.push(format!("{call} ({tool}) ran without being recorded first"));
        }
    }
    for (call, (tool, how)) in ends {
        let n = counts.get(call.as_str()).copied().unwrap_or(0);
        if CHANGES.contains(&tool.as_str()) {
            let right = match how.as_str() {
                "ok" => n == 1,
                "interrupted" => n <= 1,
                _ => n <= 1 && (called.contains(call.as_str()) || n == 0),
            };
            if !right {
                broken.push(format!("{call} ({tool}, {how}) ran {n} times"));
            }
        }
    }
    for (call, tool) in ran {
        if tool == "delete_file" {
            broken.push(format!("{call}: a delete the person refused ran"));
        }
    }
}

/// The files hold what the results say: a refused delete left its file,
/// and a change reported done is there.
fn files_as_results_say(
    dir: &Path,
    ends: &HashMap<String, (String, String)>,
    log: &[StoredEvent],
    broken: &mut Vec<String>,
) {
    let root = root_path(dir);
    if !root.join("old.txt").exists() {
        broken.push("old.txt is gone, though its delete was refused".into());
    }
    // Whether a write of `path` is reported done.
    let written_ok = |path: &str| {
        log.iter().any(|e| match &e.event {
            Event::ToolCalled {
                call_id,
                tool,
                arguments,
                ..
            } => {
                tool == "write_file"
                    && arguments["path"] == path
                    && ends.get(call_id).is_some_and(|(_, how)| how == "ok")
            }
            _ => false,
        })
    };
    let read = |name: &str| std::fs::read_to_string(root.join(name)).ok();
    // The script changes notes.txt, then creates log.txt.
    if written_ok("notes.txt") && read("notes.txt").as_deref() != Some("tidied\n") {
        broken.push(format!(
            "notes.txt holds {:?} after its change was done",
            read("notes.txt")
        ));
    }
    if written_ok("log.txt") && read("log.txt").as_deref() != Some("one\n") {
        broken.push(format!(
            "log.txt holds {:?} after it was written",
            read("log.txt")
        ));
    }
    stamped_once(read("stamp.txt"), ends, broken);
}

/// The sandboxed command's file: begun at most once, whatever the kills;
/// whole when its result says it ran.
fn stamped_once(
    stamp: Option<String>,
    ends: &HashMap<String, (String, String)>,
    broken: &mut Vec<String>,
) {
    let stamp = stamp.unwrap_or_default();
    if stamp.matches("began").count() > 1 {
        broken.push(format!(
            "the command ran more than once: stamp.txt {stamp:?}"
        ));
    }
    let ran_ok = ends
        .values()
        .any(|(tool, how)| tool == "run_command" && how == "ok");
    if ran_ok && stamp != STAMPED {
        broken.push(format!(
            "stamp.txt holds {stamp:?} though the command's result says it ran"
        ));
    }
}
