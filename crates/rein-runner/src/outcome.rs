//! How a turn ends, and what surfaces see while it runs.

use rein_wire::{AgentError, Ending, Usage};
use serde::Serialize;
use serde_json::Value;

/// A pending approval as a person's surface shows it: what they are asked
/// to decide.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRequest {
    /// The approval (what a decision names).
    pub approval_id: String,
    /// The call it is about.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Its arguments (bounded: past [`MAX_SHOWN_ARGUMENTS`] characters of
    /// JSON, a string with their start).
    pub arguments: Value,
    /// Its permission class.
    pub permission: rein_wire::permission::PermissionClass,
    /// What the tool does, in the product's words.
    pub purpose: Option<String>,
    /// What the change looks like (a diff, the start of a new file), when
    /// the tool makes one; recorded with the request.
    pub preview: Option<rein_wire::Preview>,
    /// Which agent asked (`main`, `main/agent-2`, …).
    pub agent_path: String,
}

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

/// What a surface sees while a turn runs. Every event names the agent it
/// comes from (`main` for the conversation itself).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UiEvent {
    /// The agent's path.
    pub agent: String,
    /// What happened.
    #[serde(flatten)]
    pub kind: UiKind,
}

/// The kinds of [`UiEvent`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UiKind {
    /// A piece of answer text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A piece of the model's reasoning (its summary, where the API gives
    /// only that): for a surface to show apart from the answer, if at all.
    ReasoningDelta {
        /// The text.
        text: String,
    },
    /// The provider's final text for a part of the answer differs from
    /// what streamed; the log keeps this text.
    TextReplaced {
        /// What had streamed for the part.
        streamed: String,
        /// What the provider says the part is.
        text: String,
    },
    /// A tool call is about to run.
    ToolCall {
        /// The call.
        call_id: String,
        /// The tool.
        tool: String,
        /// Its arguments.
        arguments: Value,
    },
    /// A tool call's result.
    ToolResult {
        /// The call.
        call_id: String,
        /// Whether it succeeded.
        ok: bool,
        /// Where the result came from.
        source: rein_sessions::ResultSource,
        /// The operation id a person can undo, for reversible writes.
        undo: Option<String>,
        /// Why it failed: the code and the message the model is told.
        error: Option<(String, String)>,
        /// How long it ran (0 for a call refused before it ran).
        duration_ms: u64,
    },
    /// A running call reported how far it got (live only; not in the log).
    ToolProgress {
        /// The call.
        call_id: String,
        /// How far (the tool's own unit).
        done: f64,
        /// Out of how much, when known.
        total: Option<f64>,
        /// The tool's message, when it gave one (someone else's text).
        message: Option<String>,
    },
    /// A tool call the model nearly got right was repaired before it ran
    /// (a tool name's case, arguments that were almost JSON).
    CallRepaired {
        /// The call.
        call_id: String,
        /// What was repaired, with what the model sent.
        what: String,
    },
    /// The tools on offer changed at this turn's start (a server joined,
    /// failed, or changed its list); one line per change, for the person.
    CatalogChanged {
        /// What changed.
        changes: Vec<String>,
    },
    /// A call waits for a person.
    ApprovalRequested {
        /// The approval.
        approval_id: String,
        /// The tool.
        tool: String,
        /// Its arguments.
        arguments: Value,
        /// Its permission class.
        permission: rein_wire::permission::PermissionClass,
        /// What the person is shown beside the arguments.
        preview: Option<rein_wire::Preview>,
    },
    /// A sub-agent waits for a person: decide `request` in `session` (the
    /// sub-agent's own) with [`rein_approvals::decide`], from any surface.
    /// Sent each time the sub-agent pauses, after a restart too.
    AgentAwaiting {
        /// The sub-agent's session.
        session: String,
        /// What the person is asked.
        request: ApprovalRequest,
    },
    /// A person decided.
    ApprovalDecided {
        /// The approval.
        approval_id: String,
        /// What they decided.
        decision: rein_wire::permission::Decision,
    },
    /// Tokens and cost of a model call.
    Usage {
        /// The usage.
        usage: Usage,
        /// Its cost, when known.
        cost_micro_usd: Option<u64>,
    },
    /// The conversation paused (waiting for a person).
    Paused,
    /// Something failed.
    Error {
        /// The code.
        code: rein_wire::ErrorCode,
        /// The message.
        message: String,
    },
    /// The turn ended.
    TurnFinished {
        /// How.
        outcome: Ending,
        /// The turn's id (to branch from).
        turn_id: String,
        /// The run's id.
        run_id: String,
    },
}
