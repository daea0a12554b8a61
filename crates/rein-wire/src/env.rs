//! Environment variables that are rein's own secrets: no child process
//! rein starts (an MCP server, a sandboxed command) is ever given one, and
//! a config that names one is refused.

/// The keys rein's model providers and surfaces read.
pub const PROVIDER_KEYS: &[&str] = &["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "REIN_SERVE_TOKEN"];
