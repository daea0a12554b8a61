//! The `rein` binary from outside: `wire decode` on captures and garbage,
//! and `chat` with no key, offline, and against a fake server.

#![allow(clippy::unwrap_used)] // Tests fail loudly on purpose.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use rein_testing::{FakeServer, Reply, ScriptedMessage};
use serde_json::{Value, json};

fn rein() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rein"));
    cmd.env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("REIN_OFFLINE")
        .env_remove("REIN_LOG");
    cmd
}

fn run_with_stdin(mut cmd: Command, stdin: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn fixtures() -> Option<PathBuf> {
    let dir = std::env::var("REIN_WIRE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/wire")
        });
    if dir.join("README.md").is_file() {
        return Some(dir);
    }
    if std::env::var("REIN_REQUIRE_FIXTURES").is_ok_and(|v| v == "1") {
        panic!(
            "the wire captures are required but absent at {}",
            dir.display()
        );
    }
    eprintln!(
        "NOTICE: skipping: wire captures not found at {}",
        dir.display()
    );
    None
}

#[test]
fn wire_decode_prints_events_and_a_summary_for_each_api() {
    let Some(dir) = fixtures() else { return };
    for (api, file, tool, args) in [
        (
            "anthropic",
            "anthropic-messages/anthropic-sdk-python__text-then-tool-use.sse",
            "get_weather",
            json!({"location": "Paris"}),
        ),
        (
            "openai-chat",
            "openai-chat/openai-python__single-tool-call-strict.sse",
            "GetWeatherArgs",
            json!({"city": "Edinburgh", "country": "UK", "units": "c"}),
        ),
        (
            "openai-responses",
            "openai-responses/vercel-ai__azure-function-call-arguments.sse",
            "weather",
            json!({"location": "San Francisco"}),
        ),
    ] {
        let out = rein()
            .args(["wire", "decode", "--api", api])
            .arg(dir.join(file))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{api}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines = lines(&out);
        assert!(lines.len() > 3);
        assert!(lines.iter().any(|l| l["type"] == "tool_call_delta"));
        let summary = lines.last().unwrap();
        assert_eq!(summary["type"], "summary");
        assert_eq!(summary["tool_calls"][0]["name"], tool);
        assert_eq!(summary["tool_calls"][0]["arguments"], args);
        assert_eq!(summary["stop_reason"], "tool_use");
        assert!(summary["usage"]["output"].as_u64().unwrap() > 0);
    }
}

#[test]
fn wire_decode_reads_stdin() {
    let body = ScriptedMessage::text(&["from ", "stdin"]).openai_chat_sse();
    let mut cmd = rein();
    cmd.args(["wire", "decode", "--api", "openai-chat", "-"]);
    let out = run_with_stdin(cmd, body.as_bytes());
    assert!(out.status.success());
    assert_eq!(lines(&out).last().unwrap()["text"], "from stdin");
}

#[test]
fn wire_decode_fails_cleanly_on_garbage() {
    let mut cmd = rein();
    cmd.args(["wire", "decode", "--api", "anthropic", "-"]);
    let out = run_with_stdin(cmd, b"data: \x00\x01 this is not json\n\n");
    assert_eq!(out.status.code(), Some(1));
    let lines = lines(&out);
    let error = lines.last().unwrap();
    assert_eq!(error["type"], "error");
    assert_eq!(error["code"], "stream_malformed");
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[stream_malformed]"));

    // A body with no events at all is a truncated stream.
    let mut cmd = rein();
    cmd.args(["wire", "decode", "--api", "openai-responses", "-"]);
    let out = run_with_stdin(cmd, b"hello, I am not SSE at all");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[stream_truncated]"));

    // Invalid UTF-8 inside a field.
    let mut cmd = rein();
    cmd.args(["wire", "decode", "--api", "openai-chat", "-"]);
    let out = run_with_stdin(cmd, b"data: \xff\xfe\n\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[stream_malformed]"));

    let out = rein()
        .args(["wire", "decode", "--api", "grpc", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[invalid_input]"));

    let out = rein()
        .args(["wire", "decode", "--api", "anthropic", "/no/such/file"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[invalid_input]"));
}

#[test]
fn chat_without_a_key_explains_and_offers_the_scripted_model() {
    let mut cmd = rein();
    cmd.arg("chat");
    let out = run_with_stdin(cmd, b"n\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ANTHROPIC_API_KEY") && err.contains("OPENAI_API_KEY"),
        "{err}"
    );
    assert!(err.contains("offline scripted model"), "{err}");
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("error[missing_api_key]"));

    let mut cmd = rein();
    cmd.arg("chat");
    let out = run_with_stdin(cmd, b"\nhello there\nhelp\n/exit\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("Hello! I am rein's offline scripted model."),
        "{said}"
    );
    assert!(
        said.contains("set ANTHROPIC_API_KEY or OPENAI_API_KEY"),
        "{said}"
    );
}

#[test]
fn chat_scripted_one_shot() {
    let out = rein()
        .args(["chat", "--scripted", "-p", "what is rein?"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("You said: \"what is rein?\""), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_streams_from_an_openai_compatible_server() {
    let message = ScriptedMessage::text(&["Paris ", "is the ", "capital."]);
    let server = FakeServer::start(vec![Reply::sse(message.openai_chat_sse())])
        .await
        .unwrap();
    let url = format!("{}/v1", server.base_url());
    let out = tokio::task::spawn_blocking(move || {
        rein()
            .args([
                "chat",
                "--base-url",
                &url,
                "--model",
                "local",
                "-p",
                "capital of France?",
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Paris is the capital."
    );
    let sent = server.requests()[0].json();
    assert_eq!(sent["model"], "local");
    assert_eq!(
        sent["messages"].as_array().unwrap().last().unwrap()["content"],
        "capital of France?"
    );
    // A compatible server gets the field every server knows.
    assert_eq!(sent["max_tokens"], 4096);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rein_offline_opens_no_socket() {
    let server = FakeServer::start(vec![Reply::sse(
        ScriptedMessage::text(&["x"]).anthropic_sse(),
    )])
    .await
    .unwrap();
    let url = server.base_url();
    let out = tokio::task::spawn_blocking(move || {
        rein()
            .env("REIN_OFFLINE", "1")
            .env("ANTHROPIC_API_KEY", "sk-offline-test")
            .args([
                "chat",
                "--provider",
                "anthropic",
                "--base-url",
                &url,
                "-p",
                "hi",
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error[offline]"), "{err}");
    assert!(!err.contains("sk-offline-test"));
    assert_eq!(server.connections(), 0);
}
