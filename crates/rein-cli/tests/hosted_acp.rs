//! A real ACP agent hosted by `rein agents run acp`: Claude Code through
//! Zed's adapter (`@zed-industries/claude-code-acp`, npm, pinned:
//! `rein_testing::clis`), against a loopback Messages API stand-in this test
//! owns, whose model asks to write a file. The adapter asks permission
//! through ACP with only the call's id and title; rein's client shows the
//! person the call as it was announced (`edit out.txt`), records the
//! question, and a yes lands the file while a no does not.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

mod common;

use std::path::Path;
use std::sync::Arc;

use rein_testing::{FakeServer, RecordedRequest, Reply, ScriptedCall, ScriptedMessage};
use serde_json::{Value, json};

/// The stand-in: the main request (the one offering `Write`) is answered
/// with a write of `target`; once its result is back, "All done.".
/// Anything else gets a plain answer.
async fn stand_in(target: &Path) -> FakeServer {
    let server = FakeServer::start(Vec::new()).await.unwrap();
    let target = target.display().to_string();
    server.respond_with(Arc::new(move |request: &RecordedRequest, _| {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        if !request.path.starts_with("/v1/messages") || request.path.contains("count_tokens") {
            return Reply::status(200, json!({"input_tokens": 10}).to_string());
        }
        let main = body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "Write"));
        let message = if main && !body.to_string().contains("\"tool_result\"") {
            ScriptedMessage::text(&["Writing it."]).with_call(ScriptedCall::new(
                "toolu_1",
                "Write",
                json!({"file_path": target, "content": "hello from the model\n"}),
                2,
            ))
        } else {
            ScriptedMessage::text(&["All done."])
        };
        if body["stream"] == true {
            return Reply::sse(message.anthropic_sse());
        }
        Reply::status(
            200,
            json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": message.text.concat()}], "stop_reason": "end_turn",
                "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 5}})
            .to_string(),
        )
    }));
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_acp_asks_through_rein_a_yes_lands_and_a_no_does_not() {
    let adapter = rein_testing::clis::claude_code_acp();
    for (answer, lands) in [("y\n", true), ("n\n", false)] {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let target = work.path().join("out.txt");
        let server = stand_in(&target).await;
        let mut cmd = common::rein_at(home.path());
        cmd.current_dir(work.path())
            .env("ANTHROPIC_BASE_URL", server.base_url())
            .env("ANTHROPIC_API_KEY", "sk-ant-test-NOT-A-KEY")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .args(["agents", "run", "acp", "--prompt", "write hello to out.txt"])
            .args(["--env", "ANTHROPIC_BASE_URL", "--env", "ANTHROPIC_API_KEY"])
            .args(["--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "--"])
            .arg("node")
            .arg(&adapter);
        let out =
            tokio::task::spawn_blocking(move || common::run_with_stdin(cmd, answer.as_bytes()))
                .await
                .unwrap();
        let (stdout, stderr) = (common::stdout(&out), common::stderr(&out));
        assert!(out.status.success(), "{stderr}");
        // A no ends the adapter's turn there; a yes runs on to its answer.
        assert_eq!(stdout.contains("All done."), lands, "{stdout}\n{stderr}");
        assert!(
            stderr.contains("the agent asks to run edit: out.txt"),
            "{stderr}"
        );
        assert_eq!(target.is_file(), lands, "answer {answer:?}: {stderr}");
        let session = stderr
            .split("rein agents attach ")
            .nth(1)
            .and_then(|s| s.split('`').next())
            .unwrap()
            .to_owned();
        let store = rein::sessions::SqliteStore::open(home.path().join("rein.db"))
            .await
            .unwrap();
        let events = rein::sessions::read_all(&store, &session).await.unwrap();
        let decided: Vec<(String, String)> = events
            .iter()
            .filter_map(|e| match &e.event {
                rein::sessions::Event::ApprovalDecided { decision, by, .. } => {
                    Some((decision.to_string(), by.clone()))
                }
                _ => None,
            })
            .collect();
        let decision = if lands { "approved" } else { "denied" };
        assert_eq!(
            decided,
            [(decision.to_owned(), "stdin:person".to_owned())],
            "{stderr}"
        );
        assert!(!stderr.contains("NOT-A-KEY") && !stdout.contains("NOT-A-KEY"));
    }
}
