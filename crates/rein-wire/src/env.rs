//! Environment variables that are rein's own secrets: no child process
//! rein starts (an MCP server, a sandboxed command, a check) is ever given
//! one, no MCP server is sent one as its bearer, a config that names one is
//! refused, and their values are masked in every tool result and check
//! output rein records.
//!
//! Not here: the masking itself (the runner's secrets, given these values
//! by `rein::compose`).

/// rein's own secrets, by name: the model providers' keys, the tokens of
/// `rein serve` and `rein mcp serve --http`, and the store's password.
pub const SECRET_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "REIN_SERVE_TOKEN",
    "REIN_MCP_TOKEN",
    "PGPASSWORD",
];
