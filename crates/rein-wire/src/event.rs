//! Normalised stream events: what every provider's stream is turned into.

use serde::{Deserialize, Serialize};

use crate::usage::Usage;

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It hit the output limit.
    MaxTokens,
    /// It produced a stop sequence.
    StopSequence,
    /// The provider refused or filtered the content.
    Refusal,
    /// The provider paused a long turn (Anthropic `pause_turn`).
    PauseTurn,
    /// A reason rein does not know, kept verbatim.
    Other(String),
}

impl StopReason {
    /// Map a provider's stop-reason string to the common set.
    pub fn from_provider(raw: &str) -> Self {
        match raw {
            "end_turn" | "stop" | "completed" => StopReason::EndTurn,
            "tool_use" | "tool_calls" | "function_call" => StopReason::ToolUse,
            "max_tokens" | "length" | "max_output_tokens" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "refusal" | "content_filter" => StopReason::Refusal,
            "pause_turn" => StopReason::PauseTurn,
            other => StopReason::Other(other.to_owned()),
        }
    }

    /// Its name (`end_turn`, `tool_use`, …; `other` for one rein does not
    /// know, whose provider text is not repeated).
    pub fn as_str(&self) -> &'static str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::Refusal => "refusal",
            StopReason::PauseTurn => "pause_turn",
            StopReason::Other(_) => "other",
        }
    }
}

/// One normalised event of a streamed model call.
///
/// Tool calls are identified by `index`, the position of the call within
/// this message (0, 1, 2, ... in order of their start), whatever the
/// provider's own indexing is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The message began.
    MessageStart {
        /// The provider's message id, when it gives one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The model that answers.
        model: String,
    },
    /// A piece of answer text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// The provider's final text for a part of the answer that streamed
    /// differently: the end of the current text that reads `streamed`
    /// becomes `text` (the final text is authoritative). Providers whose
    /// final text merely continues the deltas get a [`StreamEvent::TextDelta`]
    /// of the rest instead.
    TextReplaced {
        /// What had streamed for this part.
        streamed: String,
        /// What the provider says the part is.
        text: String,
    },
    /// A piece of visible reasoning.
    ThinkingDelta {
        /// The text.
        text: String,
    },
    /// The signature closing a reasoning block (send it back unchanged).
    ThinkingSignature {
        /// The opaque signature.
        signature: String,
        /// The reasoning item's id, where the API names items (OpenAI
        /// Responses); a signature with an id closes one whole item.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// A withheld reasoning block's opaque payload.
    RedactedThinking {
        /// The opaque payload.
        data: String,
    },
    /// A tool call began.
    ToolCallStart {
        /// Position of the call within this message.
        index: u32,
        /// The provider's call id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallDelta {
        /// Position of the call within this message.
        index: u32,
        /// The fragment, to be concatenated in order.
        fragment: String,
    },
    /// A tool call's arguments are complete.
    ToolCallEnd {
        /// Position of the call within this message.
        index: u32,
    },
    /// Token usage so far: a cumulative snapshot; the last one wins.
    Usage {
        /// The usage.
        usage: Usage,
    },
    /// The model stopped.
    Stop {
        /// Why.
        reason: StopReason,
    },
    /// The provider reported an error inside the stream.
    Error {
        /// rein's stable error code for it.
        code: crate::ErrorCode,
        /// The provider's message.
        message: String,
        /// Whether trying again may succeed.
        retryable: bool,
    },
}

impl StreamEvent {
    /// Whether this event carries model output (text, reasoning, tool calls),
    /// as opposed to metadata (start, usage, stop, error).
    pub fn is_output(&self) -> bool {
        matches!(
            self,
            StreamEvent::TextDelta { .. }
                | StreamEvent::TextReplaced { .. }
                | StreamEvent::ThinkingDelta { .. }
                | StreamEvent::ThinkingSignature { .. }
                | StreamEvent::RedactedThinking { .. }
                | StreamEvent::ToolCallStart { .. }
                | StreamEvent::ToolCallDelta { .. }
                | StreamEvent::ToolCallEnd { .. }
        )
    }
}
