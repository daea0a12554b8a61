//! No secret in any output, log or event: a secret given to a hosted agent
//! with `--env` (or shaped like a key) is masked in its progress, its
//! answer and its record; the provider's own key, read by the model from a
//! project's `.env`, never reaches the log or the model's next request.
//! A store URL given by `REIN_STORE` is never printed by help.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use crate::common::{rein_at, stderr, stdout};
use rein_testing::{FakeServer, Reply, ScriptedCall, ScriptedMessage};
use serde_json::json;

#[test]
fn a_hosted_agents_secrets_are_masked_everywhere() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let given = "given-secret-4f8a9c2e1b";
    let shaped = "ghp_abcdefghijklmnopqrstuvwxyz0123";
    let lines = [
        json!({"type": "system", "subtype": "init", "model": "claude-test"}),
        json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Bash",
            "input": {"command": "true", "description": format!("use {given} and {shaped}")}}]}}),
        json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}}),
        json!({"type": "result", "subtype": "success", "is_error": false,
            "result": format!("Done with {given}, and {shaped}."), "total_cost_usd": 0.001}),
    ];
    let data = work.path().join("lines.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&data, text).unwrap();
    let sh = work.path().join("fake.sh");
    std::fs::write(&sh, format!("cat '{}'\n", data.display())).unwrap();
    let out = rein_at(home.path())
        .current_dir(work.path())
        .env("MY_API_KEY", given)
        .args([
            "agents",
            "run",
            "claude",
            "--env",
            "MY_API_KEY",
            "--",
            "/bin/sh",
        ])
        .arg(&sh)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("Done with"), "{said}");
    let session = said
        .split("rein agents attach ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap()
        .trim()
        .to_owned();
    let export = stdout(
        &rein_at(home.path())
            .args(["sessions", "export", &session])
            .output()
            .unwrap(),
    );
    assert!(export.contains("Done with"), "{export}");
    for (what, text) in [("the output", &said), ("the record", &export)] {
        assert!(!text.contains(given), "the given secret in {what}: {text}");
        assert!(
            !text.contains(shaped),
            "a key-shaped word in {what}: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_providers_key_read_from_a_project_never_reaches_the_log() {
    let key = "sk-canary-provider-key-77f3e1d2c4b5";
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join(".env"), format!("OPENAI_API_KEY={key}\n")).unwrap();
    let read = ScriptedMessage::text(&[])
        .with_call(ScriptedCall::to("read_file", json!({"path": ".env"})).id("c1"));
    let server = FakeServer::start(vec![
        Reply::sse(read.openai_chat_sse()),
        // The model echoes the key in its own words: kept out of the log too.
        Reply::sse(ScriptedMessage::text(&[&format!("It holds a key: {key}.")]).openai_chat_sse()),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1", server.base_url());
    let home = tempfile::tempdir().unwrap();
    let (home_path, root_path) = (home.path().to_owned(), root.path().to_owned());
    let (out, export) = tokio::task::spawn_blocking(move || {
        let out = rein_at(&home_path)
            .env("OPENAI_API_KEY", key)
            .args(["chat", "--base-url", &url, "--model", "m", "--root"])
            .arg(&root_path)
            .args(["-p", "what is in .env?"])
            .output()
            .unwrap();
        let session = common::session_of(&out);
        let export = stdout(
            &rein_at(&home_path)
                .args(["sessions", "export", &session])
                .output()
                .unwrap(),
        );
        (out, export)
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        export.contains("OPENAI_API_KEY="),
        "the read is recorded: {export}"
    );
    assert!(!export.contains(key), "the key is in the log: {export}");
    let requests = server.requests();
    let next = requests.last().unwrap().json().to_string();
    assert!(
        !next.contains(key),
        "the key went back to the model: {next}"
    );
}

/// A change to `.env` the model never read is answered with the file as it
/// is (`read_first`) — masked as every result is: the key rein holds is
/// neither in the refusal the model reads nor in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_a_refused_change_carries_is_masked_too() {
    let key = "sk-canary-provider-key-5a6b7c8d9e0f";
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join(".env"),
        format!("OPENAI_API_KEY={key}\nDEBUG=1\n"),
    )
    .unwrap();
    let edit = ScriptedMessage::text(&[]).with_call(
        ScriptedCall::to(
            "edit_file",
            json!({"path": ".env", "edits": [{"old_text": "DEBUG=1", "new_text": "DEBUG=0"}]}),
        )
        .id("c1"),
    );
    let server = FakeServer::start(vec![
        Reply::sse(edit.openai_chat_sse()),
        Reply::sse(ScriptedMessage::text(&["Left it."]).openai_chat_sse()),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1", server.base_url());
    let home = tempfile::tempdir().unwrap();
    let (home_path, root_path) = (home.path().to_owned(), root.path().to_owned());
    let (out, export) = tokio::task::spawn_blocking(move || {
        let out = rein_at(&home_path)
            .env("OPENAI_API_KEY", key)
            .args(["chat", "--base-url", &url, "--model", "m", "--root"])
            .arg(&root_path)
            .args(["-p", "turn debug off in .env"])
            .output()
            .unwrap();
        let session = common::session_of(&out);
        let export = stdout(
            &rein_at(&home_path)
                .args(["sessions", "export", &session])
                .output()
                .unwrap(),
        );
        (out, export)
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let refusal = server.requests()[1].json().to_string();
    assert!(refusal.contains("It is read now"), "{refusal}");
    assert!(refusal.contains("DEBUG=1"), "the file is shown: {refusal}");
    assert!(
        !refusal.contains(key),
        "the key went to the model: {refusal}"
    );
    assert!(!export.contains(key), "the key is in the log: {export}");
}

/// A store URL given by the environment may carry a password; help never
/// prints it (clap shows an env var's value beside its flag unless told).
#[test]
fn help_never_prints_the_store_url_from_the_environment() {
    for args in [
        &["--help"][..],
        &["sessions", "list", "--help"],
        &["chat", "--help"],
    ] {
        let out = common::rein()
            .args(args)
            .env(
                "REIN_STORE",
                "postgres://rein:hunter2-canary@db.internal/rein",
            )
            .output()
            .unwrap();
        let shown = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{args:?}: {shown}");
        assert!(shown.contains("REIN_STORE"), "{args:?}: {shown}");
        assert!(!shown.contains("hunter2-canary"), "{args:?}: {shown}");
    }
}
