//! rein, an agent harness runtime: the one dependency a product needs.
//!
//! A product brings its tools, its words and a model provider; rein is the
//! rest. The common path is one import, [`prelude`]; the quickstart
//! (`examples/quickstart.rs`, run in CI like every example):
//!
//! ```
#![doc = include_str!("../examples/quickstart.rs")]
//! ```
//!
//! A write the product's own UI approves is `examples/shop.rs`; a
//! conversation resumed after the process restarts is `examples/durable.rs`;
//! a typed answer is `examples/structured.rs`.
//!
//! Each layer is its own crate, usable alone, and re-exported here:
//!
//! - [`wire`]: the vocabulary (messages, requests, stream events, usage and
//!   cost, permission classes, ids, errors with stable codes);
//! - [`gateway`]: the streamed model call over the three wire APIs, and
//!   the offline scripted model ([`gateway::scripted`]);
//! - [`sessions`]: the durable store (event log, turn tree, locks,
//!   artifacts) on embedded SQLite (feature `sqlite`, on by default) or in
//!   memory;
//! - [`tools`]: typed tools ([`tools::Tool`], [`tools::tool_fn`],
//!   [`tools::Registry`]) and the backend contract;
//! - [`approvals`]: the gate, leases, and the person's [`approvals::Surface`];
//! - [`runner`]: [`runner::Conversation`], the tool loop;
//! - [`cache`]: prompt-cache planning and its monitor;
//! - [`orchestrator`]: task graphs run in parallel (retries, time limits,
//!   cancellation, a failure policy) and the shared blackboard;
//! - [`trace`]: reports and golden traces read from the log;
//! - `server` (feature `server`, off by default): the HTTP surface — a
//!   JSON API and an SSE event stream over conversations, behind a token,
//!   a cookie and origin checks, for a product to mount;
//! - `mcp` (feature `mcp`, off by default): MCP both ways — configured
//!   servers' tools as one backend whose catalog changes only between
//!   turns, and a backend served over MCP behind rein's approvals;
//! - `host` (feature `host`, off by default): other agents hosted — pure
//!   reducers for Claude Code's and Codex's JSON streams, a driver that
//!   records a hosted run as a session, ACP both ways (its permission
//!   requests decided by a person), and sessions with a PTY that several
//!   viewers watch and a person takes over by typing;
//! - `memory` (feature `memory`, off by default): long-term memory, scoped
//!   items with their source found by full text, in memory or on SQLite;
//! - `files`, `sandbox`, `telemetry` (`otlp` for the exporter) and
//!   `config` (features of the same names, off by default): the file tools
//!   in one root, commands confined, the runner's spans out, and the agent
//!   definition loaded from layered config files;
//! - `compose` (feature `compose`, off by default): the composition
//!   root — a definition from the config files (a named agent, the flags)
//!   made into a running [`runner::Agent`] with its file tools, commands,
//!   MCP servers, hooks and helpers, as every `rein` command builds it;
//! - `testing` (feature `testing`, off by default): a fake
//!   OpenAI-compatible server on loopback, fake tools and the backend
//!   contract suite, for a product's own tests.
//!
//! A tool's input derives `Deserialize` and `JsonSchema`, so a product's
//! manifest names `serde` and `schemars` beside `rein` (or points the
//! derives at [`serde`] and [`schemars`] re-exported here, with
//! `#[serde(crate = "rein::serde")]` and `#[schemars(crate = "rein::schemars")]`).
//! The `rein` command is the `rein-cli` package; nothing of it is compiled
//! into a product.

#[doc(inline)]
pub use rein_approvals as approvals;
#[doc(inline)]
pub use rein_cache as cache;
#[cfg(feature = "compose")]
pub mod compose;
#[cfg(feature = "config")]
#[doc(inline)]
pub use rein_config as config;
#[cfg(feature = "files")]
#[doc(inline)]
pub use rein_files as files;
#[doc(inline)]
pub use rein_gateway as gateway;
#[cfg(feature = "host")]
#[doc(inline)]
pub use rein_host as host;
#[cfg(feature = "mcp")]
#[doc(inline)]
pub use rein_mcp as mcp;
#[cfg(feature = "memory")]
#[doc(inline)]
pub use rein_memory as memory;
#[doc(inline)]
pub use rein_orchestrator as orchestrator;
#[doc(inline)]
pub use rein_runner as runner;
#[cfg(feature = "sandbox")]
#[doc(inline)]
pub use rein_sandbox as sandbox;
#[cfg(feature = "sandbox")]
mod sandbox_checks;
#[cfg(feature = "server")]
#[doc(inline)]
pub use rein_server as server;
#[doc(inline)]
pub use rein_sessions as sessions;
#[cfg(feature = "telemetry")]
#[doc(inline)]
pub use rein_telemetry as telemetry;
#[cfg(feature = "testing")]
#[doc(inline)]
pub use rein_testing as testing;
#[doc(inline)]
pub use rein_tools as tools;
#[doc(inline)]
pub use rein_trace as trace;
#[doc(inline)]
pub use rein_wire as wire;
#[cfg(feature = "sandbox")]
pub use sandbox_checks::SandboxChecks;

/// The allocator the `rein` binary runs on (feature `mimalloc`). A library
/// cannot choose a program's allocator; a product's binary does, in one
/// line — and with many conversations in one process it is worth it: at a
/// thousand, the step overhead's p50 went from 337–373 ms on the C
/// library's malloc to 11–17 ms (`rein-scale --conversations 1000`,
/// `docs/BENCHMARKS.md`).
///
/// ```
/// #[global_allocator]
/// static ALLOCATOR: rein::MiMalloc = rein::MiMalloc;
/// # fn main() {}
/// ```
#[cfg(feature = "mimalloc")]
pub use mimalloc::MiMalloc;
pub use schemars;
pub use serde;
pub use serde_json;

/// What the common path needs, in one import: `use rein::prelude::*;`.
pub mod prelude {
    pub use std::sync::Arc;

    pub use rein_approvals::{Answer, LeaseScope, Surface};
    pub use rein_gateway::scripted::{Rule, ScriptedBrain};
    pub use rein_gateway::{HttpProvider, Provider, ProviderConfig, WireApi};
    pub use rein_runner::{
        Agent, ApprovalRequest, Budgets, Conversation, Guards, Profile, TurnOutcome,
    };
    #[cfg(feature = "sqlite")]
    pub use rein_sessions::SqliteStore;
    pub use rein_sessions::{MemoryStore, Store};
    pub use rein_tools::{Outcome, PermissionClass, Policy, Registry, Tool, ToolContext, tool_fn};
    pub use rein_wire::{AgentError, ModelPrice, PriceTable};
    pub use schemars::JsonSchema;
    pub use serde::Deserialize;
    pub use serde_json::{Value, json};
}

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
