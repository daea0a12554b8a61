//! The local trace: what a session did and what it cost, read from its log.
//!
//! - [`report`]: totals per session and per run — model calls, input,
//!   output, cache-read and cache-write tokens, cost in micro-USD, cache
//!   verdict counts and the cache read share, tool calls by outcome,
//!   durations, and each compaction with why it ran.
//! - [`golden`]: a session as a golden trace — canonical JSONL with the
//!   volatile values (ids, times, durations) replaced by stable tokens — and
//!   back into a store.
//! - [`fork`]: a new session from a session's history up to a turn.
//!
//! It only reads logs (and, for an import or a fork, appends a new one); it never changes
//! what a session recorded.

mod agents;
mod fork;
pub mod golden;
mod report;

pub use agents::AgentReport;
pub use fork::{Forked, fork};
pub use report::{CompactionLine, RunReport, ToolCounts, Totals, TraceReport, report, usd};

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
