//! A session's inbox: what a person's surface asks of a session without
//! holding its lease — a decision on a pending approval, words for the
//! running turn, a stop.
//!
//! Whoever drives the session (holds the lease) takes the inbox at its wait
//! points and step boundaries and records each item in the log as the
//! events it always used (`approval.decided`, `steer.said`, …), marking the
//! items taken in the same transaction: an item is recorded once, even
//! across a crash. One approval can be decided once: a second decision for
//! it in the inbox is refused with `conflict`.
//!
//! Not here: who may post (only a person's surface; `rein-approvals`) or
//! what the driver does with each item (`rein-runner`).

use serde::{Deserialize, Serialize};

/// One thing a person asked of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InboxItem {
    /// A decision on a pending approval.
    Decision {
        /// The approval.
        approval_id: String,
        /// `approved` or `denied`.
        decision: rein_wire::permission::Decision,
        /// The lease granted with an approval (`once`, `tool`, `run`).
        lease: Option<rein_wire::permission::LeaseScope>,
        /// Who decided (the surface's name).
        by: String,
    },
    /// Words for the running turn (a steer).
    Say {
        /// What they said.
        text: String,
        /// Who said it.
        by: String,
    },
    /// Stop the open turn.
    Stop {
        /// Who asked.
        by: String,
    },
}

impl InboxItem {
    /// The approval a decision is about.
    pub fn approval_id(&self) -> Option<&str> {
        match self {
            InboxItem::Decision { approval_id, .. } => Some(approval_id),
            _ => None,
        }
    }
}

/// An item as the inbox holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxEntry {
    /// Its number in the inbox (increasing).
    pub id: u64,
    /// When it was posted (ms since the epoch).
    pub at_ms: i64,
    /// What was asked.
    pub item: InboxItem,
}

impl InboxEntry {
    /// Whether this entry stops the turn that opened at `opened_ms` (the
    /// `at_ms` of its `turn.started`; `None`: no turn is open). The one
    /// rule for a stop: it stops the turn open when it was posted, never a
    /// turn that began after it — a stop posted with no turn open is
    /// passed over, not kept for the next one.
    pub fn stops_turn_opened_at(&self, opened_ms: Option<i64>) -> bool {
        matches!(self.item, InboxItem::Stop { .. }) && opened_ms.is_some_and(|t| self.at_ms >= t)
    }
}

/// A decision taken from the inbox: which approval, what, who decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenDecision {
    /// The approval.
    pub approval_id: String,
    /// What was decided.
    pub decision: rein_wire::permission::Decision,
    /// Who decided (the surface's name).
    pub by: String,
}

/// A session's inbox taken by the one rule every driver of a session uses
/// (a conversation's runner, a hosted run): what to record and what to
/// act on.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Folded {
    /// What to record, in the order posted: `approval.decided` for each
    /// decision taken, `steer.said` for words.
    pub events: Vec<crate::Event>,
    /// The decisions taken.
    pub decided: Vec<TakenDecision>,
    /// Words said, oldest first.
    pub said: Vec<String>,
    /// A stop of the open turn, and who asked.
    pub stop: Option<String>,
}

/// Fold `entries` by the rule: a decision is taken for an approval still
/// pending in `control`, once (a second one, or one for an approval
/// decided meanwhile, is passed over); a stop of the turn opened at
/// `opened_ms` ([`InboxEntry::stops_turn_opened_at`]) wins over every
/// decision queued after it (those are not taken); a stop posted before
/// the turn began, or a second one, is passed over; words are kept.
pub fn fold(
    entries: Vec<InboxEntry>,
    control: &crate::ControlRecord,
    opened_ms: Option<i64>,
) -> Folded {
    let mut folded = Folded::default();
    for entry in entries {
        let stops = entry.stops_turn_opened_at(opened_ms);
        match entry.item {
            InboxItem::Decision { .. } if folded.stop.is_some() => {}
            InboxItem::Decision {
                approval_id,
                decision,
                lease,
                by,
            } => {
                let pending = control.pending.iter().any(|p| p.approval_id == approval_id);
                let twice = folded.decided.iter().any(|d| d.approval_id == approval_id);
                if pending && !twice {
                    folded.events.push(crate::Event::ApprovalDecided {
                        approval_id: approval_id.clone(),
                        decision,
                        by: by.clone(),
                        lease,
                    });
                    folded.decided.push(TakenDecision {
                        approval_id,
                        decision,
                        by,
                    });
                }
            }
            InboxItem::Say { text, .. } => {
                folded
                    .events
                    .push(crate::Event::SteerSaid { text: text.clone() });
                folded.said.push(text);
            }
            InboxItem::Stop { by } if stops && folded.stop.is_none() => folded.stop = Some(by),
            InboxItem::Stop { .. } => {}
        }
    }
    folded
}

