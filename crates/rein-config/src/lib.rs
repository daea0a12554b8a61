//! rein's agent definition as data, and where it comes from.
//!
//! - `spec`: [`AgentSpec`] (what one agent runs with: provider and model,
//!   reasoning, instructions, tools, policy, hooks, budgets, the
//!   verification gate, compaction, sub-agents, prices) and [`ConfigFile`]
//!   (one file: the default `[agent]`, named `[agents.NAME]` — native, or
//!   hosted programs — `[telemetry]`, and the sections other parts own);
//!   [`schema`] is its JSON Schema;
//! - `layers`: the files in their order (defaults < trusted plugins <
//!   `REIN_HOME/config.toml` < a trusted project's `.rein/config.toml` < a
//!   named agent < flags), each checked whole, every value with its
//!   [`Source`];
//! - `plugins`: bundles of servers, agents, hooks and instructions behind
//!   one manifest, added, trusted and removed as a unit ([`plugins`]);
//! - `trust`: a person's trust in a project folder, bound to what its
//!   config says ([`trust`], [`standing`]);
//! - `instructions`: the project's `AGENTS.md` files, bounded.
//!
//! Config is read here once; the parts that own a section (`rein-sandbox`,
//! `rein-mcp`, `rein-host`) are handed its text ([`Loaded::section_text`]).
//!
//! Not here: anything that runs. A running agent (`rein_runner::Agent`) is
//! built from a definition by the `rein` command's composition root, or by
//! a product in code.

mod instructions;
mod layers;
pub mod plugins;
mod spec;
mod trust;

pub use instructions::{
    FILE_NAME as INSTRUCTIONS_FILE, Instructions, MAX_TOTAL_BYTES, as_system_block,
    project_instructions,
};
pub use layers::{CONFIG_FILE, Effective, Loaded, Source, check};
pub use spec::{
    AgentSpec, BudgetsSpec, CompactionSpec, ConfigFile, EmbeddingsSpec, HookSpec, MemorySpec,
    MemoryWrites, NamedAgent, PolicySpec, PriceSpec, StoreSpec, SubagentsSpec, TelemetrySpec,
    ToolsSpec, VerifySpec, schema,
};
pub use trust::{
    MAX_FILE_BYTES, PROJECT_FILE, Standing, TRUSTED_DIR, TRUSTED_FILE, Trusted, reaching, standing,
    trust, trusted,
};

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
