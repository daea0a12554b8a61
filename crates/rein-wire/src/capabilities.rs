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
