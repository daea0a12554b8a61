//! How a turn ends for its caller. What surfaces see while it runs (the
//! live events, the question a person is asked) is `rein_wire`'s vocabulary.

use rein_wire::{AgentError, ApprovalRequest, Ending};
use serde::Serialize;

/// The most characters of a call's arguments an [`ApprovalRequest`] shows.
pub const MAX_SHOWN_ARGUMENTS: usize = 8_000;

/// How a turn ended (or paused).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum TurnOutcome {
    /// The model answered.
    Finished {
        /// The answer text.
        reply: String,
    },
    /// A budget ran out.
    Budget {
        /// Which: `steps`, `tokens`, `cost`, `wall_time`.
        which: String,
    },
    /// The model repeated itself without progress.
    LoopDetected,
    /// A person interrupted.
    Interrupted,
    /// A call waits for a person: what they are asked to decide. The turn
    /// goes on after the decision ([`crate::Conversation::decide_and_resume`]).
    AwaitingApproval(ApprovalRequest),
    /// The turn failed.
    Error {
        /// Why.
        error: AgentError,
    },
}

impl TurnOutcome {
    /// How the log records it (`turn.finished`, `run.finished`).
    pub fn name(&self) -> Ending {
        match self {
            TurnOutcome::Finished { .. } => Ending::Finished,
            TurnOutcome::Budget { .. } => Ending::Budget,
            TurnOutcome::LoopDetected => Ending::LoopDetected,
            TurnOutcome::Interrupted => Ending::Interrupted,
            TurnOutcome::AwaitingApproval(_) => Ending::AwaitingApproval,
            TurnOutcome::Error { .. } => Ending::Error,
        }
    }
}
