//! [`Log`]: the log as far as the conversation has read it, with what a
//! step asks of it kept as each event is added — the current path of
//! turns, what is unfinished, when the open turn began, what each approval
//! asked and was told, the revision last seen of each resource, what the
//! hooks did before each call, the compactions so far. A step asks these without walking the log: a turn
//! of a thousand steps costs its last step what it cost its first.
//!
//! The pure folds (`folds`, `revisions`, `rein_sessions::recovery`) stay
//! the rule, written once: debug builds check every answer here against
//! them over the whole log.
//!
//! Not here: reading or writing the store (`journal`), what the answers
//! mean (the gate, the window).

use std::collections::HashMap;
use std::ops::Deref;

use rein_approvals::{Decision, LeaseScope};
use rein_sessions::recovery::{Dangling, Unfinished};
use rein_sessions::{Event, StoredEvent};
use rein_wire::{HookDid, HookPoint, Revision};
use serde_json::Value;

use super::folds::{self, ApprovalState};

/// A conversation's log as far as it has read it, with the folds its steps
/// ask kept over it. Derefs to the events (in order, numbered from 1), so
/// anything that reads a log reads it as a slice.
#[derive(Debug, Clone, Default)]
pub struct Log {
    events: Vec<StoredEvent>,
    kept: Kept,
}

/// The folds, each updated by [`Kept::feed`] from one event.
#[derive(Debug, Clone, Default)]
struct Kept {
    /// Each turn's parent (as its last start said) and its first start
    /// (sequence number, time).
    turns: HashMap<String, Turn>,
    /// The turn ids from the root to the last started turn.
    path: Vec<String>,
    unfinished: Unfinished,
    compactions: usize,
    /// Each call's last approval request: (approval id, sequence number).
    asked: HashMap<String, (String, u64)>,
    approvals: HashMap<String, Approval>,
    /// Each resource's last revision seen: (sequence number, token).
    seen: HashMap<String, (u64, Option<String>)>,
    /// Since the last turn started: the approvals asked (tool, arguments),
    /// the ones denied, the sub-agents started.
    turn: OpenTurn,
    /// What the `before_call` hooks did about each call they ran for.
    hooked: HashMap<String, Vec<(String, HookDid, Value)>>,
}

#[derive(Debug, Clone)]
struct Turn {
    parent: Option<String>,
    first_seq: u64,
    first_at_ms: i64,
}

#[derive(Debug, Clone, Default)]
struct Approval {
    /// When it was first asked.
    first_at_ms: Option<i64>,
    /// The revision its last request that named one was bound to.
    bound_to: Option<Revision>,
    /// Every decision, in order: (sequence number, decision, lease).
    decided: Vec<(u64, Decision, Option<LeaseScope>)>,
}

#[derive(Debug, Clone, Default)]
struct OpenTurn {
    asked: HashMap<String, (String, Value)>,
    denied: Vec<String>,
    agents: u32,
}

impl Deref for Log {
    type Target = [StoredEvent];

    fn deref(&self) -> &[StoredEvent] {
        &self.events
    }
}

impl Log {
    /// Add the next event (its sequence number follows the last).
    pub(super) fn push(&mut self, stored: StoredEvent) {
        self.kept.feed(&stored);
        self.events.push(stored);
    }

    /// Keep only the first `len` events; the folds are made again.
    pub(super) fn truncate(&mut self, len: usize) {
        if len < self.events.len() {
            self.events.truncate(len);
            self.kept = Kept::default();
            for stored in &self.events {
                self.kept.feed(stored);
            }
        }
    }

    /// The events, owned.
    pub(super) fn to_events(&self) -> Vec<StoredEvent> {
        self.events.clone()
    }

    /// The turn ids from the root to the open (or last) turn.
    pub(super) fn path(&self) -> &[String] {
        debug_assert_eq!(
            self.kept.path,
            folds::current_path(self),
            "the kept path drifted"
        );
        &self.kept.path
    }

    /// What is unfinished (`rein_sessions::recovery::dangling`).
    pub(super) fn dangling(&self) -> Dangling {
        let open = self.kept.unfinished.dangling();
        debug_assert_eq!(open, rein_sessions::recovery::dangling(self));
        open
    }

    /// Whether a turn is open.
    pub(super) fn turn_open(&self) -> bool {
        self.kept.unfinished.turn_open()
    }

