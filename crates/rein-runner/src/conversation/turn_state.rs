//! What lasts only while a turn runs ([`TurnState`]): made new when a turn
//! starts or resumes, so nothing in it outlives the turn it was granted in.
//!
//! Not here: what lasts across turns (the `Conversation`, its `Journal`).

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use rein_approvals::Leases;

/// What lasts only while a turn runs: made new when a turn starts or
/// resumes, so nothing in it outlives the turn it was granted in.
#[derive(Debug, Default)]
pub(super) struct TurnState {
    /// Leases a person granted in this run ("always" for a tool).
    pub(super) leases: Leases,
    /// Sub-agents started in this turn.
    pub(super) delegated: u32,
    /// What the turn's step loop has used (its own steps and calls, and
    /// what its sub-agents spent), since it last started or resumed.
    pub(super) spent: crate::delegation::Spent,
    /// When the step loop last started or resumed.
    pub(super) started: Option<Instant>,
    /// Revision guards moved by this message's own writes: (scope, before) -> after.
    pub(super) carried: HashMap<(String, String), String>,
    /// What this message's own writes left (a file at its new revision):
    /// seen, for the read-before-write rule (`revisions`).
    pub(super) left: HashSet<rein_wire::Revision>,
}
