//! The agent definition as data: [`AgentSpec`] (what one agent runs with)
//! and [`ConfigFile`] (one config file: the default agent, named agents,
//! telemetry, and the sections other parts read — `[sandbox]`,
//! `[commands]`, `[mcp]`). Every field is optional so files layer: a later
//! layer sets only what it names. The JSON Schema of a file is
//! [`schema`].
//!
//! Not here: reading files or layering them (`layers`), building a running
//! agent from a definition (the `rein` command's `compose`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One config file (`REIN_HOME/config.toml`, a project's
/// `.rein/config.toml`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// The default agent: what `rein chat`, `rein serve`, `rein run` and the
    /// other surfaces run unless `--agent` names another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentSpec>,
    /// Named agents: `kind = "rein"` (the default) takes the fields of
    /// [`AgentSpec`] over the default agent's; `claude`, `codex`, `acp` and
    /// `tui` are hosted programs (their fields are `rein-host`'s).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agents: BTreeMap<String, NamedAgent>,
    /// Where spans go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetrySpec>,
    /// The sandbox `run_command` and `verify` run in (`rein-sandbox`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Value>")]
    pub sandbox: Option<toml::Table>,
    /// The command policy (`rein-sandbox`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Value>")]
    pub commands: Option<toml::Table>,
    /// MCP servers (`rein-mcp`'s `[mcp.servers.NAME]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Value>")]
    pub mcp: Option<toml::Table>,
    /// Where sessions are kept, when not the home's SQLite file. Read
    /// from the home config only: a project must not send a person's
    /// transcripts elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreSpec>,
}

/// `[store]`: the store every command opens (`--store` and `REIN_STORE`
/// come first).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreSpec {
    /// `postgres://USER@HOST:PORT/DATABASE` (the password from
    /// `PGPASSWORD`, not here) or `sqlite:PATH`.
    pub url: String,
}

/// A named agent: a native definition, or a hosted program.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NamedAgent {
    /// `rein` (native, the default), or `claude | codex | acp | tui`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The native definition's fields (a hosted entry's are checked by
    /// `rein-host`).
    #[serde(flatten)]
    #[schemars(with = "AgentSpec")]
    pub fields: toml::Table,
}

impl NamedAgent {
    /// Whether it is rein's own agent (not a hosted program).
    pub fn is_native(&self) -> bool {
        self.kind.as_deref().is_none_or(|k| k == "rein")
    }
}

/// What one agent runs with. Every field may be left out: it is then the
/// layer below's, or rein's default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// The wire API: `anthropic`, `openai-chat`, `openai-responses` or
    /// `scripted` (default: from the environment's keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// An OpenAI-compatible server's base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// How much the model reasons: `off`, `low`, `medium`, `high`, or a
    /// number of tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The sampling temperature, 0 to 2 (default: the provider's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Read the project's instruction files (`AGENTS.md` in the root and
    /// its parents) into the system prompt (default: yes; a product built with `rein::compose::Product`: no).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_instructions: Option<bool>,
    /// Show the model the project's files at each turn's start — a bounded
    /// listing of the root, like a map (default: yes, where it has the
    /// file tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_map: Option<bool>,
    /// The tools it is offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsSpec>,
    /// What it may do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicySpec>,
    /// External commands asked at a turn's fixed points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<Vec<HookSpec>>,
    /// Limits per turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budgets: Option<BudgetsSpec>,
    /// A command each turn must pass (exit 0) to count as finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifySpec>,
    /// How the context window is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionSpec>,
    /// Sub-agents it may hand tasks to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagents: Option<SubagentsSpec>,
    /// Prices in US dollars per million tokens, by model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<BTreeMap<String, PriceSpec>>,
    /// Long-term memory across sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemorySpec>,
}

