//! Hosted sessions that stay for more turns (`rein agents run --keep-open`),
//! on the real programs (npm, pinned: `rein_testing::clis`) against
//! loopback model stand-ins these tests own, whose model answers each
//! request "Noted: " and the person's last words:
//! - Claude Code (stream-json): a line typed when attached and `rein say`
//!   each start the next turn in the same conversation; a stop between
//!   turns ends the session as finished.
//! - Codex's app server: words posted through `rein serve`'s API (the
//!   page's path) between turns start a turn in the same thread; the
//!   session ends at its idle limit.
//! - An ACP agent (Claude Code through Zed's adapter) hears no words while
//!   its prompt runs: a viewer's line and `rein say` are queued, and start
//!   the next prompt when the first is answered.
//!
//! Each turn is recorded as a turn of the session (its prompt, its parent,
//! its reply), and each answer is printed as its turn closes.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::hosted::{Buf, capture, text};
use rein_testing::{FakeServer, RecordedRequest, Reply, ScriptedMessage};
use serde_json::{Value, json};

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The person's last words in a request: the last text of its last
/// message that is not a harness's own context (`<…>`).
fn last_words(items: Option<&Vec<Value>>) -> String {
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
async fn noting_messages(gate: Option<Arc<tokio::sync::Notify>>) -> FakeServer {
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
async fn noting_responses() -> FakeServer {
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
struct Kept {
    child: Child,
    out: Buf,
    err: Buf,
    session: String,
}

impl Kept {
    /// Start `cmd` (its terminal silent) until it names its session.
    fn start(mut cmd: Command) -> Kept {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = capture(child.stdout.take().unwrap());
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        let session = loop {
            let line = lines.next().unwrap().unwrap();
            seen.push_str(&line);
            seen.push('\n');
            if line.contains("rein agents attach ") {
                break common::hosted::attach_id(&line);
            }
        };
        let err: Buf = Arc::new(std::sync::Mutex::new(seen.into_bytes()));
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
            out,
            err,
            session,
        }
    }

    /// Wait until its stdout has `words`.
    fn answered(&self, words: &str) {
        wait_until(&format!("the answer {words:?}"), || {
            text(&self.out).contains(words)
        });
    }

    /// Wait for it to end: its status, stdout and stderr.
    async fn end(mut self) -> (bool, String, String) {
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
fn say(home: &Path, session: &str, words: &str) {
    let said = common::rein_at(home)
        .args(["say", session, words])
        .output()
        .unwrap();
    assert!(said.status.success(), "{}", common::stderr(&said));
}

/// A viewer attached from another process as `name`, its status gathered.
fn attach(home: &Path, session: &str, name: &str) -> (Child, Buf) {
    let mut viewer = common::rein_at(home)
        .args(["agents", "attach", session, "--as", name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = capture(viewer.stderr.take().unwrap());
    let _out = capture(viewer.stdout.take().unwrap());
    wait_until("the viewer attached", || {
        text(&status).contains(&format!("attached as {name}#"))
    });
    (viewer, status)
}

/// Type `line` and Enter into an attached viewer.
fn type_line(viewer: &mut Child, line: &str) {
    let keys = viewer.stdin.as_mut().unwrap();
    keys.write_all(format!("{line}\r").as_bytes()).unwrap();
    keys.flush().unwrap();
}

/// The session's turns as recorded: (prompt, has a parent, reply).
async fn turns(home: &Path, session: &str) -> Vec<(String, bool, Option<String>)> {
    let store = rein::sessions::SqliteStore::open(home.join("rein.db"))
        .await
        .unwrap();
    let mut turns: Vec<(String, bool, Option<String>)> = Vec::new();
    for e in rein::sessions::read_all(&store, session).await.unwrap() {
        match e.event {
            rein::sessions::Event::TurnStarted { prompt, parent, .. } => {
                turns.push((prompt, parent.is_some(), None));
            }
            rein::sessions::Event::TurnFinished { reply, .. } => {
                turns.last_mut().unwrap().2 = reply;
            }
            _ => {}
        }
    }
    turns
}

fn turn(prompt: &str, child: bool) -> (String, bool, Option<String>) {
    (prompt.to_owned(), child, Some(format!("Noted: {prompt}")))
}

/// The bodies of the stand-in's requests that carry `words`.
fn asked_with(server: &FakeServer, words: &str) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .filter(|b| b.contains(words))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_kept_open_takes_a_turn_from_an_attached_line_and_from_rein_say() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let server = noting_messages(None).await;
    let mut cmd = common::rein_at(home.path());
    cmd.current_dir(work.path())
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test-NOT-A-KEY")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args(["agents", "run", "claude", "--prompt", "first question"])
        .args(["--keep-open", "120", "--timeout", "300"])
        .args(["--env", "ANTHROPIC_BASE_URL", "--env", "ANTHROPIC_API_KEY"])
        .args(["--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "--"])
        .arg(rein_testing::clis::claude_code())
        .args(["-p", "--output-format", "stream-json", "--verbose"]);
    let run = Kept::start(cmd);
    let (home_path, session) = (home.path(), run.session.clone());
    run.answered("Noted: first question");

    // Between turns, a viewer's line starts the next one.
    let (mut viewer, status) = attach(home_path, &session, "bob");
    type_line(&mut viewer, "second question");
    wait_until("the viewer was told it starts a turn", || {
        text(&status).contains("said: it starts the agent's next turn")
    });
    run.answered("Noted: second question");
    // And so do words said from another process.
    say(home_path, &session, "third question");
    run.answered("Noted: third question");

    // A stop between turns cuts nothing short: the session ends finished.
    let stopped = common::rein_at(home_path)
        .args(["stop", &session])
        .output()
        .unwrap();
    assert!(stopped.status.success(), "{}", common::stderr(&stopped));
    let (ok, stdout, stderr) = run.end().await;
    let _ = viewer.kill();
    let _ = viewer.wait();
    assert!(ok, "{stderr}");
    assert!(stderr.contains("claude finished"), "{stderr}");
    // One conversation: the third request carries the first two.
    let third = asked_with(&server, "third question");
    assert!(
        third
            .iter()
            .any(|b| b.contains("first question") && b.contains("second question")),
        "{third:?}"
    );
    assert_eq!(
        turns(home_path, &session).await,
        [
            turn("first question", false),
            turn("second question", true),
            turn("third question", true)
        ],
        "{stderr}"
    );
    // Each answer printed once, as its turn closed.
    assert_eq!(
        stdout.matches("Noted: first question").count(),
        1,
        "{stdout}"
    );
    assert!(!stderr.contains("NOT-A-KEY") && !stdout.contains("NOT-A-KEY"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_kept_open_takes_a_turn_in_the_same_thread_and_ends_at_its_idle_limit() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let server = noting_responses().await;
    // Not under the system's temporary folder (Codex refuses its helper there).
    let codex_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let provider = format!(
        "model_providers.standin={{name=\"standin\",base_url=\"{}/v1\",env_key=\"STANDIN_KEY\",wire_api=\"responses\"}}",
        server.base_url()
    );
    let mut cmd = common::rein_at(home.path());
    cmd.current_dir(work.path())
        .env("CODEX_HOME", codex_dir.path())
        .env("STANDIN_KEY", "sk-test-NOT-A-KEY")
        .args(["agents", "run", "codex", "--prompt", "first question"])
        .args(["--keep-open", "3", "--timeout", "300"])
        .args(["--env", "CODEX_HOME", "--env", "STANDIN_KEY", "--"])
        .arg(rein_testing::clis::codex())
        .args(["app-server", "-c", "model_provider=\"standin\""])
        .args(["-c", "model=\"gpt-5\"", "-c", &provider]);
    let run = Kept::start(cmd);
    let session = run.session.clone();
    run.answered("Noted: first question");
    // The page's path: words posted to the session through the API.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let token = "a-test-token-of-forty-characters-0123456";
    let (mut serve, base) = common::serve::served(home.path(), work.path(), token, &[]);
    let url = format!("{base}/api/conversations/{session}/steer");
    let posted = tokio::task::spawn_blocking(move || {
        reqwest::blocking::Client::new()
            .post(url)
            .bearer_auth(token)
            .json(&json!({"text": "second question"}))
            .send()
            .unwrap()
            .status()
            .as_u16()
    })
    .await
    .unwrap();
    assert_eq!(posted, 202);
    run.answered("Noted: second question");
    let _ = serve.kill();
    let _ = serve.wait();
    // Nobody says more: the session ends at its idle limit, finished.
    let (ok, stdout, stderr) = run.end().await;
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("no turn for 3 s: the session ends"),
        "{stderr}"
    );
    let second = asked_with(&server, "second question");
    assert!(
        second.iter().any(|b| b.contains("first question")),
        "the second turn is in the same thread: {second:?}"
    );
    assert_eq!(
        turns(home.path(), &session).await,
        [turn("first question", false), turn("second question", true)],
        "{stderr}"
    );
    assert!(!stderr.contains("NOT-A-KEY") && !stdout.contains("NOT-A-KEY"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_agent_hears_words_said_mid_prompt_as_its_next_prompt() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let gate = Arc::new(tokio::sync::Notify::new());
    let server = noting_messages(Some(gate.clone())).await;
    let mut cmd = common::rein_at(home.path());
    cmd.current_dir(work.path())
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test-NOT-A-KEY")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args(["agents", "run", "acp", "--prompt", "first question"])
        .args(["--keep-open", "3", "--timeout", "300"])
        .args(["--env", "ANTHROPIC_BASE_URL", "--env", "ANTHROPIC_API_KEY"])
        .args(["--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "--"])
        .arg("node")
        .arg(rein_testing::clis::claude_code_acp());
    let run = Kept::start(cmd);
    let (home_path, session) = (home.path(), run.session.clone());
    // The first prompt runs (its answer held) when the words are said.
    wait_until("the model was asked", || {
        !asked_with(&server, "first question").is_empty()
    });
    let (mut viewer, status) = attach(home_path, &session, "bob");
    type_line(&mut viewer, "from the viewer");
    wait_until("the viewer was told it is queued", || {
        text(&status).contains("said: queued; it starts the agent's next turn")
    });
    wait_until("the viewer's line was queued", || {
        text(&run.err).contains("(1 waiting)")
    });
    say(home_path, &session, "from rein say");
    wait_until("both were queued", || {
        text(&run.err).contains("(2 waiting)")
    });
    assert!(asked_with(&server, "from the viewer").is_empty());
    gate.notify_one();
    run.answered("Noted: first question");
    // The queued words, in the order said, are the next prompt.
    let next = "from the viewer\n\nfrom rein say";
    run.answered("Noted: from the viewer");
    let (ok, stdout, stderr) = run.end().await;
    let _ = viewer.kill();
    let _ = viewer.wait();
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("no turn for 3 s: the session ends"),
        "{stderr}"
    );
    let recorded = turns(home_path, &session).await;
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    assert_eq!(recorded[0], turn("first question", false));
    assert_eq!((recorded[1].0.as_str(), recorded[1].1), (next, true));
    assert!(
        !asked_with(&server, "from rein say").is_empty(),
        "{stdout}\n{stderr}"
    );
    assert!(!stderr.contains("NOT-A-KEY") && !stdout.contains("NOT-A-KEY"));
}
