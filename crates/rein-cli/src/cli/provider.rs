//! Which model provider a command talks to — the flags `chat`, `run`,
//! `serve` and `acp` share, the environment's keys, the offline scripted
//! model — and the provider keys' values, which conversations mask.
//!
//! Not here: what a command does with the provider.

use std::sync::Arc;

use rein::gateway::scripted::ScriptedBrain;
use rein::gateway::{HttpProvider, Provider, ProviderConfig, WireApi};
use rein::wire::{AgentError, error::codes};

/// The provider flags every command that calls a model shares (`chat`,
/// `run`, `serve`, `acp`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProviderArgs {
    /// The wire API: anthropic, openai-chat, openai-responses or scripted.
    #[arg(long)]
    pub provider: Option<String>,
    /// The model name.
    #[arg(long)]
    pub model: Option<String>,
    /// A base URL (an OpenAI-compatible server such as vLLM, llama.cpp or Ollama).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Use the offline scripted model (no key, no network).
    #[arg(long)]
    pub scripted: bool,
}

impl ProviderArgs {
    /// The provider these flags name, or `missing_api_key` saying how to
    /// name one (`verb` is the command: `run`, `serve`).
    pub fn resolve(&self, verb: &str) -> Result<Resolved, AgentError> {
        resolve(self)?.ok_or_else(|| {
            AgentError::new(
                codes::MISSING_API_KEY,
                format!("no provider is configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY, give --base-url, or {verb} with --scripted"),
            )
        })
    }
}

/// The provider and model a chat runs with.
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

pub(crate) fn scripted() -> Resolved {
    Resolved {
        provider: Arc::new(ScriptedBrain::demo()),
        model: "rein-scripted".into(),
    }
}

fn http(api: WireApi, options: &ProviderArgs) -> Result<Resolved, AgentError> {
    let config = match &options.base_url {
        Some(url) if api == WireApi::OpenAiChat => ProviderConfig::openai_compatible(url.clone()),
        Some(url) => ProviderConfig::from_env(api).with_base_url(url.clone()),
        None => ProviderConfig::from_env(api),
    };
    if options.base_url.is_none() && config.api_key.is_none() {
        return Err(missing_key());
    }
    Ok(Resolved {
        provider: Arc::new(HttpProvider::new(config)?),
        model: options
            .model
            .clone()
            .unwrap_or_else(|| default_model(api).to_owned()),
    })
}

pub(crate) fn missing_key() -> AgentError {
    AgentError::new(
        codes::MISSING_API_KEY,
        "no API key is set for a model provider",
    )
}

/// How to set a key, for a person.
pub const KEY_HELP: &str = "\
No API key found. To talk to a real model, set one of:
  export ANTHROPIC_API_KEY=sk-ant-...   (Anthropic; add --model to choose one)
  export OPENAI_API_KEY=sk-...          (OpenAI)
or point rein at a local OpenAI-compatible server:
  rein chat --base-url http://127.0.0.1:8080/v1 --model NAME
To try rein without any of these: rein chat --scripted";

/// Pick the provider from the options and the environment. `Ok(None)`:
/// nothing is configured (the caller offers the scripted model).
pub fn resolve(options: &ProviderArgs) -> Result<Option<Resolved>, AgentError> {
    if options.scripted {
        return Ok(Some(scripted()));
    }
    if let Some(name) = &options.provider {
        if name == "scripted" {
            return Ok(Some(scripted()));
        }
        return http(name.parse()?, options).map(Some);
    }
    if options.base_url.is_some() {
        return http(WireApi::OpenAiChat, options).map(Some);
    }
    for api in [WireApi::AnthropicMessages, WireApi::OpenAiChat] {
        let set = std::env::var(api.key_variable()).is_ok_and(|k| !k.trim().is_empty());
        if set {
            return http(api, options).map(Some);
        }
    }
    Ok(None)
}

/// The values of the provider keys set in this environment: masked in
/// every tool result a conversation records.
pub fn provider_secrets() -> Vec<String> {
    rein::wire::env::PROVIDER_KEYS
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .filter(|value| !value.trim().is_empty())
        .collect()
}
