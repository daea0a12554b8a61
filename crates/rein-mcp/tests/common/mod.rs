//! What the MCP tests share: the reference server installed from npm
//! (pinned to the version the recordings in `shared/fixtures/wire/mcp/`
//! were made with), and configs naming it.

#![allow(dead_code, reason = "each test file uses a part")]

use std::path::PathBuf;
use std::time::Duration;

use rein_mcp::{McpClients, McpConfig, McpTools, Status};
use rein_tools::ToolBackend;

/// The reference server's npm package, at the recordings' version.
pub const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// The reference server's entry point, installed under the target
/// directory on first use (npm; one install per machine, under a lock).
pub fn everything() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-everything");
    let entry = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    std::fs::create_dir_all(&dir).expect("target dir");
    let lock = std::fs::File::create(dir.join(".lock")).expect("lock file");
    lock.lock().expect("lock");
    if !entry.is_file() {
        let status = std::process::Command::new("npm")
            .args([
                "install",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--prefix",
            ])
            .arg(&dir)
            .arg(EVERYTHING)
            .status()
            .expect("npm runs (Node.js is on the machine)");
        assert!(
            status.success(),
            "npm install {EVERYTHING} failed: {status}"
        );
    }
    entry
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
