//! MCP both ways, on the official Rust SDK (`rmcp`).
//!
//! - The client: [`McpConfig`] (servers in rein's config file), each kept
//!   running by a [`ServerHandle`] (started in the background, restarted
//!   with backoff, its list refreshed on `tools/list_changed`), and their
//!   tools as one [`ToolBackend`](rein_tools::ToolBackend) per
//!   conversation ([`McpClients::tools`]) whose catalog changes only at a
//!   turn boundary.
//! - The server (`serve`): a `ToolBackend` offered over MCP (stdio or
//!   streamable HTTP on loopback) with rein's policy in front — a call that
//!   needs a person waits for one, and every call is recorded in a session.
//!
//! Not here: the terminal's rendering of progress or notes (`rein-cli`).

pub mod catalog;
pub mod config;
mod progress;
pub mod serve;
mod server;
mod tools;

pub use config::{ClassName, McpConfig, ServerConfig, Transport};
pub use serve::{HttpGuard, McpServe, ServeSettings};
pub use server::{ServerHandle, Snapshot, Status};
pub use tools::{McpClients, McpTools};

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
