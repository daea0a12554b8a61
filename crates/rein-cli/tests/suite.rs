//! The `rein` binary's tests, one test binary: each file below was its own
//! binary once, and each linked the whole stack (over a hundred megabytes
//! apiece, 43 of them). One binary builds and links once.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

mod acp;
mod acp_crash;
mod agents;
mod agents_attach;
mod agents_resize;
mod cli;
mod commands;
mod common;
mod dead_ends;
mod definition;
mod delegating;
mod edges;
mod edits;
mod forks;
mod graphs;
mod guards;
mod guides;
mod hosted_acp;
mod hosted_claude;
mod hosted_codex;
mod hosted_crash;
mod hosted_steer;
mod hosted_switch;
mod hosted_turns;
mod hostile_sockets;
mod hostile_store;
mod imported;
mod later_on_host;
mod lifetimes;
mod mcp_chat;
mod mcp_serve;
mod mcp_serve_crash;
mod mcp_serve_sdks;
mod memory;
mod memory_chat;
mod migration;
mod plugins;
mod product;
mod provider_faults;
mod reference;
mod safe_edits;
mod schemathesis;
mod secrets;
mod serve;
mod skills;
mod stops;
mod stores;
mod subagents;
mod surfaces;
mod terminal;
mod too_long;
mod wire;
mod workers;
