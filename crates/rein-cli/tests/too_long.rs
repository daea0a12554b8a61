//! A conversation longer than the server's window, through `rein chat`
//! against a loopback server that refuses any request over its window with
//! each API's own too-long answer — and counts tokens more densely than
//! rein does (a byte in three, where rein estimates one in three and a
//! half), so rein's own count is never exact.
//!
//! With the window stated (`/props`), no request is ever over the line.
//! With it unknown, the first refusal is followed by one compaction and a
//! retry that succeeds, recorded in the log; a refusal after that retry
//! ends the turn naming the setting.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rein_testing::{FakeServer, RecordedRequest, Reply, ScriptedCall, ScriptedMessage};
use serde_json::json;

use crate::common;

/// The wire API a server speaks, and its too-long answer.
#[derive(Clone, Copy, Debug)]
enum Api {
    LlamaCpp,
    OpenAi,
    Anthropic,
    /// OpenAI Responses: the stream fails `context_length_exceeded`,
    /// stating no numbers (Codex's recorded stream).
    Responses,
}

impl Api {
    /// The answer to a request counted at `tokens` over a window of `limit`,
    /// byte for byte as each server words it.
    fn too_long(self, tokens: usize, limit: usize) -> Reply {
        let body = match self {
            Api::LlamaCpp => json!({"error": {
                "code": 400,
                "message": format!("request ({tokens} tokens) exceeds the available context size ({limit} tokens), try increasing it"),
                "type": "exceed_context_size_error",
                "n_prompt_tokens": tokens,
                "n_ctx": limit,
            }}),
            Api::OpenAi => json!({"error": {
                "message": format!("This model's maximum context length is {limit} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."),
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }}),
            Api::Anthropic => json!({"type": "error", "error": {
                "type": "invalid_request_error",
                "message": format!("prompt is too long: {tokens} tokens > {limit} maximum"),
            }}),
            Api::Responses => {
                let dir = rein_testing::fixtures::wire_dir().expect("the wire captures");
                let recorded = dir
                    .join("openai-responses/codex-test__codex-response-failed-context-window.sse");
                return Reply::sse(std::fs::read_to_string(recorded).unwrap());
            }
        };
        Reply::status(400, body.to_string())
    }

    fn sse(self, message: &ScriptedMessage) -> Reply {
        Reply::sse(match self {
            Api::Anthropic => message.anthropic_sse(),
            Api::Responses => message.openai_responses_sse(),
            Api::LlamaCpp | Api::OpenAi => message.openai_chat_sse(),
        })
    }

    /// `rein chat`'s provider flags for a server at `base`.
    fn flags(self, base: &str) -> Vec<String> {
        let flags: &[&str] = match self {
            Api::LlamaCpp => &["--base-url", &format!("{base}/v1")],
            Api::OpenAi => &[
                "--provider",
                "openai-chat",
                "--base-url",
                &format!("{base}/v1"),
            ],
            Api::Anthropic => &["--provider", "anthropic", "--base-url", base],
            Api::Responses => &[
                "--provider",
                "openai-responses",
                "--base-url",
                &format!("{base}/v1"),
            ],
        };
        let mut flags: Vec<String> = flags.iter().map(|s| (*s).to_owned()).collect();
        flags.extend(["--model".into(), "m".into()]);
        flags
    }
}

/// The server's count of a request: a token per three bytes of its body.
fn tokens_of(request: &RecordedRequest) -> usize {
    request.body.len() / 3
}

/// What the server saw: requests refused, the largest it served.
#[derive(Default)]
struct Seen {
    refused: AtomicUsize,
    largest_served: AtomicUsize,
    /// Summary requests that asked for the record in the API's own
    /// structured output (`response_format` of an OpenAI Chat server).
    summaries_with_schema: AtomicUsize,
}

/// A server of `api` with a window of `limit` tokens: a model reading
/// `files` files one a step, then answering; a summary request (one
/// without tools) is answered with a record.
fn limited(server: &FakeServer, api: Api, limit: usize, files: usize) -> Arc<Seen> {
    let seen = Arc::new(Seen::default());
    let steps = AtomicUsize::new(0);
    let counts = seen.clone();
    server.respond_with(Arc::new(move |request, _| {
        let tokens = tokens_of(request);
        // Anthropic's own count, asked near a line.
        if request.path.ends_with("/count_tokens") {
            return Reply::status(200, json!({"input_tokens": tokens}).to_string());
        }
        if tokens >= limit {
            counts.refused.fetch_add(1, Ordering::SeqCst);
            return api.too_long(tokens, limit);
        }
        counts.largest_served.fetch_max(tokens, Ordering::SeqCst);
        let body = request.json();
        if body
            .get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
        {
            if body["response_format"]["json_schema"]["name"] == "compaction_summary" {
                counts.summaries_with_schema.fetch_add(1, Ordering::SeqCst);
            }
            let record = json!({
                "goal": "read the files", "done": ["The files were read one by one."],
                "files_changed": [], "checks": [], "facts": [], "next": "",
            });
            return api.sse(&ScriptedMessage::text(&[&record.to_string()]));
        }
        let step = steps.fetch_add(1, Ordering::SeqCst);
        let message = if step < files {
            ScriptedMessage::text(&[]).with_call(
                ScriptedCall::to("read_file", json!({"path": format!("f{step}.txt")}))
                    .id(&format!("c{step}")),
            )
        } else {
            ScriptedMessage::text(&["Read them all."])
        };
        api.sse(&message)
    }));
    seen
}

