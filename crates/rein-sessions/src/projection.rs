//! Projections kept in step with the log: the head turn, the turn tree and
//! the control record. Pure functions, shared by every store so that each
//! keeps the same rules; the store applies them inside its append
//! transaction.

use crate::event::{Event, StoredEvent};
use crate::store::{ControlRecord, PendingApproval, TurnInfo};

/// A change to the turn tree caused by one event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TurnChange {
    /// A turn began.
    Started(TurnInfo),
    /// A turn ended.
    Finished {
        /// The turn.
        id: String,
        /// The `turn.finished` sequence number.
        seq: u64,
        /// How it ended.
        outcome: rein_wire::Ending,
    },
}

/// Apply one stored event to the head turn and the control record; return
/// the change to the turn tree, if any.
pub(crate) fn apply(
    stored: &StoredEvent,
    head_turn: &mut Option<String>,
    control: &mut ControlRecord,
) -> Option<TurnChange> {
    match &stored.event {
        Event::TurnStarted { turn_id, .. } => {
            *head_turn = Some(turn_id.clone());
            control.stopped = false;
            started_turn(stored).map(TurnChange::Started)
        }
        Event::TurnFinished {
            turn_id, outcome, ..
        } => Some(TurnChange::Finished {
            id: turn_id.clone(),
            seq: stored.seq,
            outcome: *outcome,
        }),
        Event::BranchCreated { from_turn } => {
            head_turn.clone_from(from_turn);
            None
        }
        Event::ApprovalRequested {
            approval_id,
            call_id,
            tool,
            permission,
            ..
        } => {
            control.pending.push(PendingApproval {
                approval_id: approval_id.clone(),
                call_id: call_id.clone(),
                tool: tool.clone(),
                permission: *permission,
                requested_seq: stored.seq,
            });
            control.paused = true;
            control.paused_by = Some("approval".into());
            None
        }
        Event::ApprovalDecided { approval_id, .. } => {
            control.pending.retain(|p| &p.approval_id != approval_id);
            if control.pending.is_empty() && control.paused_by.as_deref() == Some("approval") {
                control.paused = false;
                control.paused_by = None;
            }
            None
        }
        Event::Paused { by } => {
            control.paused = true;
            control.paused_by = Some(by.clone());
            None
        }
        Event::Resumed { .. } => {
            if control.pending.is_empty() {
                control.paused = false;
                control.paused_by = None;
            } else {
                control.paused_by = Some("approval".into());
            }
            None
        }
        Event::Stopped { .. } => {
            control.stopped = true;
            None
        }
        _ => None,
    }
}

/// The turn a `turn.started` event opens (as the turn tree records it).
pub fn started_turn(stored: &StoredEvent) -> Option<TurnInfo> {
    match &stored.event {
        Event::TurnStarted {
            turn_id,
            parent,
            prompt,
        } => Some(TurnInfo {
            id: turn_id.clone(),
            parent: parent.clone(),
            prompt: prompt.clone(),
            started_seq: stored.seq,
            finished_seq: None,
            outcome: None,
        }),
        _ => None,
    }
}

/// The path of turns from the root to `head`, root first.
pub fn history(turns: &[TurnInfo], head: &str) -> Vec<TurnInfo> {
    let by_id: std::collections::HashMap<&str, &TurnInfo> =
        turns.iter().map(|t| (t.id.as_str(), t)).collect();
    let mut path = Vec::new();
    let mut at = Some(head);
    // A turn's parent always started before it, so the walk ends; the
    // bound guards against a corrupted store.
    while let Some(id) = at {
        let Some(turn) = by_id.get(id) else { break };
        path.push((*turn).clone());
        if path.len() > turns.len() {
            break;
        }
        at = turn.parent.as_deref();
    }
    path.reverse();
    path
}

/// What an append makes of its events: each numbered after the head, and
/// what they change in the turn tree and the control record. Every store
/// numbers through here, so the rules are written once.
#[derive(Debug)]
pub(crate) struct Numbered {
    /// The events with their numbers.
    pub(crate) stored: Vec<StoredEvent>,
    /// The turn tree's changes, in order.
    pub(crate) changes: Vec<TurnChange>,
    /// The head turn after them.
    pub(crate) head_turn: Option<String>,
    /// The control record after them.
    pub(crate) control: ControlRecord,
}

/// Number `events` after `head_seq` (all at `at_ms`) and project them
/// from the session's `head_turn` and `control`.
pub(crate) fn number(
    session_id: &str,
    head_seq: u64,
    mut head_turn: Option<String>,
    mut control: ControlRecord,
    events: Vec<crate::event::NewEvent>,
    at_ms: i64,
) -> Numbered {
    let mut stored = Vec::with_capacity(events.len());
    let mut changes = Vec::new();
    for (i, new) in events.into_iter().enumerate() {
        let event = StoredEvent {
            session_id: session_id.to_owned(),
            seq: head_seq + 1 + i as u64,
            at_ms,
            agent_path: new.agent_path,
            event: new.event,
        };
        changes.extend(apply(&event, &mut head_turn, &mut control));
        stored.push(event);
    }
    Numbered {
        stored,
        changes,
        head_turn,
        control,
    }
}

/// The turns `events` refer to (a new turn, its parent, a branch's
/// origin): a store looks up which session owns each before checking.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn turn_refs(events: &[crate::event::NewEvent]) -> Vec<&str> {
    let mut refs = Vec::new();
    for new in events {
        match &new.event {
            Event::TurnStarted {
                turn_id, parent, ..
            } => {
                refs.push(turn_id.as_str());
                refs.extend(parent.as_deref());
            }
            Event::BranchCreated { from_turn } => refs.extend(from_turn.as_deref()),
            _ => {}
        }
    }
    refs
}

/// What a whole log projects to, as its appends made it: the head turn,
/// the turn tree and the control record (a session copied whole from
/// another store).
pub(crate) fn replay(events: &[StoredEvent]) -> (Option<String>, Vec<TurnInfo>, ControlRecord) {
    let mut head_turn = None;
    let mut control = ControlRecord::default();
    let mut turns: Vec<TurnInfo> = Vec::new();
    for event in events {
        if let Some(change) = apply(event, &mut head_turn, &mut control) {
            change.apply_to(&mut turns);
        }
    }
    (head_turn, turns, control)
}

impl TurnChange {
    /// Make this change to a session's turns, held in memory.
    pub(crate) fn apply_to(self, turns: &mut Vec<TurnInfo>) {
        match self {
            TurnChange::Started(turn) => turns.push(turn),
            TurnChange::Finished { id, seq, outcome } => {
                if let Some(turn) = turns.iter_mut().find(|t| t.id == id) {
                    turn.finished_seq = Some(seq);
                    turn.outcome = Some(outcome);
                }
            }
        }
    }
}
