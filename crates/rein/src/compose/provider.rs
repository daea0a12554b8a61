//! Which model provider a definition calls: the provider, model and base
//! URL it names, else the first key set in the environment, or the
//! offline scripted model — and the keys' values, which conversations
//! mask.
//!
//! Not here: the wire APIs themselves (`rein-gateway`).

use std::sync::Arc;

use crate::config::AgentSpec;
use crate::gateway::scripted::ScriptedBrain;
use crate::gateway::{HttpProvider, Provider, ProviderConfig, WireApi};
use crate::wire::{AgentError, error::codes};

/// The provider and model an agent calls.
pub struct Resolved {
    /// The provider.
    pub provider: Arc<dyn Provider>,
    /// The model name.
    pub model: String,
}

fn default_model(api: WireApi) -> &'static str {
    match api {
        WireApi::AnthropicMessages => "claude-sonnet-4-5",
        WireApi::OpenAiChat | WireApi::OpenAiResponses => "gpt-4.1-mini",
    }
}

/// The offline scripted model (no key, no network).
pub fn scripted() -> Resolved {
    Resolved {
        provider: Arc::new(ScriptedBrain::demo()),
        model: "rein-scripted".into(),
    }
}

fn http(api: WireApi, spec: &AgentSpec) -> Result<Resolved, AgentError> {
    let config = match &spec.base_url {
        Some(url) if api == WireApi::OpenAiChat => ProviderConfig::openai_compatible(url.clone()),
        Some(url) => ProviderConfig::from_env(api).with_base_url(url.clone()),
        None => ProviderConfig::from_env(api),
    };
    if spec.base_url.is_none() && config.api_key.is_none() {
        return Err(missing_key());
    }
    Ok(Resolved {
        provider: Arc::new(HttpProvider::new(config)?),
        model: spec
            .model
            .clone()
            .unwrap_or_else(|| default_model(api).to_owned()),
    })
}

/// `missing_api_key`: a named provider has no key.
pub fn missing_key() -> AgentError {
    AgentError::new(
        codes::MISSING_API_KEY,
        "no API key is set for a model provider",
    )
}

/// The provider `spec` names (`provider = "scripted"` is the scripted
/// model), else one its base URL or the environment's keys give.
/// `Ok(None)`: nothing is configured (a chat offers the scripted model).
pub fn resolve(spec: &AgentSpec) -> Result<Option<Resolved>, AgentError> {
    if let Some(name) = &spec.provider {
        if name == "scripted" {
            return Ok(Some(scripted()));
        }
        return http(name.parse()?, spec).map(Some);
    }
    if spec.base_url.is_some() {
        return http(WireApi::OpenAiChat, spec).map(Some);
    }
    for api in [WireApi::AnthropicMessages, WireApi::OpenAiChat] {
        let set = std::env::var(api.key_variable()).is_ok_and(|k| !k.trim().is_empty());
        if set {
            return http(api, spec).map(Some);
        }
    }
    Ok(None)
}

/// [`resolve`], or `missing_api_key` saying how to name one (`verb` is the
/// command: `run`, `serve`).
pub fn resolve_or_explain(spec: &AgentSpec, verb: &str) -> Result<Resolved, AgentError> {
    resolve(spec)?.ok_or_else(|| {
        AgentError::new(
            codes::MISSING_API_KEY,
            format!("no provider is configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY, give --base-url, or run `rein {verb} --scripted`"),
        )
    })
}

/// The values of rein's own secrets set in this environment (the provider
/// keys, the surfaces' tokens, the store's password): masked in every tool
/// result a conversation records.
pub fn provider_secrets() -> Vec<String> {
    crate::wire::env::SECRET_VARS
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .filter(|value| !value.trim().is_empty())
        .collect()
}
