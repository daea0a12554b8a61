//! Provider configuration: which wire API, where, with which key, and the
//! bounds (timeouts, retries, line size) of a call.
//!
//! The API key is an [`ApiKey`], whose `Debug` prints `ApiKey(<redacted>)`
//! and which has no `Display`: it cannot reach a log line by accident.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use rein_wire::{AgentError, error::codes};

use crate::sse::SseLimits;

/// The three wire APIs rein speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireApi {
    /// Anthropic Messages (`POST /v1/messages`).
    AnthropicMessages,
    /// OpenAI Chat Completions (`POST /chat/completions`) and compatible servers.
    OpenAiChat,
    /// OpenAI Responses (`POST /responses`).
    OpenAiResponses,
}

impl WireApi {
    /// The name used on the command line and in config.
    pub fn as_str(self) -> &'static str {
        match self {
            WireApi::AnthropicMessages => "anthropic",
            WireApi::OpenAiChat => "openai-chat",
            WireApi::OpenAiResponses => "openai-responses",
        }
    }

    /// The environment variable holding the default key.
    pub fn key_variable(self) -> &'static str {
        match self {
            WireApi::AnthropicMessages => "ANTHROPIC_API_KEY",
            WireApi::OpenAiChat | WireApi::OpenAiResponses => "OPENAI_API_KEY",
        }
    }

    /// The default base URL.
    pub fn default_base_url(self) -> &'static str {
        match self {
            WireApi::AnthropicMessages => "https://api.anthropic.com",
            WireApi::OpenAiChat | WireApi::OpenAiResponses => "https://api.openai.com/v1",
        }
    }
}

impl fmt::Display for WireApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WireApi {
    type Err = AgentError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "anthropic" | "anthropic-messages" => Ok(WireApi::AnthropicMessages),
            "openai-chat" | "openai" | "openai-compatible" => Ok(WireApi::OpenAiChat),
            "openai-responses" | "responses" => Ok(WireApi::OpenAiResponses),
            other => Err(AgentError::new(
                codes::INVALID_INPUT,
                format!(
                    "unknown wire API `{other}`; expected anthropic, openai-chat or openai-responses"
                ),
            )),
        }
    }
}

/// A secret API key. `Debug` redacts it; there is no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wrap a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key's text, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Replace every occurrence of the key in `text`.
    pub fn scrub(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_owned();
        }
        text.replace(&self.0, "<redacted>")
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Time limits of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the connection (TCP + TLS).
    pub connect: Duration,
    /// From sending the request to the response headers.
    pub first_byte: Duration,
    /// Between two chunks of the body.
    pub idle: Duration,
    /// The whole call, retries included.
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(120),
            idle: Duration::from_secs(90),
            total: Duration::from_secs(15 * 60),
        }
    }
}

/// When and how often a failed call is tried again.
///
/// Retried: connect errors and timeouts, 408, 429, 5xx and overloaded
/// errors — only while nothing has reached the caller. A `Retry-After`
/// longer than `max_retry_after` is not waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: usize,
    /// The first backoff delay.
    pub min_delay: Duration,
    /// The largest backoff delay.
    pub max_delay: Duration,
    /// The longest `Retry-After` rein waits for.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            min_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }
}

