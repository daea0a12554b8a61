//! How full each request of a case was, and what the cache read after each
//! compaction: the figures a long session is judged by (the request's
//! share of the window as sent, never over the hard line; the prompt
//! cache coming back after a compaction changed the history's start).
//!
//! Not here: the thresholds (`rein_runner::ContextPolicy`), the checks
//! (`check.rs`).

use rein_sessions::{Event, StoredEvent};
use rein_wire::PressureAction;
use serde::{Deserialize, Serialize};

/// Calls after a compaction whose cache reads are counted.
pub const AFTER: usize = 5;

/// A case's requests under pressure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Pressures {
    /// Requests with a recorded pressure.
    pub requests: u64,
    /// The largest share of the window a request was sent at.
    pub largest_sent: f64,
    /// Each compaction a request set off, in order.
    pub compactions: Vec<AfterCompaction>,
}

/// One compaction: the request's share before and as sent, and the share
/// of prompt tokens read from the cache over the calls after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AfterCompaction {
    /// The request (from 1) that set it off.
    pub request: u64,
    /// Its share of the window as first built.
    pub before: f64,
    /// Its share as sent.
    pub sent: f64,
    /// Cache reads over prompt tokens, its call and the next four.
    pub cache_read_share: f64,
    /// How many calls that share is over: fewer than [`AFTER`] when the
    /// session ended sooner (a compaction in its last request shows only
    /// the call that rebuilt the prefix).
    #[serde(default)]
    pub calls: usize,
}

impl Pressures {
    /// Read `events` (one session's, oldest first); `None` when no
    /// request recorded a pressure.
    pub fn of(events: &[StoredEvent]) -> Option<Pressures> {
        let mut out = Pressures::default();
        // Per call: (read, prompt) tokens, in order.
        let mut usage: Vec<(u64, u64)> = Vec::new();
        let mut marks: Vec<(usize, AfterCompaction)> = Vec::new();
        for stored in events {
            match &stored.event {
                Event::ModelRequested {
                    pressure: Some(p), ..
                } => {
                    out.requests += 1;
                    out.largest_sent = out.largest_sent.max(p.sent);
                    let compacted = p
                        .acted
                        .iter()
                        .any(|a| a.action == PressureAction::Compacted);
                    if compacted {
                        let at = AfterCompaction {
                            request: out.requests,
                            before: p.before,
                            sent: p.sent,
                            cache_read_share: 0.0,
                            calls: 0,
                        };
                        marks.push((usage.len(), at));
                    }
                }
                Event::ModelCompleted { usage: Some(u), .. } => {
                    usage.push((u.cache_read, u.prompt_total()))
                }
                _ => {}
            }
        }
        if out.requests == 0 {
            return None;
        }
        for (from, mut at) in marks {
            let window: Vec<&(u64, u64)> = usage.iter().skip(from).take(AFTER).collect();
            at.calls = window.len();
            let (read, prompt) = window.iter().fold((0, 0), |(r, p), (a, b)| (r + a, p + b));
            at.cache_read_share = read as f64 / prompt.max(1) as f64;
            out.compactions.push(at);
        }
        Some(out)
    }
}