#[cfg(test)]
mod tests {
    use rein_wire::permission::{Decision, PermissionClass};

    use super::*;
    use crate::ControlRecord;
    use crate::store::PendingApproval;

    fn entry(id: u64, at_ms: i64, item: InboxItem) -> InboxEntry {
        InboxEntry { id, at_ms, item }
    }

    fn decision(approval: &str, decision: Decision, by: &str) -> InboxItem {
        InboxItem::Decision {
            approval_id: approval.into(),
            decision,
            lease: None,
            by: by.into(),
        }
    }

    fn taken(approval: &str, decision: Decision, by: &str) -> TakenDecision {
        TakenDecision {
            approval_id: approval.into(),
            decision,
            by: by.into(),
        }
    }

    fn pending(ids: &[&str]) -> ControlRecord {
        ControlRecord {
            pending: ids
                .iter()
                .map(|id| PendingApproval {
                    approval_id: (*id).into(),
                    call_id: String::new(),
                    tool: "write_file".into(),
                    permission: PermissionClass::Destructive,
                    requested_seq: 1,
                })
                .collect(),
            ..ControlRecord::default()
        }
    }

    #[test]
    fn a_stop_wins_over_every_decision_queued_after_it_and_only_pending_ones_are_taken_once() {
        let entries = vec![
            // Posted before the turn opened at 100: passed over.
            entry(1, 50, InboxItem::Stop { by: "early".into() }),
            entry(2, 110, decision("a", Decision::Approved, "alice")),
            // A second decision of the same approval, and one never asked.
            entry(3, 111, decision("a", Decision::Denied, "bob")),
            entry(4, 112, decision("ghost", Decision::Approved, "mallory")),
            entry(
                5,
                113,
                InboxItem::Say {
                    text: "hurry".into(),
                    by: "alice".into(),
                },
            ),
            entry(6, 120, InboxItem::Stop { by: "carol".into() }),
            // After the stop: not taken, however pending.
            entry(7, 121, decision("b", Decision::Approved, "alice")),
            entry(8, 122, InboxItem::Stop { by: "dave".into() }),
        ];
        let folded = fold(entries, &pending(&["a", "b"]), Some(100));
        assert_eq!(
            folded.decided,
            vec![taken("a", Decision::Approved, "alice")]
        );
        assert_eq!(folded.said, vec!["hurry".to_owned()]);
        assert_eq!(folded.stop.as_deref(), Some("carol"));
        assert_eq!(folded.events.len(), 2, "{:?}", folded.events);
        assert!(matches!(
            &folded.events[0],
            crate::Event::ApprovalDecided { approval_id, .. } if approval_id == "a"
        ));
    }

    #[test]
    fn with_no_turn_open_a_stop_is_passed_over_and_decisions_are_still_taken() {
        let entries = vec![
            entry(1, 10, InboxItem::Stop { by: "carol".into() }),
            entry(2, 11, decision("a", Decision::Denied, "alice")),
        ];
        let folded = fold(entries, &pending(&["a"]), None);
        assert_eq!(folded.stop, None);
        assert_eq!(folded.decided, vec![taken("a", Decision::Denied, "alice")]);
    }
}
