//! Delegation and runs by name under the one agent definition, through the
//! `rein` binary: a delegate to a hosted agent (a script speaking Claude
//! Code's stream-json) runs as the child session in the parent's report; a
//! hosted helper is refused under hooks it cannot keep; `rein agents run
//! NAME` runs a native entry whose provider comes from the config alone;
//! spans from `rein --otel URL chat` reach a collector stand-in without the
//! prompt.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use crate::common::definition::{call, chat, home_with_hook, run, say, write};
use crate::common::{rein_at, stderr, stdout};
use rein_testing::FakeServer;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otel_spans_from_a_chat_reach_a_collector_without_the_prompt() {
    let (endpoint, bodies) = rein_testing::otlp_collector().await;
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let canary = "prompt-canary-7f3a";
    let mut cmd = rein_at(home.path());
    cmd.args(["--otel", &endpoint, "chat", "--scripted", "-p"])
        .arg(format!("hello {canary}"))
        .arg("--root")
        .arg(root.path());
    let out = run(cmd, b"").await;
    assert!(out.status.success(), "{}", stderr(&out));
    let got: Vec<u8> = bodies.lock().unwrap().concat();
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.contains("invoke_agent"),
        "a turn's span arrived ({} bytes)",
        got.len()
    );
    assert!(
        text.contains("execute_tool") || text.contains("chat"),
        "model or tool spans too"
    );
    assert!(!text.contains(canary), "no prompt leaves without opting in");
}

/// A script speaking Claude Code's stream-json stands in for the CLI, as
/// the `claude-helper` agent (`more` added to the config); the file its
/// argv is written to.
fn fake_claude(home: &std::path::Path, more: &str) -> std::path::PathBuf {
    let lines = [
        json!({"type": "system", "subtype": "init", "model": "claude-test"}),
        json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "fn main"}}]}}),
        json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "src/main.rs"}]}}),
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "main is in src/main.rs",
            "num_turns": 2, "duration_ms": 300, "total_cost_usd": 0.0042}),
    ];
    let data = home.join("lines.jsonl");
    write(
        &data,
        &lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    );
    let argv_file = home.join("argv.txt");
    let script = home.join("fake-claude.sh");
    write(
        &script,
        &format!(
            "printf '%s\\n' \"$@\" > '{}'\nhead -n 1 >> '{}'\nwhile IFS= read -r line; do printf '%s\\n' \"$line\"; done < '{}'\n",
            argv_file.display(),
            argv_file.display(),
            data.display()
        ),
    );
    write(
        &home.join("config.toml"),
        &format!(
            "{more}[agents.claude-helper]\nkind = \"claude\"\ncommand = \"/bin/sh\"\nargs = [\"{}\", \"-p\"]\n",
            script.display()
        ),
    );
    argv_file
}

/// A model that hands "find main" to `claude-helper`, then answers.
async fn delegating_to_claude() -> FakeServer {
    FakeServer::start(vec![
        call(
            "c1",
            "delegate",
            json!({"agent": "claude-helper", "task": "find main"}),
        ),
        say("Claude says main is in src/main.rs."),
    ])
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_helpers_cost_is_drawn_from_the_parents_budget() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    // The run costs $0.0042; the parent's turn may spend $0.001.
    fake_claude(home.path(), "[agent.budgets]\nmax_cost_usd = 0.001\n\n");
    let server = delegating_to_claude().await;
    let url = format!("{}/v1", server.base_url());
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--base-url", &url, "--model", "m", "--subagents"])
        .args(["-p", "where is main?", "--root"])
        .arg(root.path());
    let out = run(cmd, b"").await;
    // The helper ran; its cost ended the parent's turn before another call.
    assert!(std::fs::read_to_string(home.path().join("argv.txt")).is_ok());
    assert_eq!(server.requests().len(), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the cost budget is spent"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegate_to_a_hosted_agent_runs_as_a_child_session_in_the_parents_report() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let argv_file = fake_claude(home.path(), "");
    let server = delegating_to_claude().await;
    let out = chat(
        home.path(),
        &server,
        root.path(),
        &["--subagents"],
        "where is main?",
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    // The model offered the helper by name and got its answer back.
    let first = server.requests()[0].json().to_string();
    assert!(first.contains("claude-helper"), "{first}");
    let second = server.requests()[1].json().to_string();
    assert!(second.contains("main is in src/main.rs"), "{second}");
    // The task reached the program as its request: its first message.
    let argv = std::fs::read_to_string(&argv_file).unwrap();
    assert!(argv.contains("find main"), "{argv}");
    // The hosted run is the parent's child session, in its report.
    let session = common::session_in(&stderr(&out));
    let mut report = rein_at(home.path());
    report.args(["trace", "report", &session, "--json"]);
    let out = report.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let agents = report["agents"].as_array().cloned().unwrap_or_default();
    assert_eq!(agents.len(), 1, "{report}");
    assert!(agents[0].to_string().contains("main/agent-1"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_helper_is_refused_under_hooks_it_cannot_keep() {
    let home = home_with_hook();
    let root = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[agents.claude-helper]\nkind = \"claude\"\ncommand = \"/bin/false\"\n");
    std::fs::write(&config, text).unwrap();
    let server = FakeServer::start(vec![
        call(
            "c1",
            "delegate",
            json!({"agent": "claude-helper", "task": "write a.txt"}),
        ),
        say("It was refused."),
    ])
    .await
    .unwrap();
    let out = chat(home.path(), &server, root.path(), &["--subagents"], "go").await;
    assert!(out.status.success(), "{}", stderr(&out));
    let told = server.requests()[1].json().to_string();
    assert!(
        told.contains("hooks a hosted agent cannot be held to"),
        "{told}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_run_runs_a_native_agent_by_name_too() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![say("Reviewed.")]).await.unwrap();
    let url = format!("{}/v1", server.base_url());
    // The provider comes from the definition too: no flag names it.
    write(
        &home.path().join("config.toml"),
        &format!(
            "[agent]\nprovider = \"openai-chat\"\nbase_url = \"{url}\"\nmodel = \"m\"\n\n[agents.writer]\ninstructions = \"You write files.\"\n"
        ),
    );
    let mut cmd = rein_at(home.path());
    cmd.args(["agents", "run", "writer", "--prompt", "hello", "--cwd"])
        .arg(root.path());
    let out = run(cmd, b"").await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Reviewed."), "{}", stdout(&out));
    let asked = server.requests()[0].json().to_string();
    assert!(asked.contains("You write files."), "{asked}");
}
