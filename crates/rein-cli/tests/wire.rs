//! `rein wire decode` from outside: the captures of each wire API, stdin,
//! and garbage answered with a coded error.

use std::process::Output;

use crate::common::{rein, run_with_stdin};
use rein_testing::ScriptedMessage;
use serde_json::{Value, json};

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[test]
fn wire_decode_prints_events_and_a_summary_for_each_api() {
    let Some(dir) = rein_testing::fixtures::wire_dir() else {
        return;
    };
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

    // A body that is not SSE at all says so (not "the connection was cut").
    for body in [
        &b"hello, I am not SSE at all"[..],
        b"\x7fELF\x02\x01\x01\x00\x00\x00",
        b"<!DOCTYPE html>\n<html></html>\n",
    ] {
        let mut cmd = rein();
        cmd.args(["wire", "decode", "--api", "openai-responses", "-"]);
        let out = run_with_stdin(cmd, body);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("error[stream_not_sse]"), "{err}");
        assert!(!err.contains('\u{7f}'), "the quote is made visible: {err}");
    }
    // A stream of events cut before its end is truncated.
    let mut cmd = rein();
    cmd.args(["wire", "decode", "--api", "openai-chat", "-"]);
    let out = run_with_stdin(
        cmd,
        b": keep-alive\n\ndata: {\"id\":\"c\",\"choices\":[]}\n\n",
    );
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
