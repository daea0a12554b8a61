//! Graphs of agent work: tasks with briefs, dependencies and named outputs,
//! checked before anything runs ([`GraphSpec::check`]) and run in parallel
//! under a limit ([`Scheduler`]) with retries, time limits, cancellation
//! and a failure policy; the [`Blackboard`] the tasks share; and
//! [`PlanHost`], through which a product turns its own plan packet into a
//! graph and the run into its own result packet ([`run_plan`]; a worked
//! example is `tests/plans.rs`).
//!
//! It is *not* an agent: what a task is — a conversation, a sub-process, a
//! function — is a [`TaskRunner`]'s business, so this crate knows no model,
//! tool or store, and a product can schedule anything with it.

mod blackboard;
mod graph;
mod plans;
mod schedule;

pub use blackboard::{Blackboard, Entry, MAX_KEY, MAX_KEYS, MAX_VALUE, Write};
pub use graph::{FailurePolicy, Graph, GraphSettings, GraphSpec, MAX_BACKOFF, MAX_TASKS, TaskSpec};
pub use plans::{PlanHost, PlanRun, run_plan};
pub use schedule::{
    Attempt, DEFAULT_GRACE, GraphOutcome, Outputs, Progress, Report, Scheduler, TaskRunner,
    TaskState,
};

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
