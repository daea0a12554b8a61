//! Fakes for testing rein over real transports.
//!
//! - [`FakeServer`]: a hyper server on `127.0.0.1:0` that answers each
//!   request with the next scripted [`Reply`] — SSE bodies of any of the
//!   three wire APIs, chunked and paced as the script says, or faults (a
//!   status with `Retry-After`, a connection cut mid-chunk, a stall longer
//!   than the idle timeout). It records every request it got.
//! - [`FakeH2Server`]: the same over HTTP/2 and TLS with a certificate made
//!   per run, for the faults only HTTP/2 has (a stream reset).
//! - [`wire`]: write a [`ScriptedMessage`] as the SSE body each wire API
//!   would send, so one script drives all three decoders.
//! - [`FakeProvider`]: an in-process [`Provider`](rein_gateway::Provider)
//!   that yields scripted events with no transport at all.
//! - [`ScriptedBrain`]: a deterministic, rule-driven model for demos, evals
//!   and `rein chat` without an API key.
//!
//! - [`FakeToolBackend`]: the reference tool backend (files with revisions,
//!   reads, reversible and source-file writes, destructive deletes).
//!
//! - [`clis`]: real agent CLIs (Claude Code) installed from npm, pinned.
//! - [`containers`]: Docker and a BusyBox test image, made with no registry.
//! - [`postgres`]: a throwaway PostgreSQL server from the machine's binaries.
//! - [`debian`]: Debian packages a test needs, installed once at a time.
//!
//! These are test tools: they favour clear failures over robustness.

pub mod clis;
mod collector;
pub mod containers;
pub mod contract;
pub mod debian;
mod fake_h2;
mod fake_provider;
mod fake_server;
mod fake_tools;
pub mod faults;
pub mod fixtures;
pub mod mcp;
pub mod postgres;
pub mod wire;

pub use collector::{Bodies, otlp_collector};
pub use fake_h2::{FakeH2Server, H2Reply, Reason};
pub use fake_provider::FakeProvider;
pub use fake_server::{Chunk, FakeServer, RecordedRequest, Reply, Responder};
pub use fake_tools::{FakeToolBackend, Project};
pub use rein_gateway::scripted::{AnthropicCache, Rule, RuleCall, ScriptedBrain};
pub use wire::{ScriptedCall, ScriptedMessage};

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
