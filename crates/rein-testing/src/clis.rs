//! Real agent CLIs for tests, installed from npm on first use and pinned:
//! Claude Code ([`claude_code`]), Codex ([`codex`]), Claude Code as an ACP
//! agent ([`claude_code_acp`]), the official ACP SDK ([`acp_sdk`]). Each runs against a loopback stand-in of
//! its model API that the test owns; nothing reaches a real provider.

use std::path::PathBuf;

/// The Claude Code package, pinned.
pub const CLAUDE_CODE: &str = "@anthropic-ai/claude-code@2.1.328";

/// The Claude Code binary (the platform package's native `claude`),
/// installed with npm under the system's temporary directory on first use
/// (one install per machine, under a file lock, so parallel tests share
/// it).
///
/// # Panics
///
/// When npm is missing, the install fails, or the machine is neither
/// x86-64 nor arm64 Linux: a test cannot run without it, and is never
/// skipped.
pub fn claude_code() -> PathBuf {
    let platform = match std::env::consts::ARCH {
        "x86_64" => "linux-x64",
        "aarch64" => "linux-arm64",
        other => panic!("Claude Code ships no binary for {other}"),
    };
    let dir = std::env::temp_dir().join("rein-claude-code-2.1.328");
    let binary = dir.join(format!(
        "node_modules/@anthropic-ai/claude-code-{platform}/claude"
    ));
    crate::mcp::npm_install(&dir, CLAUDE_CODE, &binary);
    binary
}

/// The official ACP TypeScript SDK, pinned.
pub const ACP_SDK: &str = "@agentclientprotocol/sdk@2.4.0";

/// A folder where the official ACP SDK is installed (its `node_modules`
/// inside): a client script copied into it imports the SDK. Installed
/// with npm on first use, once per machine.
///
/// # Panics
///
/// When npm is missing or the install fails: a test cannot run without
/// it, and is never skipped.
pub fn acp_sdk() -> PathBuf {
    let dir = std::env::temp_dir().join("rein-acp-sdk-2.4.0");
    let manifest = dir.join("node_modules/@agentclientprotocol/sdk/package.json");
    crate::mcp::npm_install(&dir, ACP_SDK, &manifest);
    dir
}

/// The Codex package, pinned.
pub const CODEX: &str = "@openai/codex@0.169.0";

/// The Codex binary (the platform package's native `codex`), installed
/// with npm under the system's temporary directory on first use, once per
/// machine.
///
/// # Panics
///
/// When npm is missing, the install fails, or the machine is neither
/// x86-64 nor arm64 Linux: a test cannot run without it, and is never
/// skipped.
pub fn codex() -> PathBuf {
    let (platform, triple) = match std::env::consts::ARCH {
        "x86_64" => ("linux-x64", "x86_64-unknown-linux-musl"),
        "aarch64" => ("linux-arm64", "aarch64-unknown-linux-musl"),
        other => panic!("Codex ships no binary for {other}"),
    };
    let dir = std::env::temp_dir().join("rein-codex-0.169.0");
    let binary = dir.join(format!(
        "node_modules/@openai/codex-{platform}/vendor/{triple}/bin/codex"
    ));
    crate::mcp::npm_install(&dir, CODEX, &binary);
    binary
}

/// Claude Code as an ACP agent (Zed's adapter over the Claude Agent SDK),
/// pinned.
pub const CLAUDE_CODE_ACP: &str = "@zed-industries/claude-code-acp@0.16.2";

/// The adapter's entry point (`node ENTRY` runs the agent on its stdio),
/// installed with npm on first use, once per machine.
///
/// # Panics
///
/// When npm is missing or the install fails: a test cannot run without
/// it, and is never skipped.
pub fn claude_code_acp() -> PathBuf {
    let dir = std::env::temp_dir().join("rein-claude-code-acp-0.16.2");
    let entry = dir.join("node_modules/@zed-industries/claude-code-acp/dist/index.js");
    crate::mcp::npm_install(&dir, CLAUDE_CODE_ACP, &entry);
    entry
}