/// Long-term memory: the `remember`, `recall` and `forget` tools over one
/// scope of `REIN_HOME/memory.db`, and that scope's pinned items in every
/// prompt's stable prefix (refreshed at turn boundaries).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    /// Whether the agent remembers across sessions (default: no).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Whose memory, e.g. `person:alice` (default: `project:` and the
    /// root, the scope `rein memory` uses in that folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// How a `remember` is decided (default: `shown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<MemoryWrites>,
    /// Pinned items in the prompt, at most (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_items: Option<usize>,
    /// Bytes of pinned items in the prompt, at most (default 4,096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_bytes: Option<usize>,
    /// Vectors from an OpenAI-compatible embeddings endpoint, blended
    /// into `recall`'s full-text search (default: words only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<EmbeddingsSpec>,
}

/// An OpenAI-compatible `/embeddings` endpoint (OpenAI, llama.cpp's
/// server, vLLM, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingsSpec {
    /// The base URL, e.g. `http://127.0.0.1:8080/v1` (`/embeddings` is
    /// added).
    pub base_url: String,
    /// The model's name.
    pub model: String,
    /// The environment variable holding its key (none: no key sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_env: Option<String>,
}

/// How a memory write is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryWrites {
    /// It runs and is shown where the person watches (never silent);
    /// `forget` undoes it.
    Shown,
    /// A person decides each one.
    Ask,
}

/// The tools an agent is offered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsSpec {
    /// The file tools in the root (default: yes; with `Product`, only when it gives a root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<bool>,
    /// `run_command` in the sandbox, decided by the command policy
    /// (default: no).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<bool>,
    /// Configured MCP servers whose tools it is offered, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<Vec<String>>,
    /// A folder of skills (markdown files with front matter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<String>,
    /// `server_info`: rein's own facts for the model — version, model,
    /// policy, its tools and skills, what is left of the turn's budgets
    /// (default: no).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_info: Option<bool>,
}

/// What an agent may do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// Whether any write may run, approved or not (default: yes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<bool>,
    /// Paths inside the root (relative to it) kept like `.git` and
    /// `.rein`: read-only to commands, and a file tool's change asked
    /// each time, never under an "always" (those two are always kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protect: Option<Vec<String>>,
}

/// An external command asked at a turn's fixed points: JSON on stdin,
/// `{"effect": …}` on stdout, fail closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    /// Its name (in events).
    pub name: String,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Where it runs: `before_call`, `after_call`, `before_model_call`,
    /// `turn_end`.
    pub points: Vec<String>,
    /// How long it may take, in milliseconds (default 10,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// Limits on one turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetsSpec {
    /// Model calls per turn (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Tokens per turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Cost per turn in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Wall time per turn in seconds (default 1,800).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wall_secs: Option<u64>,
}

/// The verification gate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifySpec {
    /// The program and its arguments (no shell).
    pub command: Vec<String>,
    /// Failed checks the model gets to fix (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// How long one check may run, in seconds (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// The exit code that passes (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_exit: Option<i32>,
}

/// How the context window is kept (shares of the window).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactionSpec {
    /// Soft pruning starts above this share (default 0.7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soft: Option<f64>,
    /// Hard compaction starts above this share (default 0.85).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hard: Option<f64>,
    /// Hard compaction aims at this share (default 0.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
    /// The window in tokens (default: what the provider says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
}

/// Sub-agents.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubagentsSpec {
    /// Whether the model may delegate at all (default: no).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Sub-agents one turn may start (default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_turn: Option<u32>,
    /// How deep they may nest (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
    /// Whether a sub-agent may write, asked of the person (default: yes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<bool>,
}

/// One model's prices, US dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PriceSpec {
    /// Uncached prompt tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Prompt tokens read from the cache (default: a tenth of input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Prompt tokens written to the cache (default: 1.25 × input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

/// Where spans go.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySpec {
    /// An OTLP (HTTP + protobuf) traces endpoint, e.g.
    /// `http://127.0.0.1:4318/v1/traces`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp: Option<String>,
    /// A JSON-lines file (redacted, bounded, owner-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jsonl: Option<String>,
    /// Put the person's prompt on turn spans (default: no).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<bool>,
}

/// The JSON Schema of a config file.
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(ConfigFile)).unwrap_or_default()
}