    /// When the open turn began
    /// (`rein_sessions::recovery::open_turn_started`).
    pub(super) fn open_turn_started(&self) -> Option<i64> {
        let kept = &self.kept;
        let started = kept
            .unfinished
            .turns()
            .filter_map(|id| kept.turns.get(id))
            .min_by_key(|t| t.first_seq)
            .map(|t| t.first_at_ms);
        debug_assert_eq!(
            started,
            rein_sessions::recovery::open_turn_started(self),
            "the open turn's start drifted"
        );
        started
    }

    /// How many compactions the log records.
    pub(super) fn compactions(&self) -> usize {
        self.kept.compactions
    }

    /// Sub-agents started since the last turn began.
    pub(super) fn agents_in_open_turn(&self) -> u32 {
        debug_assert_eq!(self.kept.turn.agents, folds::agents_in_open_turn(self));
        self.kept.turn.agents
    }

    /// What a person said about `call_id`, imported history (through
    /// `evidence_through`) counting as never asked (`folds::approval_state`).
    pub(super) fn approval_state(&self, call_id: &str, evidence_through: u64) -> ApprovalState {
        let kept = &self.kept;
        let state = match kept.asked.get(call_id) {
            Some((approval_id, seq)) if *seq > evidence_through => {
                let decided = kept
                    .approvals
                    .get(approval_id)
                    .and_then(|a| a.decided.iter().find(|d| d.0 > evidence_through));
                let approval_id = approval_id.clone();
                match decided {
                    Some((_, Decision::Approved, lease)) => ApprovalState::Approved {
                        scope: lease.unwrap_or(LeaseScope::Once),
                        approval_id,
                    },
                    Some((_, decision, _)) => ApprovalState::Refused {
                        decision: *decision,
                    },
                    None => ApprovalState::Pending { approval_id },
                }
            }
            _ => ApprovalState::None,
        };
        debug_assert_eq!(
            state,
            folds::approval_state(self, call_id, evidence_through),
            "the kept approval state drifted"
        );
        state
    }

    /// Whether a person refused a call of `tool` with exactly `args`
    /// earlier in the open turn (`folds::refused_in_turn`).
    pub(super) fn refused_in_turn(&self, tool: &str, args: &Value) -> bool {
        let turn = &self.kept.turn;
        let refused = turn.denied.iter().any(|id| {
            turn.asked
                .get(id)
                .is_some_and(|(t, a)| t == tool && a == args)
        });
        debug_assert_eq!(refused, folds::refused_in_turn(self, tool, args));
        refused
    }

    /// What the approval `approval_id` was bound to when it was asked.
    pub(super) fn bound_to(&self, approval_id: &str) -> Option<&Revision> {
        let bound = self
            .kept
            .approvals
            .get(approval_id)
            .and_then(|a| a.bound_to.as_ref());
        debug_assert_eq!(bound, super::revisions::bound_to(self, approval_id));
        bound
    }

    /// When the approval `approval_id` was first asked.
    pub(super) fn asked_at(&self, approval_id: &str) -> Option<i64> {
        let at = self
            .kept
            .approvals
            .get(approval_id)
            .and_then(|a| a.first_at_ms);
        debug_assert_eq!(
            at,
            rein_sessions::recovery::approval_request(self, approval_id).map(|e| e.at_ms)
        );
        at
    }

    /// What the `before_call` hooks did about `call_id`, in order
    /// (`folds::before_call_ran`).
    pub(super) fn hooks_before(&self, call_id: &str) -> &[(String, HookDid, Value)] {
        let ran = self.kept.hooked.get(call_id).map_or(&[][..], Vec::as_slice);
        debug_assert_eq!(ran, folds::before_call_ran(self, call_id));
        ran
    }

    /// The revision of `resource` the conversation last read or left, live
    /// history only (`revisions::last_seen`): `Some(None)` when it saw it
    /// absent.
    pub(super) fn last_seen(
        &self,
        resource: &str,
        evidence_through: u64,
    ) -> Option<&Option<String>> {
        let seen = match self.kept.seen.get(resource) {
            Some((seq, token)) if *seq > evidence_through => Some(token),
            _ => None,
        };
        debug_assert_eq!(
            seen,
            super::revisions::last_seen(self, evidence_through, resource)
        );
        seen
    }
}

