//! The runner's end-to-end tests, one test binary: each file below was its
//! own binary once, and each linked the whole stack. One binary builds and
//! links once. (The golden traces and the context tests stay binaries of
//! their own: `cargo xtask golden` runs the first alone.)

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

mod agent;
mod approvals;
mod authority;
mod commits;
mod common;
mod contract;
mod graph_failures;
mod graph_tasks;
mod hooks;
mod hostile_model;
mod inheritance;
mod kept;
mod opening;
mod over_http;
mod overflow;
mod provider_faults;
mod reasoning;
mod receipts;
mod runner;
mod server_info;
mod standing;
mod subagent_writes;
mod subagents;
mod wakes;
