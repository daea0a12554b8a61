//! What a provider can do: the facts the request builder and the cache
//! planner need about it, without depending on the provider itself.

use serde::Serialize;

/// How a provider caches prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CachingStyle {
    /// Breakpoints marked in the request (Anthropic `cache_control`).
    Explicit,
    /// The provider caches a stable prefix by itself (OpenAI); a cache key
    /// may route requests to the same cache.
    Automatic,
    /// No prompt caching.
    None,
}

/// What a provider can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    /// How it caches prompts.
    pub caching: CachingStyle,
    /// The most breakpoints one request may carry (0 when not explicit).
    pub max_cache_breakpoints: usize,
    /// The model's context window in tokens.
    pub context_window: u32,
    /// Whether it enforces a JSON schema on the answer natively.
    pub structured_output: bool,
    /// Whether it can count a request's tokens before sending it.
    pub token_counting: bool,
}

/// Whether a model reasons before it answers, as far as rein knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelReasoning {
    /// It reasons (thinking blocks, reasoning items or `reasoning_content`),
    /// and takes a reasoning setting.
    Reasons,
    /// It does not reason; its API refuses a reasoning setting, so none is
    /// sent.
    DoesNot,
    /// A model rein has no word on: the setting is sent as asked.
    Unknown,
}

/// Model-name prefixes and whether those models reason, the more specific
/// first (the first prefix that matches decides). A name is matched in
/// lower case, after a router's `vendor/` prefix (OpenRouter's
/// `anthropic/claude-…`).
const MODEL_REASONING: &[(&str, ModelReasoning)] = &[
    // Anthropic: extended thinking from Claude 3.7 Sonnet on.
    ("claude-3-7-sonnet", ModelReasoning::Reasons),
    ("claude-3", ModelReasoning::DoesNot),
    ("claude-sonnet-4", ModelReasoning::Reasons),
    ("claude-opus-4", ModelReasoning::Reasons),
    ("claude-haiku-4", ModelReasoning::Reasons),
    // OpenAI: the o-series and GPT-5 reason; GPT-5's chat alias and the
    // GPT-4 family do not.
    ("gpt-5-chat", ModelReasoning::DoesNot),
    ("gpt-5", ModelReasoning::Reasons),
    ("gpt-oss", ModelReasoning::Reasons),
    ("codex-mini", ModelReasoning::Reasons),
    ("o1", ModelReasoning::Reasons),
    ("o3", ModelReasoning::Reasons),
    ("o4-mini", ModelReasoning::Reasons),
    ("gpt-4", ModelReasoning::DoesNot),
    ("gpt-3.5", ModelReasoning::DoesNot),
    // Open models.
    ("deepseek-reasoner", ModelReasoning::Reasons),
    ("deepseek-r1", ModelReasoning::Reasons),
    ("deepseek-chat", ModelReasoning::DoesNot),
    ("qwq", ModelReasoning::Reasons),
    ("qwen3-coder", ModelReasoning::DoesNot),
    ("qwen3", ModelReasoning::Reasons),
    ("qwen2", ModelReasoning::DoesNot),
    ("grok-3-mini", ModelReasoning::Reasons),
    ("grok-4", ModelReasoning::Reasons),
    ("gemini-2.5", ModelReasoning::Reasons),
    ("magistral", ModelReasoning::Reasons),
    ("llama", ModelReasoning::DoesNot),
];

/// Whether `model` reasons, from its name.
pub fn model_reasoning(model: &str) -> ModelReasoning {
    let name = model.to_ascii_lowercase();
    let name = name.rsplit('/').next().unwrap_or(&name);
    MODEL_REASONING
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map_or(ModelReasoning::Unknown, |(_, reasoning)| *reasoning)
}

#[cfg(test)]
mod tests {
    use super::{ModelReasoning, model_reasoning};

    #[test]
    fn models_that_reason_are_named_and_the_rest_are_not_guessed() {
        for model in [
            "claude-sonnet-4-5-20250929",
            "claude-3-7-sonnet-latest",
            "anthropic/claude-opus-4.1",
            "gpt-5-mini",
            "o3",
            "o4-mini-2025-04-16",
            "deepseek-reasoner",
            "Qwen3-8B",
            "grok-3-mini",
        ] {
            assert_eq!(model_reasoning(model), ModelReasoning::Reasons, "{model}");
        }
        for model in [
            "claude-3-5-sonnet-20241022",
            "gpt-4o-mini",
            "gpt-4.1",
            "gpt-5-chat-latest",
            "qwen2.5-coder-1.5b",
            "qwen3-coder-30b",
            "deepseek-chat",
        ] {
            assert_eq!(model_reasoning(model), ModelReasoning::DoesNot, "{model}");
        }
        for model in ["my-finetune", "m", "omni-model"] {
            assert_eq!(model_reasoning(model), ModelReasoning::Unknown, "{model}");
        }
    }
}