/// Whether `REIN_OFFLINE` asks for model calls to be refused
/// (`1`, `true` or `yes`).
pub fn offline_switch_on() -> bool {
    std::env::var("REIN_OFFLINE")
        .map(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
        .unwrap_or(false)
}

/// Everything a provider needs to make calls.
#[derive(Clone)]
pub struct ProviderConfig {
    /// Which wire API.
    pub api: WireApi,
    /// The base URL (`https://api.openai.com/v1`, `http://127.0.0.1:8080/v1`, …).
    pub base_url: String,
    /// The key; `None` for servers that need none (a local model).
    pub api_key: Option<ApiKey>,
    /// Extra headers sent on every call (OpenRouter's `HTTP-Referer`, …).
    /// Values are treated as secrets in `Debug`.
    pub extra_headers: Vec<(String, String)>,
    /// The header carrying the key: `None` for the API's usual one
    /// (`x-api-key` for Anthropic, `Authorization: Bearer` for OpenAI);
    /// `Some("api-key")` for Azure.
    pub key_header: Option<String>,
    /// Time limits.
    pub timeouts: Timeouts,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// SSE framing bounds.
    pub sse: SseLimits,
    /// Force the offline switch on or off; `None` reads `REIN_OFFLINE` at each call.
    pub offline: Option<bool>,
    /// The model's context window in tokens.
    pub context_window: u32,
    /// Ask the server its window before the first turn (`window`): an
    /// OpenAI-compatible server's is its own; `context_window` is then the
    /// conservative default it works in when the server does not say.
    pub ask_window: bool,
    /// Send `max_tokens` instead of `max_completion_tokens` (OpenAI Chat):
    /// most compatible servers only know the older name.
    pub legacy_max_tokens: bool,
    /// Send OpenAI Chat's `reasoning_effort` when a request asks for
    /// reasoning: OpenAI takes it; a compatible server only when it says
    /// so (many refuse a field they do not know).
    pub reasoning_effort: bool,
    /// Whether the model takes images. When it does not, every image in a
    /// request is sent as a short text note instead, so a text-only model is
    /// not refused the whole call (a local server answers such a request
    /// with an error).
    pub images: bool,
    /// Certificates (PEM) trusted besides the system's: a company's own
    /// authority, or the certificate of a server on the person's network.
    /// The system's roots (`SSL_CERT_FILE` and `SSL_CERT_DIR` where set)
    /// stay trusted.
    pub extra_roots: Vec<String>,
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<&str> = self.extra_headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ProviderConfig")
            .field("api", &self.api)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("extra_headers", &headers)
            .field("key_header", &self.key_header)
            .field("timeouts", &self.timeouts)
            .field("retry", &self.retry)
            .field("offline", &self.offline)
            .field("context_window", &self.context_window)
            .field("images", &self.images)
            .field("extra_roots", &self.extra_roots.len())
            .finish_non_exhaustive()
    }
}

/// The window an OpenAI-compatible server that does not say its own is
/// taken to have: llama.cpp's and LM Studio's usual, not a hosted API's.
pub const COMPATIBLE_WINDOW: u32 = 8_192;

impl ProviderConfig {
    /// A config for `api` at its default base URL, without a key.
    pub fn new(api: WireApi) -> Self {
        ProviderConfig {
            api,
            base_url: api.default_base_url().to_owned(),
            api_key: None,
            extra_headers: Vec::new(),
            key_header: None,
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
            sse: SseLimits::default(),
            offline: None,
            context_window: match api {
                WireApi::AnthropicMessages => 200_000,
                WireApi::OpenAiChat | WireApi::OpenAiResponses => 128_000,
            },
            ask_window: false,
            legacy_max_tokens: false,
            reasoning_effort: true,
            images: true,
            extra_roots: Vec::new(),
        }
    }

    /// A config for `api` with the key from its usual environment variable
    /// (an unset or empty variable leaves no key).
    pub fn from_env(api: WireApi) -> Self {
        let mut config = ProviderConfig::new(api);
        config.api_key = std::env::var(api.key_variable())
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(ApiKey::new);
        config
    }

    /// A config for an OpenAI-compatible server at `base_url` (llama.cpp,
    /// vLLM, Ollama, LM Studio, OpenRouter, …; with or without `/v1`): the
    /// OpenAI Chat API, the key from `OPENAI_API_KEY` if one is set (a local
    /// server needs none), and `max_tokens` for the output limit (most
    /// compatible servers do not know the newer name).
    pub fn openai_compatible(base_url: impl Into<String>) -> Self {
        let mut config = ProviderConfig::from_env(WireApi::OpenAiChat).with_base_url(base_url);
        config.context_window = COMPATIBLE_WINDOW;
        config.ask_window = true;
        config.legacy_max_tokens = true;
        config.reasoning_effort = false;
        config
    }