/// A folder of `files` files of about 3,000 bytes each, every line its own.
fn folder(files: usize) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for i in 0..files {
        let text: String = (0..60)
            .map(|line| format!("file {i} line {line}: the quick brown fox jumps\n"))
            .collect();
        std::fs::write(root.path().join(format!("f{i}.txt")), text).unwrap();
    }
    root
}

/// `rein chat -p` on `root` with `flags`, the API keys a hosted API needs
/// set to a test value; its output and the session's exported log.
async fn chat(root: &std::path::Path, flags: Vec<String>) -> (std::process::Output, String) {
    let root = root.to_owned();
    tokio::task::spawn_blocking(move || {
        let home = tempfile::tempdir().unwrap();
        let out = common::rein_at(home.path())
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .env("OPENAI_API_KEY", "sk-test")
            .arg("chat")
            .args(&flags)
            .arg("--root")
            .arg(&root)
            .args(["-p", "read every file, one at a time"])
            .output()
            .unwrap();
        let named = String::from_utf8_lossy(&out.stderr).contains("rein chat --resume ");
        let export = match named.then(|| common::session_of(&out)) {
            Some(session) => String::from_utf8_lossy(
                &common::rein_at(home.path())
                    .args(["sessions", "export", &session])
                    .output()
                    .unwrap()
                    .stdout,
            )
            .into_owned(),
            None => String::new(),
        };
        (out, export)
    })
    .await
    .unwrap()
}

const FILES: usize = 8;

/// With llama.cpp's `/props` stating the window, rein keeps every request
/// under it — the conversation is three times the window — by its own
/// count, and the server never refuses one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_window_stated_no_request_is_over_the_line() {
    let limit = 4096;
    let server = FakeServer::start(vec![]).await.unwrap();
    server.answer_get(
        "/props",
        200,
        json!({"default_generation_settings": {"n_ctx": limit}}).to_string(),
    );
    let seen = limited(&server, Api::LlamaCpp, limit, FILES);
    let root = folder(FILES);
    let (out, export) = chat(root.path(), Api::LlamaCpp.flags(&server.base_url())).await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(seen.refused.load(Ordering::SeqCst), 0, "{said}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Read them all."),
        "{said}"
    );
    assert!(
        export.contains("compaction.created"),
        "never compacted: {export}"
    );
    // The summary was asked in llama.cpp's structured output and kept.
    assert!(seen.summaries_with_schema.load(Ordering::SeqCst) > 0);
    assert!(export.contains(r#""outcome":"kept""#), "{export}");
}

/// With the window unknown (no `/props`; rein works in its conservative
/// 8,192), each API's too-long answer is followed by one compaction and a
/// retry that succeeds; the refusal and what was learned are in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_as_too_long_is_compacted_and_asked_once_more() {
    if rein_testing::fixtures::wire_dir().is_none() {
        return;
    }
    for api in [Api::LlamaCpp, Api::OpenAi, Api::Anthropic, Api::Responses] {
        let limit = 4096;
        let server = FakeServer::start(vec![]).await.unwrap();
        let seen = limited(&server, api, limit, FILES);
        let root = folder(FILES);
        let mut flags = api.flags(&server.base_url());
        // A hosted API's known window is far larger than this server's.
        if !matches!(api, Api::LlamaCpp) {
            flags.extend(["--window".into(), "200000".into()]);
        }
        let (out, export) = chat(root.path(), flags).await;
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{api:?}: {said}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Read them all."),
            "{api:?}: {said}"
        );
        assert_eq!(
            seen.refused.load(Ordering::SeqCst),
            1,
            "{api:?}: one refusal, then requests that fit: {said}"
        );
        assert!(
            said.contains("refused the request as too long"),
            "{api:?}: {said}"
        );
        assert!(
            export.contains("\"refused\""),
            "{api:?}: the refusal is not in the log"
        );
        // Responses' failure states no window: rein works in less than
        // the refused request.
        if !matches!(api, Api::Responses) {
            assert!(
                export.contains(&format!("\"limit\":{limit}")),
                "{api:?}: the stated window is not in the log"
            );
        }
        assert!(
            export.contains("\"trigger\":\"refused\""),
            "{api:?}: no compaction set off by the refusal"
        );
    }
}

/// A server that refuses even what fits its own stated window: the retry
/// is refused too, and the turn ends
/// `context_window_exceeded` naming `[agent.compaction] window`, after
/// exactly two requests of the conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_refusal_ends_the_turn_naming_the_setting() {
    let server = FakeServer::start(vec![]).await.unwrap();
    let refusals = Arc::new(AtomicUsize::new(0));
    let counted = refusals.clone();
    server.respond_with(Arc::new(move |request, _| {
        if request.json().get("tools").is_some() {
            counted.fetch_add(1, Ordering::SeqCst);
        }
        Api::LlamaCpp.too_long(tokens_of(request), 8192)
    }));
    let root = folder(1);
    let (out, _) = chat(root.path(), Api::LlamaCpp.flags(&server.base_url())).await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("context_window_exceeded"), "{said}");
    assert!(said.contains("[agent.compaction] window"), "{said}");
    assert_eq!(refusals.load(Ordering::SeqCst), 2, "{said}");
}