impl Kept {
    fn feed(&mut self, stored: &StoredEvent) {
        self.unfinished.feed(stored);
        match &stored.event {
            Event::TurnStarted {
                turn_id, parent, ..
            } => self.started(stored, turn_id, parent.as_deref()),
            Event::CompactionCreated { .. } => self.compactions += 1,
            Event::AgentStarted { .. } => self.turn.agents = self.turn.agents.saturating_add(1),
            Event::ApprovalRequested {
                approval_id,
                call_id,
                tool,
                arguments,
                bound_to,
                ..
            } => {
                self.asked
                    .insert(call_id.clone(), (approval_id.clone(), stored.seq));
                let approval = self.approvals.entry(approval_id.clone()).or_default();
                approval.first_at_ms.get_or_insert(stored.at_ms);
                if bound_to.is_some() {
                    approval.bound_to.clone_from(bound_to);
                }
                self.turn
                    .asked
                    .insert(approval_id.clone(), (tool.clone(), arguments.clone()));
            }
            Event::ApprovalDecided {
                approval_id,
                decision,
                lease,
                ..
            } => {
                let approval = self.approvals.entry(approval_id.clone()).or_default();
                approval.decided.push((stored.seq, *decision, *lease));
                if *decision == Decision::Denied {
                    self.turn.denied.push(approval_id.clone());
                }
            }
            Event::HookRan {
                hook,
                point: HookPoint::BeforeCall,
                call_id: Some(call_id),
                effect,
                detail,
            } => {
                self.hooked.entry(call_id.clone()).or_default().push((
                    hook.clone(),
                    *effect,
                    detail.clone(),
                ));
            }
            Event::ToolResult {
                seen: Some(seen), ..
            } => {
                self.seen
                    .insert(seen.resource.clone(), (stored.seq, seen.token.clone()));
            }
            _ => {}
        }
    }

    /// A turn started: the path is walked again from it (as
    /// `folds::current_path` does: bounded by the number of turns).
    fn started(&mut self, stored: &StoredEvent, turn_id: &str, parent: Option<&str>) {
        self.turn = OpenTurn::default();
        let parent = parent.map(str::to_owned);
        match self.turns.get_mut(turn_id) {
            Some(turn) => turn.parent = parent,
            None => {
                self.turns.insert(
                    turn_id.to_owned(),
                    Turn {
                        parent,
                        first_seq: stored.seq,
                        first_at_ms: stored.at_ms,
                    },
                );
            }
        }
        self.path.clear();
        let mut at = Some(turn_id);
        while let Some(id) = at
            && let Some(turn) = self.turns.get(id)
            && self.path.len() <= self.turns.len()
        {
            self.path.push(id.to_owned());
            at = turn.parent.as_deref();
        }
        self.path.reverse();
    }
}

#[cfg(test)]
mod tests {
    use rein_approvals::{Decision, LeaseScope, PermissionClass};
    use rein_sessions::{Event, ResultSource, StoredEvent, ToolStatus};
    use rein_wire::Revision;
    use serde_json::json;

    use super::Log;
    use crate::conversation::folds::ApprovalState;

    fn at(log: &Log, event: Event) -> StoredEvent {
        let seq = log.len() as u64 + 1;
        StoredEvent {
            session_id: "s".into(),
            seq,
            at_ms: 1_000 + seq as i64,
            agent_path: "main".into(),
            event,
        }
    }

    fn push(log: &mut Log, events: Vec<Event>) {
        for event in events {
            let stored = at(log, event);
            log.push(stored);
        }
    }

    fn started(id: &str, parent: Option<&str>) -> Event {
        Event::TurnStarted {
            turn_id: id.into(),
            parent: parent.map(Into::into),
            prompt: "p".into(),
        }
    }

    fn asked(approval: &str, call: &str, args: serde_json::Value, bound: Option<&str>) -> Event {
        Event::ApprovalRequested {
            approval_id: approval.into(),
            call_id: call.into(),
            tool: "write_file".into(),
            arguments: args,
            permission: PermissionClass::SourceFileWrite,
            preview: None,
            bound_to: bound.map(|token| Revision {
                resource: "a.txt".into(),
                token: Some(token.into()),
            }),
        }
    }

    fn decided(approval: &str, decision: Decision, lease: Option<LeaseScope>) -> Event {
        Event::ApprovalDecided {
            approval_id: approval.into(),
            decision,
            by: "person".into(),
            lease,
        }
    }

