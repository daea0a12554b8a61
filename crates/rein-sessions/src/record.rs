//! Records carried inside events: a model call's context pressure (how
//! full the window was, how that was counted, what it set off and why).
//!
//! Not here: the events themselves (`event.rs`).

use serde::{Deserialize, Serialize};

/// How full the context window was for a model call, and what was done
/// about it: the record of why a request was pruned or compacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pressure {
    /// How the request was counted.
    pub method: rein_wire::CountMethod,
    /// The window, in tokens.
    pub window: u64,
    /// The request's share of the window as first built.
    pub before: f64,
    /// Its share as sent (after pruning or compaction, when either ran).
    pub sent: f64,
    /// What was done, when the request was over a line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acted: Vec<Acted>,
}

/// One thing a request's pressure set off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Acted {
    /// What was done.
    pub action: rein_wire::PressureAction,
    /// The line crossed (the share that set it off).
    pub line: f64,
    /// The share it aimed at.
    pub target: f64,
    /// Why, in words: the share against the line.
    pub reason: String,
}
