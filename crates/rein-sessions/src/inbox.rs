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