    fn seen(call: &str, resource: &str, token: Option<&str>) -> Event {
        Event::ToolResult {
            call_id: call.into(),
            status: ToolStatus::Ok,
            source: ResultSource::Live,
            content: json!({}),
            artifact: None,
            operation_id: None,
            undo: false,
            duration_ms: 0,
            seen: Some(Revision {
                resource: resource.into(),
                token: token.map(Into::into),
            }),
        }
    }

    /// Every kept answer, each checked (in debug builds, as tests run)
    /// against the rule over the whole log.
    fn ask_all(log: &Log, evidence: u64) {
        let _ = log.path();
        let _ = log.dangling();
        let _ = log.open_turn_started();
        let _ = log.agents_in_open_turn();
        for call in ["c1", "c2", "c3"] {
            let _ = log.approval_state(call, evidence);
        }
        for approval in ["a1", "a2", "a3"] {
            let _ = log.bound_to(approval);
            let _ = log.asked_at(approval);
        }
        for resource in ["a.txt", "b.txt"] {
            let _ = log.last_seen(resource, evidence);
        }
        let _ = log.refused_in_turn("write_file", &json!({"v": 1}));
        let _ = log.hooks_before("c1");
    }

    #[test]
    fn kept_folds_answer_as_the_whole_log_does_through_branches_repeats_and_a_cut() {
        let mut log = Log::default();
        push(
            &mut log,
            vec![
                started("t1", None),
                asked("a1", "c1", json!({"v": 1}), Some("r1")),
                decided("a1", Decision::Denied, None),
                seen("x", "a.txt", Some("r1")),
                Event::TurnFinished {
                    turn_id: "t1".into(),
                    outcome: rein_wire::Ending::Finished,
                    reply: None,
                },
                // A branch back to the root, then a turn started twice.
                started("t2", None),
                started("t2", Some("t1")),
                asked("a2", "c1", json!({"v": 1}), None),
                asked("a2", "c1", json!({"v": 1}), Some("r2")),
                decided("a2", Decision::Approved, Some(LeaseScope::Tool)),
                decided("a2", Decision::Denied, None),
                seen("y", "a.txt", None),
                Event::HookRan {
                    hook: "guard".into(),
                    point: rein_wire::HookPoint::BeforeCall,
                    call_id: Some("c1".into()),
                    effect: rein_wire::HookDid::Continue,
                    detail: json!(null),
                },
                Event::AgentStarted {
                    agent_path: "main/agent-1".into(),
                    task: "t".into(),
                    call_id: None,
                    session: None,
                },
            ],
        );
        for evidence in [0, 3, 7, 9, 20] {
            ask_all(&log, evidence);
        }
        assert_eq!(log.path(), ["t1".to_owned(), "t2".to_owned()]);
        assert!(matches!(
            log.approval_state("c1", 0),
            ApprovalState::Approved {
                scope: LeaseScope::Tool,
                ..
            }
        ));
        assert_eq!(log.approval_state("c1", 9), ApprovalState::None);
        assert_eq!(log.last_seen("a.txt", 0), Some(&None));
        assert_eq!(log.agents_in_open_turn(), 1);
        // Its later "no" counts for the turn, though the first word was yes.
        assert!(log.refused_in_turn("write_file", &json!({"v": 1})));
        assert!(!log.refused_in_turn("write_file", &json!({"v": 2})));

        // Cut back into the first turn (staged events taken out) and go
        // on otherwise: the folds are of the log as it now is.
        log.truncate(3);
        ask_all(&log, 0);
        assert!(log.refused_in_turn("write_file", &json!({"v": 1})));
        assert!(log.turn_open());
        push(
            &mut log,
            vec![
                asked("a3", "c2", json!({"v": 2}), Some("r3")),
                seen("z", "b.txt", Some("r9")),
            ],
        );
        ask_all(&log, 0);
        assert_eq!(log.open_turn_started(), Some(1_001));
        assert_eq!(log.last_seen("a.txt", 0), None);
        assert_eq!(log.last_seen("b.txt", 0), Some(&Some("r9".to_owned())));

        // A new turn: what was refused or started in the last is not its.
        push(&mut log, vec![started("t3", Some("t1"))]);
        ask_all(&log, 0);
        assert!(!log.refused_in_turn("write_file", &json!({"v": 1})));
        assert_eq!(log.path(), ["t1".to_owned(), "t3".to_owned()]);
    }
}
