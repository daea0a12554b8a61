//! The provider-neutral request envelope.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::Message;

/// One block of the system prompt. Kept as separate blocks so the cache
/// planner can put a breakpoint after any of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemBlock {
    /// The block's text.
    pub text: String,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name (what the model calls).
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON schema of its arguments.
    pub input_schema: Value,
    /// Ask the provider to enforce the schema strictly where it can.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
}

/// Sampling settings; `None` leaves the provider's default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    /// Temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
}

impl Sampling {
    /// `t` when every API takes it as a temperature (0 to 2), else
    /// `invalid_input` saying why: one rule for a definition and a flag.
    pub fn checked_temperature(t: f64) -> Result<f64, crate::AgentError> {
        if (0.0..=2.0).contains(&t) {
            Ok(t)
        } else {
            Err(crate::AgentError::new(
                crate::error::codes::INVALID_INPUT,
                format!("{t} is not between 0 and 2"),
            ))
        }
    }
}

/// How much a model reasons before it answers — one provider-neutral
/// setting, mapped per API by the gateway (Anthropic `thinking` with a
/// token budget, OpenAI `reasoning_effort` / `reasoning.effort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reasoning {
    /// Ask for none: nothing is sent, the model's default applies.
    Off,
    /// A little.
    Low,
    /// Some.
    Medium,
    /// Much.
    High,
    /// About this many tokens of reasoning.
    Budget(u32),
}

/// The smallest thinking budget Anthropic takes.
pub const MIN_THINKING_BUDGET: u32 = 1024;

impl Reasoning {
    /// The token budget it stands for (`None` for `Off`); at least
    /// [`MIN_THINKING_BUDGET`].
    pub fn budget_tokens(self) -> Option<u32> {
        match self {
            Reasoning::Off => None,
            Reasoning::Low => Some(2_048),
            Reasoning::Medium => Some(8_192),
            Reasoning::High => Some(24_576),
            Reasoning::Budget(tokens) => Some(tokens.max(MIN_THINKING_BUDGET)),
        }
    }

    /// The effort word OpenAI's APIs take (`None` for `Off`); a budget maps
    /// to the level whose budget it does not exceed.
    pub fn effort(self) -> Option<&'static str> {
        match self {
            Reasoning::Off => None,
            Reasoning::Low => Some("low"),
            Reasoning::Medium => Some("medium"),
            Reasoning::High => Some("high"),
            Reasoning::Budget(tokens) if tokens <= 2_048 => Some("low"),
            Reasoning::Budget(tokens) if tokens <= 8_192 => Some("medium"),
            Reasoning::Budget(_) => Some("high"),
        }
    }
}

impl std::str::FromStr for Reasoning {
    type Err = crate::AgentError;

    /// `off`, `low`, `medium`, `high`, or a number of tokens.
    fn from_str(word: &str) -> Result<Self, Self::Err> {
        match word.trim().to_ascii_lowercase().as_str() {
            "off" | "none" => Ok(Reasoning::Off),
            "low" => Ok(Reasoning::Low),
            "medium" => Ok(Reasoning::Medium),
            "high" => Ok(Reasoning::High),
            other => other.parse::<u32>().map(Reasoning::Budget).map_err(|_| {
                crate::AgentError::new(
                    crate::error::codes::INVALID_INPUT,
                    format!(
                        "reasoning is off, low, medium, high or a number of tokens, not `{word}`"
                    ),
                )
            }),
        }
    }
}

impl std::fmt::Display for Reasoning {
    /// The word [`FromStr`](std::str::FromStr) reads back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reasoning::Off => f.write_str("off"),
            Reasoning::Low => f.write_str("low"),
            Reasoning::Medium => f.write_str("medium"),
            Reasoning::High => f.write_str("high"),
            Reasoning::Budget(tokens) => write!(f, "{tokens}"),
        }
    }
}

/// A JSON schema the answer must follow (structured output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    /// A short name for the schema (OpenAI requires one).
    pub name: String,
    /// The schema itself.
    pub schema: Value,
}

/// Where a cache breakpoint goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "at", rename_all = "snake_case")]
pub enum CacheTarget {
    /// After the last tool definition.
    Tools,
    /// After the system block with this index.
    System {
        /// Index into [`Request::system`].
        index: usize,
    },
    /// After the last content block of the message with this index.
    Message {
        /// Index into [`Request::messages`].
        index: usize,
    },
}

/// A prompt-cache breakpoint. Providers with explicit caching (Anthropic)
/// get a `cache_control` marker there; others ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CacheBreakpoint {
    /// Where it goes.
    pub target: CacheTarget,
}

/// Request metadata: ids for tracing and cache routing. Never sent as prompt text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// The session this call belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The task (orchestrator) this call serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// A cache routing key (OpenAI `prompt_cache_key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
    /// Anything else, sorted for stable bytes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, String>,
}

/// Whether the model may call the tools a request offers. The tools stay
/// in the request either way: they are part of the cached prefix, and
/// Anthropic takes no history with tool calls in it without them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// It decides.
    Auto,
    /// It answers in words; no call.
    None,
    /// It calls at least one tool.
    Required,
}

/// One model call, provider-neutral.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The model name as the provider knows it.
    pub model: String,
    /// System prompt blocks, in order.
    #[serde(default)]
    pub system: Vec<SystemBlock>,
    /// Tools the model may call.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// The conversation so far, each message shared: a runner keeps the
    /// transcript and hands each request the same messages without copying
    /// them, and the gateway reuses a message's encoded bytes for as long
    /// as it is the same one. Change a message with `Arc::make_mut`, which
    /// copies it while another holder (an earlier request, the gateway's
    /// kept bytes) remains — so a holder never sees it change.
    pub messages: Vec<std::sync::Arc<Message>>,
    /// The output limit in tokens.
    pub max_output_tokens: u32,
    /// Sampling settings.
    #[serde(default)]
    pub sampling: Sampling,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_sequences: Vec<String>,
    /// Whether the model may call the tools offered (`None`: the API's
    /// default, which is that it may). Sent only with tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// A schema the answer must follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<OutputSchema>,
    /// How much the model should reason (`None`: the model's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// Prompt-cache breakpoints (at most four are honoured by Anthropic).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache_breakpoints: Vec<CacheBreakpoint>,
    /// Ids for tracing and cache routing.
    #[serde(default)]
    pub metadata: Metadata,
}

impl Request {
    /// A request with one user message and defaults elsewhere.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Request {
            model: model.into(),
            system: Vec::new(),
            tools: Vec::new(),
            messages: messages.into_iter().map(std::sync::Arc::new).collect(),
            max_output_tokens: 4096,
            sampling: Sampling::default(),
            stop_sequences: Vec::new(),
            tool_choice: None,
            output_schema: None,
            reasoning: None,
            cache_breakpoints: Vec::new(),
            metadata: Metadata::default(),
        }
    }

    /// Whether a breakpoint targets this place.
    pub fn has_breakpoint(&self, target: CacheTarget) -> bool {
        self.cache_breakpoints.iter().any(|b| b.target == target)
    }
}
