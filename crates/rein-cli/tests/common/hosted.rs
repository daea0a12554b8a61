//! What the tests of hosted agents share: a loopback Messages API stand-in
//! whose model asks for one tool call, the session a hosted run names, the
//! approvals it recorded, a child's output captured as it comes.

use std::io::{BufRead, Read};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};

use rein_testing::{FakeServer, RecordedRequest, Reply, ScriptedCall, ScriptedMessage};
use serde_json::{Value, json};

/// A stand-in of the Messages API: the main request (the one offering
/// `tool`) is answered with a call of `tool` with `input` — its first chunk
/// held until `gate` opens, when there is one — and once a tool result is
/// back, "All done.". Anything else (a count, a side request) gets a plain
/// answer.
pub async fn messages_stand_in(
    tool: &'static str,
    input: Value,
    gate: Option<Arc<tokio::sync::Notify>>,
) -> FakeServer {
    let server = FakeServer::start(Vec::new()).await.unwrap();
    server.respond_with(Arc::new(move |request: &RecordedRequest, _| {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        if !request.path.starts_with("/v1/messages") || request.path.contains("count_tokens") {
            return Reply::status(200, json!({"input_tokens": 10}).to_string());
        }
        let main = body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == tool));
        let calls = main && !body.to_string().contains("\"tool_result\"");
        let message = if calls {
            ScriptedMessage::text(&["Working on it."]).with_call(ScriptedCall::to(tool, input.clone()).id("toolu_1").in_fragments(2))
        } else {
            ScriptedMessage::text(&["All done."])
        };
        if body["stream"] != true {
            return Reply::status(
                200,
                json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": message.text.concat()}], "stop_reason": "end_turn",
                    "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 5}})
                .to_string(),
            );
        }
        let reply = Reply::sse(message.anthropic_sse());
        match &gate {
            Some(gate) if calls => reply.held_until(0, gate.clone()),
            _ => reply,
        }
    }));
    server
}

/// The session a hosted run names (`rein agents attach ID`).
pub fn attach_id(stderr: &str) -> String {
    stderr
        .split("rein agents attach ")
        .nth(1)
        .and_then(|s| s.split('`').next())
        .unwrap_or_else(|| panic!("no session named in:\n{stderr}"))
        .to_owned()
}

/// The first approval pending in `session`, as `rein approve SESSION`
/// lists it from another process, once one is (for at most two minutes).
pub fn pending_approval(home: &Path, session: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing was asked in {session}"
        );
        let listed = super::rein_at(home)
            .args(["approve", session])
            .output()
            .unwrap();
        let text = super::stdout(&listed);
        if let Some(id) = text.split_whitespace().find(|w| w.starts_with("appr_")) {
            return id.to_owned();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// One approval a session recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The tool asked about.
    pub tool: String,
    /// Its one detail ("" for none).
    pub detail: String,
    /// The decision ("" while pending).
    pub decision: String,
    /// Who decided.
    pub by: String,
}

/// The approvals the session recorded, in order.
pub async fn approvals(home: &Path, session: &str) -> Vec<Recorded> {
    let store = rein::sessions::SqliteStore::open(home.join("rein.db"))
        .await
        .unwrap();
    let mut asked: Vec<Recorded> = Vec::new();
    for e in rein::sessions::read_all(&store, session).await.unwrap() {
        match e.event {
            rein::sessions::Event::ApprovalRequested {
                tool, arguments, ..
            } => asked.push(Recorded {
                tool,
                detail: arguments["detail"].as_str().unwrap_or_default().to_owned(),
                decision: String::new(),
                by: String::new(),
            }),
            rein::sessions::Event::ApprovalDecided { decision, by, .. } => {
                let last = asked.last_mut().unwrap();
                last.decision = decision.to_string();
                last.by = by;
            }
            _ => {}
        }
    }
    asked
}

/// A child's output, gathered as it comes.
pub type Buf = Arc<Mutex<Vec<u8>>>;

/// Gather `stream` on a thread of its own.
pub fn capture(mut stream: impl Read + Send + 'static) -> Buf {
    let buf: Buf = Arc::default();
    let sink = buf.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = stream.read(&mut chunk) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
    });
    buf
}

/// What was gathered, as text.
pub fn text(buf: &Buf) -> String {
    String::from_utf8_lossy(&buf.lock().unwrap()).into_owned()
}

/// `rein agents run claude` on the real CLI in `work` with `prompt` and
/// `options` (before its command), its key and the stand-in's address
/// handed over by name.
#[allow(dead_code, reason = "not every test file hosts Claude Code")]
pub fn claude(
    home: &Path,
    work: &Path,
    server: &FakeServer,
    prompt: &str,
    options: &[&str],
) -> Command {
    let claude = rein_testing::clis::claude_code();
    let mut cmd = super::rein_at(home);
    cmd.current_dir(work)
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test-NOT-A-KEY")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args(["agents", "run", "claude", "--prompt", prompt])
        .args(options)
        .args(["--env", "ANTHROPIC_BASE_URL", "--env", "ANTHROPIC_API_KEY"])
        .args(["--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "--"])
        .arg(claude)
        .args(["-p", "--output-format", "stream-json", "--verbose"]);
    cmd
}

/// `rein agents run codex` on the real Codex's app server in `work` with
/// `prompt` and `options` (before its command), its home `codex_home` and
/// its model provider the stand-in (the test's key handed over by name).
#[allow(dead_code, reason = "not every test file hosts Codex")]
pub fn codex_app(
    (home, work, codex_home): (&Path, &Path, &Path),
    server: &FakeServer,
    prompt: &str,
    options: &[&str],
) -> Command {
    let provider = format!(
        "model_providers.standin={{name=\"standin\",base_url=\"{}/v1\",env_key=\"STANDIN_KEY\",wire_api=\"responses\"}}",
        server.base_url()
    );
    let mut cmd = super::rein_at(home);
    cmd.current_dir(work)
        .env("CODEX_HOME", codex_home)
        .env("STANDIN_KEY", "sk-test-NOT-A-KEY")
        .args(["agents", "run", "codex", "--prompt", prompt])
        .args(options)
        .args(["--env", "CODEX_HOME", "--env", "STANDIN_KEY", "--"])
        .arg(rein_testing::clis::codex())
        .args(["app-server", "-c", "model_provider=\"standin\""])
        .args(["-c", "model=\"gpt-5\"", "-c", &provider]);
    cmd
}

/// A hosted run nobody answers at its terminal: its stdin is kept open and
/// silent.
pub struct Silent {
    /// The `rein agents run` process.
    pub child: Child,
    /// Its stdin, open until dropped.
    pub stdin: Option<ChildStdin>,
    /// Its stderr's lines after the one naming the session.
    pub lines: std::io::Lines<std::io::BufReader<std::process::ChildStderr>>,
    /// The session the run is recorded in.
    pub session: String,
}

/// Start `cmd` with nobody answering, until it names its session.
pub fn silent(mut cmd: Command) -> Silent {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let session = loop {
        let line = lines.next().unwrap().unwrap();
        if line.contains("rein agents attach ") {
            break attach_id(&line);
        }
    };
    Silent {
        child,
        stdin,
        lines,
        session,
    }
}

/// The events a session recorded, in order (its home's embedded store).
#[allow(dead_code, reason = "not every test file reads a hosted record")]
pub async fn recorded(home: &Path, session: &str) -> Vec<rein::sessions::Event> {
    let store = rein::sessions::SqliteStore::open(home.join("rein.db"))
        .await
        .unwrap();
    rein::sessions::read_all(&store, session)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect()
}
