//! The live events a surface sees while a turn runs — the runner sends
//! them, the server streams them as SSE, the terminal and the page show
//! them — and the agent each one comes from.
//!
//! They are live only: the session's log (`rein-sessions`' events) is the
//! record, and a surface that reconnects reads the log, not these.
//!
//! Not here: how a turn ends for the caller (the runner's `TurnOutcome`),
//! or how a surface draws them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Ending, ErrorCode, Usage};

/// Which agent of a conversation: `main` for the conversation itself,
/// `main/agent-2` for a sub-agent it started, and so on down.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AgentPath(String);

impl AgentPath {
    /// The conversation's own agent's path.
    pub const MAIN: &'static str = "main";

    /// The conversation's own agent.
    pub fn main() -> Self {
        AgentPath(Self::MAIN.to_owned())
    }

    /// Whether this is the conversation's own agent, not a sub-agent.
    pub fn is_main(&self) -> bool {
        self.0 == Self::MAIN
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for AgentPath {
    fn from(path: String) -> Self {
        AgentPath(path)
    }
}

impl From<&str> for AgentPath {
    fn from(path: &str) -> Self {
        AgentPath(path.to_owned())
    }
}

impl std::fmt::Display for AgentPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for AgentPath {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for AgentPath {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// Where a tool result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultSource {
    /// The tool ran.
    Live,
    /// The tool-result cache answered.
    Cache,
    /// The tool ran and its result was stored as an artifact.
    Offload,
    /// The process died before the tool finished; recorded on resume.
    Interrupted,
}

impl ResultSource {
    /// The recorded word (`live`, `cache`, `offload`, `interrupted`).
    pub fn as_str(self) -> &'static str {
        match self {
            ResultSource::Live => "live",
            ResultSource::Cache => "cache",
            ResultSource::Offload => "offload",
            ResultSource::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for ResultSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pending approval as a person's surface shows it: what they are asked
/// to decide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The approval (what a decision names).
    pub approval_id: String,
    /// The call it is about.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Its arguments (bounded: past the runner's `MAX_SHOWN_ARGUMENTS`
    /// characters of JSON, a string with their start).
    pub arguments: Value,
    /// Its permission class.
    pub permission: crate::permission::PermissionClass,
    /// What the tool does, in the product's words.
    pub purpose: Option<String>,
    /// What the change looks like (a diff, the start of a new file), when
    /// the tool makes one; recorded with the request.
    pub preview: Option<crate::Preview>,
    /// Which agent asked.
    pub agent_path: AgentPath,
}

/// What a surface sees while a turn runs. Every event names the agent it
/// comes from (`main` for the conversation itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UiEvent {
    /// Which agent.
    pub agent: AgentPath,
    /// What happened.
    #[serde(flatten)]
    pub kind: UiKind,
}

/// The kinds of [`UiEvent`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
        source: ResultSource,
        /// The operation id a person can undo, for reversible writes.
        undo: Option<String>,
        /// Why it failed: the code and the message the model is told.
        error: Option<(ErrorCode, String)>,
        /// How long it ran (0 for a call refused before it ran).
        duration_ms: u64,
        /// The exit status its result reports (`exit_code`: a command's),
        /// so that a surface says a command that ran and failed failed —
        /// its call succeeded (`ok`), its command did not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
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
        permission: crate::permission::PermissionClass,
        /// What the person is shown beside the arguments.
        preview: Option<crate::Preview>,
    },
    /// A sub-agent waits for a person: decide `request` in `session` (the
    /// sub-agent's own) with `rein_approvals::decide`, from any surface.
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
        decision: crate::permission::Decision,
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
        code: crate::ErrorCode,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_reads_back_as_it_was_sent_its_agent_and_code_plain_text() {
        let event = UiEvent {
            agent: AgentPath::from("main/agent-2"),
            kind: UiKind::ToolResult {
                call_id: "c1".into(),
                ok: false,
                source: ResultSource::Live,
                undo: None,
                error: Some((ErrorCode::new("not_found"), "no such file".into())),
                duration_ms: 3,
                exit_code: None,
            },
        };
        let sent = serde_json::to_value(&event).unwrap();
        assert_eq!(sent["agent"], "main/agent-2");
        assert_eq!(sent["type"], "tool_result");
        assert_eq!(
            sent["error"],
            serde_json::json!(["not_found", "no such file"])
        );
        let read: UiEvent = serde_json::from_value(sent).unwrap();
        assert_eq!(read, event);
        assert!(!read.agent.is_main());
        assert!(AgentPath::main().is_main());
    }
}
