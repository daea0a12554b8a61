//! What the tests of the agent definition share: a file written, a model
//! reply scripted, a home whose config denies writes with a hook, the
//! hook's denials counted, the binary run off the runtime.

use std::path::Path;

use rein::sessions::{Event, SqliteStore, Store};
use rein_testing::{Reply, ScriptedCall, ScriptedMessage};
use serde_json::Value;

use super::run_with_stdin;

pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

pub fn call(id: &str, tool: &str, args: Value) -> Reply {
    Reply::sse(
        ScriptedMessage::text(&[])
            .with_call(ScriptedCall::to(tool, args).id(id))
            .openai_chat_sse(),
    )
}

pub fn say(text: &str) -> Reply {
    Reply::sse(ScriptedMessage::text(&[text]).openai_chat_sse())
}

/// A home whose config denies every `write_file` with a command hook, and
/// defines a native `writer` agent (which brings no hook of its own).
pub fn home_with_hook() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("deny-writes.sh");
    write(
        &script,
        "if grep -q '\"tool\":\"write_file\"'; then echo '{\"effect\":\"deny\",\"reason\":\"no writes here\"}'; else echo '{\"effect\":\"continue\"}'; fi\n",
    );
    write(
        &home.path().join("config.toml"),
        &format!(
            "[agent]\ninstructions = \"You help.\"\n\n[[agent.hooks]]\nname = \"deny-writes\"\ncommand = [\"sh\", \"{}\"]\npoints = [\"before_call\"]\n\n[agents.writer]\ninstructions = \"You write files.\"\n",
            script.display()
        ),
    );
    home
}

/// How many `write_file` calls the config's hook denied, in every session
/// of the store.
pub async fn denied(home: &Path) -> usize {
    let store = SqliteStore::open(home.join("rein.db")).await.unwrap();
    let mut count = 0;
    for session in store.list_sessions(100).await.unwrap() {
        let log = rein::sessions::read_all(&store, &session.id).await.unwrap();
        count += log
            .iter()
            .filter(|e| matches!(&e.event, Event::HookRan { hook, effect, .. } if hook == "deny-writes" && *effect == rein::wire::HookDid::Deny))
            .count();
    }
    count
}

pub async fn run(cmd: std::process::Command, stdin: &'static [u8]) -> std::process::Output {
    tokio::task::spawn_blocking(move || run_with_stdin(cmd, stdin))
        .await
        .unwrap()
}

/// `rein chat -p PROMPT` with rein's home at `home`, calling `server`, in
/// `root`, with `flags` before the prompt.
pub async fn chat(
    home: &Path,
    server: &rein_testing::FakeServer,
    root: &Path,
    flags: &[&str],
    prompt: &str,
) -> std::process::Output {
    let url = format!("{}/v1", server.base_url());
    let mut cmd = super::rein_at(home);
    cmd.args(["chat", "--base-url", &url, "--model", "m"])
        .args(flags)
        .args(["-p", prompt, "--root"])
        .arg(root);
    run(cmd, b"").await
}

/// `rein chat` with rein's home at `home`, calling `server`, in `root`,
/// the person typing `stdin`.
pub async fn typed(
    home: &Path,
    server: &rein_testing::FakeServer,
    root: &Path,
    stdin: &'static [u8],
) -> std::process::Output {
    let url = format!("{}/v1", server.base_url());
    let mut cmd = super::rein_at(home);
    cmd.args(["chat", "--base-url", &url, "--model", "m", "--root"])
        .arg(root);
    run(cmd, stdin).await
}
