//! What the tests of kept-open hosted sessions share: stand-ins of the
//! model APIs whose model answers "Noted: " and the person's last words, a
//! `rein agents run` whose output is gathered as it comes, and words said
//! and typed to its session from other processes.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::hosted::{Buf, capture, text};
use rein_testing::{FakeServer, RecordedRequest, Reply, ScriptedMessage};
use serde_json::{Value, json};

/// Wait (two minutes at most) until `done`; fails naming `what`.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The person's last words in a request: the last text of its last
/// message that is not a harness's own context (`<…>`).
pub fn last_words(items: Option<&Vec<Value>>) -> String {
    let Some(last) = items.and_then(|m| m.iter().rev().find(|m| m["role"] == "user")) else {
        return String::new();
    };
    let texts: Vec<&str> = match &last["content"] {
        Value::String(s) => vec![s.as_str()],
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => Vec::new(),
    };
    texts
        .into_iter()
        .rev()
        .find(|t| !t.trim_start().starts_with('<'))
        .unwrap_or_default()
        .to_owned()
}

/// A Messages API stand-in answering each main request "Noted: WORDS";
/// the first main request's answer held until `gate` opens, when given.
pub async fn noting_messages(gate: Option<Arc<tokio::sync::Notify>>) -> FakeServer {
    let server = FakeServer::start(Vec::new()).await.unwrap();
    let held = Arc::new(AtomicBool::new(false));
    server.respond_with(Arc::new(move |request: &RecordedRequest, _| {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        if !request.path.starts_with("/v1/messages") || request.path.contains("count_tokens") {
            return Reply::status(200, json!({"input_tokens": 10}).to_string());
        }
        let main = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        let said = format!("Noted: {}", last_words(body["messages"].as_array()));
        if body["stream"] != true {
            return Reply::status(
                200,
                json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": said}], "stop_reason": "end_turn",
                    "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 5}})
                .to_string(),
            );
        }
        let reply = Reply::sse(ScriptedMessage::text(&[said.as_str()]).anthropic_sse());
        match &gate {
            Some(gate) if main && !held.swap(true, Ordering::SeqCst) => {
                reply.held_until(0, gate.clone())
            }
            _ => reply,
        }
    }));
    server
}

/// A Responses API stand-in answering each request "Noted: WORDS".
pub async fn noting_responses() -> FakeServer {
    let server = FakeServer::start(Vec::new()).await.unwrap();
    server.respond_with(Arc::new(move |request: &RecordedRequest, _| {
        if request.method != "POST" {
            return Reply::status(200, json!({"models": [], "data": []}).to_string());
        }
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let said = format!("Noted: {}", last_words(body["input"].as_array()));
        Reply::sse(ScriptedMessage::text(&[said.as_str()]).openai_responses_sse())
    }));
    server
}

/// A `rein agents run` that stays: its output gathered as it comes, the
/// session it names.
pub struct Kept {
    /// The `rein agents run` process.
    pub child: Child,
    /// Its stdout so far.
    pub out: Buf,
    /// Its stderr so far.
    pub err: Buf,
    /// The session it named.
    pub session: String,
    /// Its terminal's input, open and silent while it runs.
    _stdin: Option<std::process::ChildStdin>,
}

impl Kept {
    /// Start `cmd` (its terminal silent) until it names its session.
    pub fn start(cmd: Command) -> Kept {
        let super::hosted::Silent {
            mut child,
            stdin,
            lines,
            session,
        } = super::hosted::silent(cmd);
        let out = capture(child.stdout.take().unwrap());
        let err: Buf = Arc::default();
        let sink = err.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut sink = sink.lock().unwrap();
                sink.extend_from_slice(line.as_bytes());
                sink.push(b'\n');
            }
        });
        Kept {
            child,
            _stdin: stdin,
            out,
            err,
            session,
        }
    }

    /// Wait until its stdout has `words`.
    pub fn answered(&self, words: &str) {
        wait_until(&format!("the answer {words:?}"), || {
            text(&self.out).contains(words)
        });
    }

    /// `rein stop` between turns (from `home`): the session ends as it
    /// finished; its status, stdout and stderr.
    pub async fn stop_between_turns(self, home: &Path) -> (bool, String, String) {
        let stopped = super::rein_at(home)
            .args(["stop", &self.session])
            .output()
            .unwrap();
        assert!(stopped.status.success(), "{}", super::stderr(&stopped));
        self.end().await
    }

    /// Wait for it to end: its status, stdout and stderr.
    pub async fn end(mut self) -> (bool, String, String) {
        let status = tokio::task::spawn_blocking(move || {
            let status = self.child.wait().unwrap();
            (status, self.out, self.err)
        })
        .await
        .unwrap();
        // The gathering threads drain what is left.
        std::thread::sleep(Duration::from_millis(200));
        (status.0.success(), text(&status.1), text(&status.2))
    }
}

/// `rein say SESSION WORDS` from another process.
pub fn say(home: &Path, session: &str, words: &str) {
    let said = super::rein_at(home)
        .args(["say", session, words])
        .output()
        .unwrap();
    assert!(said.status.success(), "{}", super::stderr(&said));
}

/// A viewer attached from another process as `name`: the process, its
/// status lines and its screen, gathered.
pub fn attach(home: &Path, session: &str, name: &str) -> (Child, Buf, Buf) {
    let mut viewer = super::rein_at(home)
        .args(["agents", "attach", session, "--as", name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = capture(viewer.stderr.take().unwrap());
    let screen = capture(viewer.stdout.take().unwrap());
    wait_until("the viewer attached", || {
        text(&status).contains(&format!("attached as {name}#"))
    });
    (viewer, status, screen)
}

/// Type `line` and Enter into an attached viewer.
pub fn type_line(viewer: &mut Child, line: &str) {
    keys(viewer, format!("{line}\r").as_bytes());
}

/// Keystrokes into an attached viewer.
pub fn keys(viewer: &mut Child, bytes: &[u8]) {
    let stdin = viewer.stdin.as_mut().unwrap();
    stdin.write_all(bytes).unwrap();
    stdin.flush().unwrap();
}

/// The bodies of the stand-in's requests that carry `words`.
pub fn asked_with(server: &FakeServer, words: &str) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .filter(|b| b.contains(words))
        .collect()
}
