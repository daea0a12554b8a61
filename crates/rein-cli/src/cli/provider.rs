//! The provider flags `chat`, `run`, `serve` and `acp` share, as the
//! definition values they set (`rein::compose::provider` picks the
//! provider from them), and the words that tell a person how to name one.
//!
//! Not here: choosing the provider (`rein::compose::provider`).

use rein::compose::Resolved;
use rein::config::AgentSpec;
use rein::wire::AgentError;

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
    /// The model's context window in tokens (`[agent.compaction] window`;
    /// by default a hosted API's known window, or what an OpenAI-compatible
    /// server states).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1024..=100_000_000))]
    pub window: Option<u64>,
}

impl ProviderArgs {
    /// The definition these flags set (over the config files').
    pub fn spec(&self) -> AgentSpec {
        AgentSpec {
            provider: if self.scripted {
                Some("scripted".into())
            } else {
                self.provider.clone()
            },
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            compaction: self.window.map(|window| rein::config::CompactionSpec {
                window: Some(window),
                ..rein::config::CompactionSpec::default()
            }),
            ..AgentSpec::default()
        }
    }

    /// The provider these flags name, or `missing_api_key` saying how to
    /// name one (`verb` is the command: `run`, `serve`).
    pub fn resolve(&self, verb: &str) -> Result<Resolved, AgentError> {
        rein::compose::resolve_or_explain(&self.spec(), verb)
    }
}

/// How to set a key, for a person.
pub const KEY_HELP: &str = "\
No API key found. To talk to a real model, set one of:
  export ANTHROPIC_API_KEY=sk-ant-...   (Anthropic; add --model to choose one)
  export OPENAI_API_KEY=sk-...          (OpenAI)
or point rein at a local OpenAI-compatible server:
  rein chat --base-url http://127.0.0.1:8080/v1 --model NAME
To try rein without any of these: rein chat --scripted";
