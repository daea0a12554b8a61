//! What the MCP tests share: configs naming the reference server
//! (`rein_testing::mcp`), and waiting for servers to be ready.

#![allow(dead_code, reason = "each test file uses a part")]

use std::path::PathBuf;
use std::time::Duration;

use rein_mcp::{McpClients, McpConfig, McpTools, Status};
use rein_tools::ToolBackend;

/// The reference server's entry point (installed from npm on first use).
pub fn everything() -> PathBuf {
    rein_testing::mcp::everything_server()
}

/// A config with the reference server as `ev` (stdio), plus `extra` TOML.
pub fn config(extra: &str) -> McpConfig {
    let entry = everything();
    McpConfig::parse(&format!(
        "[mcp.servers.ev]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\nenv_from = [\"PATH\"]\ntimeout_secs = 20\n{extra}",
        entry.display().to_string()
    ))
    .expect("valid config")
}

/// Wait until every server is ready, then take them in at a turn boundary.
pub async fn ready(clients: &McpClients, tools: &McpTools) -> Vec<String> {
    for _ in 0..600 {
        if clients
            .servers()
            .iter()
            .all(|s| s.snapshot().status == Status::Ready)
        {
            return tools.turn_boundary();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let states: Vec<String> = clients
        .servers()
        .iter()
        .map(|s| {
            format!(
                "{}: {:?} {:?}",
                s.name(),
                s.snapshot().status,
                s.snapshot().stderr
            )
        })
        .collect();
    panic!("servers not ready in 30 s: {states:?}");
}
