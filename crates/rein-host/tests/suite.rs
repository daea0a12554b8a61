//! The hosted-agent drivers' tests, one test binary: each file below was its own binary once, and
//! each linked the whole stack. One binary builds and links once.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

mod acp_stream;
mod attach;
mod claude_stream;
mod codex_app;
mod codex_stream;
mod driver;
mod permission;
mod session_host;