    /// Set the base URL (a trailing `/` is dropped).
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into().trim_end_matches('/').to_owned();
        self
    }

    /// Set the key.
    pub fn with_api_key(mut self, key: ApiKey) -> Self {
        self.api_key = Some(key);
        self
    }

    /// What this config's OpenAI Chat server takes beyond the common fields.
    pub fn chat_dialect(&self) -> ChatDialect {
        ChatDialect {
            legacy_max_tokens: self.legacy_max_tokens,
            reasoning_effort: self.reasoning_effort,
        }
    }

    /// Whether calls are refused right now.
    pub fn is_offline(&self) -> bool {
        self.offline.unwrap_or_else(offline_switch_on)
    }

    /// The URL the call goes to. A base URL that is only a host (no path)
    /// gets the API's version path, `/v1`, so `http://127.0.0.1:8080` and
    /// `http://127.0.0.1:8080/v1` both work; a base URL with a path of its
    /// own (a proxy's `/api/v1`, say) is used as given.
    pub fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        let host_only = base
            .split_once("://")
            .is_some_and(|(_, rest)| !rest.contains('/'));
        let versioned = if host_only {
            format!("{base}/v1")
        } else {
            base.to_owned()
        };
        match self.api {
            WireApi::AnthropicMessages => {
                if base.ends_with("/v1") {
                    format!("{base}/messages")
                } else {
                    format!("{base}/v1/messages")
                }
            }
            WireApi::OpenAiChat => format!("{versioned}/chat/completions"),
            WireApi::OpenAiResponses => format!("{versioned}/responses"),
        }
    }
}

/// What an OpenAI Chat server takes beyond the common fields (from its
/// config: `ProviderConfig::chat_dialect`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChatDialect {
    /// `max_tokens` instead of `max_completion_tokens`.
    pub legacy_max_tokens: bool,
    /// Whether `reasoning_effort` may be sent.
    pub reasoning_effort: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_key_or_header_values() {
        let mut config = ProviderConfig::new(WireApi::OpenAiChat)
            .with_api_key(ApiKey::new("sk-canary-0123456789"));
        config
            .extra_headers
            .push(("x-secret".into(), "hdr-canary-987".into()));
        let shown = format!("{config:?}");
        assert!(!shown.contains("sk-canary-0123456789"), "{shown}");
        assert!(!shown.contains("hdr-canary-987"), "{shown}");
        assert!(shown.contains("x-secret"));
    }

    #[test]
    fn endpoints() {
        let a = ProviderConfig::new(WireApi::AnthropicMessages);
        assert_eq!(a.endpoint(), "https://api.anthropic.com/v1/messages");
        let o = ProviderConfig::new(WireApi::OpenAiChat).with_base_url("http://127.0.0.1:9/v1/");
        assert_eq!(o.endpoint(), "http://127.0.0.1:9/v1/chat/completions");
        let r = ProviderConfig::new(WireApi::OpenAiResponses);
        assert_eq!(r.endpoint(), "https://api.openai.com/v1/responses");
        // A bare host gets the version path; a path of its own is kept.
        for (base, endpoint) in [
            (
                "http://127.0.0.1:9",
                "http://127.0.0.1:9/v1/chat/completions",
            ),
            (
                "http://127.0.0.1:9/",
                "http://127.0.0.1:9/v1/chat/completions",
            ),
            (
                "https://openrouter.ai/api/v1",
                "https://openrouter.ai/api/v1/chat/completions",
            ),
            (
                "http://proxy.local/openai",
                "http://proxy.local/openai/chat/completions",
            ),
        ] {
            let o = ProviderConfig::new(WireApi::OpenAiChat).with_base_url(base);
            assert_eq!(o.endpoint(), endpoint, "{base}");
        }
        let a = ProviderConfig::new(WireApi::AnthropicMessages).with_base_url("http://127.0.0.1:9");
        assert_eq!(a.endpoint(), "http://127.0.0.1:9/v1/messages");
    }

    #[test]
    fn api_names_round_trip() {
        for api in [
            WireApi::AnthropicMessages,
            WireApi::OpenAiChat,
            WireApi::OpenAiResponses,
        ] {
            assert_eq!(api.as_str().parse::<WireApi>().ok(), Some(api));
        }
        assert!("grpc".parse::<WireApi>().is_err());
    }
}
