//! The conversational agent: a turn, step by step.
//!
//! A [`Conversation`] owns one session (it holds the session's lease) and
//! runs turns: it builds each request from the profile and the log, streams
//! the model, runs the tool calls (reads of one message in parallel, writes
//! in order), asks a person where the permission class says so — suspending
//! durably — and records everything in the log before it matters. Surfaces
//! watch a stream of [`UiEvent`]s and steer with a [`Steering`] handle.
//!
//! It is *not* a surface: it never reads a terminal or serves HTTP, and it
//! cannot approve anything itself.

mod agent;
mod artifacts;
mod board_tools;
mod check_place;
mod children;
mod conversation;
mod delegation;
mod graph_record;
mod guards;
mod helpers;
pub mod hooks;
mod narrowed;
mod outcome;
mod settings;
mod standing;
mod steering;
mod subagent;
mod tasks;
mod telemetry;
mod watching;

pub use agent::{Agent, Delegation, ExternalAgent, ExternalAnswer, ExternalTask, Helper};
pub use board_tools::{BLACKBOARD_READ, BLACKBOARD_WRITE};
pub use check_place::{CheckCommand, CheckPlace, CheckRan};
pub use children::{ChildContext, ChildFactory, ChildOf};
pub use conversation::{
    ApprovalRequest, Budgets, Conversation, Heard, INBOX_POLL, KeptLog, Log, MAX_PROMPT_BYTES,
    MAX_SHOWN_ARGUMENTS, Profile, ToolLoading, TurnContract, TurnResult, Verification, Wording,
};
pub use graph_record::{GraphRecord, Resumed};
pub use guards::Guards;
pub use outcome::TurnOutcome;
pub use rein_context::{ContextPolicy, estimate, project, tail_groups};
pub use rein_wire::{AgentPath, UiEvent, UiKind};
pub use standing::{MAX_STANDING_BYTES, RETRACTED, Stacked, Standing};
pub use steering::Steering;
pub use tasks::{ConversationTasks, TaskApproval, TaskUsage};
pub use watching::hand_on;

/// A session's trace report with its sub-agents rolled up: each one's
/// session reported under its agent path, and all of them added up.
pub async fn report_with_agents(
    store: &dyn rein_sessions::Store,
    session: &str,
) -> Result<rein_trace::TraceReport, rein_wire::AgentError> {
    Ok(report_of_family(
        session,
        &rein_approvals::family_read(store, session).await?,
    ))
}

/// [`report_with_agents`] of a family already read
/// (`rein_approvals::family_read`).
pub fn report_of_family(
    session: &str,
    family: &[rein_approvals::Member],
) -> rein_trace::TraceReport {
    let mut reports = family
        .iter()
        .map(|m| rein_trace::report(&m.session, &m.events));
    let Some(own) = reports.next() else {
        return rein_trace::report(session, &[]);
    };
    let agents = family
        .iter()
        .skip(1)
        .map(|m| m.agent_path.clone())
        .zip(reports)
        .collect();
    own.with_agents(agents)
}

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
