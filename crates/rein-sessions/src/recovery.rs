//! What a crashed process left unfinished, read from the log.
//!
//! After a process dies mid-turn, the log is consistent (appends are
//! atomic) but may end with work in flight: a tool call with no result, a
//! run or turn with no end, approvals still pending. [`dangling`] lists
//! them so the runner can resume by the recovery rules: an `interrupted`
//! result for each call, pending approvals kept.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::event::{Event, StoredEvent};

/// A tool call recorded as called with no result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DanglingCall {
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Its permission class (a read may be re-run; a write never silently).
    pub permission: Option<rein_wire::permission::PermissionClass>,
    /// The sequence number of its `tool.called`.
    pub seq: u64,
}

/// The unfinished work in a session's log.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Dangling {
    /// Calls with no result.
    pub tool_calls: Vec<DanglingCall>,
    /// Runs with no `run.finished`.
    pub runs: Vec<String>,
    /// Turns with no `turn.finished`.
    pub turns: Vec<String>,
    /// Approvals requested and not decided.
    pub approvals: Vec<String>,
}

impl Dangling {
    /// Whether nothing is unfinished.
    pub fn is_clean(&self) -> bool {
        self.tool_calls.is_empty()
            && self.runs.is_empty()
            && self.turns.is_empty()
            && self.approvals.is_empty()
    }
}

/// Scan a whole log for unfinished work.
pub fn dangling(events: &[StoredEvent]) -> Dangling {
    let mut open = Unfinished::default();
    for stored in events {
        open.feed(stored);
    }
    open.dangling()
}

fn free_when_empty<K, V>(map: &mut BTreeMap<K, V>) {
    if map.is_empty() {
        *map = BTreeMap::new();
    }
}

/// [`dangling`] kept as events come, one at a time: a conversation folds
/// each event it appends or reads once, and asks at any step what is
/// unfinished without reading the log again. Holds only what is open, so
/// it stays as small as the work in flight.
#[derive(Debug, Clone, Default)]
pub struct Unfinished {
    calls: BTreeMap<String, DanglingCall>,
    runs: BTreeMap<u64, String>,
    turns: BTreeMap<u64, String>,
    approvals: BTreeMap<u64, String>,
}

impl Unfinished {
    /// Fold the next event of the log.
    pub fn feed(&mut self, stored: &StoredEvent) {
        match &stored.event {
            Event::ToolCalled {
                call_id,
                tool,
                permission,
                ..
            } => {
                self.calls.insert(
                    call_id.clone(),
                    DanglingCall {
                        call_id: call_id.clone(),
                        tool: tool.clone(),
                        permission: *permission,
                        seq: stored.seq,
                    },
                );
            }
            Event::ToolResult { call_id, .. } => {
                self.calls.remove(call_id);
            }
            Event::RunStarted { run_id, .. } => {
                self.runs.insert(stored.seq, run_id.clone());
            }
            Event::RunFinished { run_id, .. } => self.runs.retain(|_, r| r != run_id),
            Event::TurnStarted { turn_id, .. } => {
                self.turns.insert(stored.seq, turn_id.clone());
            }
            Event::TurnFinished { turn_id, .. } => self.turns.retain(|_, t| t != turn_id),
            Event::ApprovalRequested { approval_id, .. } => {
                self.approvals.insert(stored.seq, approval_id.clone());
            }
            Event::ApprovalDecided { approval_id, .. } => {
                self.approvals.retain(|_, a| a != approval_id);
            }
            _ => return,
        }
        // An emptied map still holds its node: nothing open holds nothing.
        free_when_empty(&mut self.calls);
        free_when_empty(&mut self.runs);
        free_when_empty(&mut self.turns);
        free_when_empty(&mut self.approvals);
    }

    /// Whether a turn is open.
    pub fn turn_open(&self) -> bool {
        !self.turns.is_empty()
    }

    /// The open turns, in the order they started.
    pub fn turns(&self) -> impl Iterator<Item = &str> {
        self.turns.values().map(String::as_str)
    }

    /// What is unfinished, as [`dangling`] gives it.
    pub fn dangling(&self) -> Dangling {
        let mut tool_calls: Vec<DanglingCall> = self.calls.values().cloned().collect();
        tool_calls.sort_by_key(|c| c.seq);
        Dangling {
            tool_calls,
            runs: self.runs.values().cloned().collect(),
            turns: self.turns.values().cloned().collect(),
            approvals: self.approvals.values().cloned().collect(),
        }
    }
}

/// The session metadata key an import sets (`rein sessions import`): the
/// sequence number its imported history runs through.
pub const IMPORTED: &str = "imported";

/// How far a session's log is imported history (`0`: none of it). Imported
/// history is evidence, never authority: no decision, lease, root or
/// acceptance in it is acted on — a run it left open is accepted by a
/// person first, and its approvals are asked again.
pub fn imported_through(metadata: &serde_json::Value) -> u64 {
    metadata[IMPORTED]["through_seq"].as_u64().unwrap_or(0)
}

/// When the open turn began (the `at_ms` of the earliest `turn.started`
/// without a `turn.finished`), or `None` when no turn is open.
pub fn open_turn_started(events: &[StoredEvent]) -> Option<i64> {
    let open = dangling(events).turns;
    events.iter().find_map(|e| match &e.event {
        Event::TurnStarted { turn_id, .. } if open.contains(turn_id) => Some(e.at_ms),
        _ => None,
    })
}

/// The `approval.requested` event of `approval_id`, if the log has it.
pub fn approval_request<'a>(
    events: &'a [StoredEvent],
    approval_id: &str,
) -> Option<&'a StoredEvent> {
    events.iter().find(
        |e| matches!(&e.event, Event::ApprovalRequested { approval_id: a, .. } if a == approval_id),
    )
}

/// The operations of the log a person may still undo, newest first: each
/// tool result with `undo` set and an operation id that no
/// `operation.undone` names.
pub fn undoable(events: &[StoredEvent]) -> Vec<&str> {
    let undone: std::collections::HashSet<&str> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::OperationUndone { operation_id, .. } => Some(operation_id.as_str()),
            _ => None,
        })
        .collect();
    events
        .iter()
        .rev()
        .filter_map(|e| match &e.event {
            Event::ToolResult {
                operation_id: Some(op),
                undo: true,
                ..
            } if !undone.contains(op.as_str()) => Some(op.as_str()),
            _ => None,
        })
        .collect()
}

/// The last operation of the log a person may still undo (see
/// [`undoable`]). Undoing goes newest first, so each `/undo` takes the
/// next one.
pub fn last_undoable(events: &[StoredEvent]) -> Option<&str> {
    undoable(events).first().copied()
}

/// The arguments of the call an approval asks about (`null` when the log
/// does not have the request).
pub fn approval_arguments(events: &[StoredEvent], approval_id: &str) -> serde_json::Value {
    match approval_request(events, approval_id).map(|e| &e.event) {
        Some(Event::ApprovalRequested { arguments, .. }) => arguments.clone(),
        _ => serde_json::Value::Null,
    }
}
