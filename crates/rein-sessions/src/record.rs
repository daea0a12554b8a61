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
    /// The request before this one was refused as longer than the window:
    /// this one is the single retry, made after compacting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<Refused>,
}

/// A request the provider refused as longer than its window, and what it
/// stated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refused {
    /// The provider's words.
    pub message: String,
    /// The window it stated, in its tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// What it counted the request at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested: Option<u64>,
    /// The window rein works in from now on: the stated one, or nine
    /// tenths of the refused prompt where none was stated.
    pub window: u64,
    /// How many of the provider's tokens rein takes one of its estimated
    /// tokens to be from now on (above 1 where the provider counted the
    /// prompt higher than rein's estimate).
    pub estimate_scale: f64,
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
