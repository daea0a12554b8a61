//! The real Codex CLI (npm, pinned: `rein_testing::clis`) hosted by `rein
//! agents run codex` through `codex app-server`, against a loopback
//! Responses API stand-in this test owns, whose model asks to run a
//! command. Codex's approval request is a rein approval: recorded, put to
//! the person at the terminal or decided from another process with `rein
//! approve`, and answered back — a yes runs the command, a no does not,
//! and both are in the log.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use rein_testing::{FakeServer, RecordedRequest, Reply, ScriptedCall, ScriptedMessage};
use serde_json::{Value, json};

/// The stand-in: the first request is answered with an `exec_command`
/// that makes `made.txt`; once its output is back, "All done.".
async fn stand_in() -> FakeServer {
    stand_in_held(None).await
}

/// The stand-in, its first answer held until `gate` opens when there is
/// one; a request that carries the words said mid-run is answered "All
/// done." at once.
async fn stand_in_held(gate: Option<Arc<tokio::sync::Notify>>) -> FakeServer {
    let server = FakeServer::start(Vec::new()).await.unwrap();
    server.respond_with(Arc::new(move |request: &RecordedRequest, _| {
        if request.method != "POST" {
            return Reply::status(200, json!({"models": [], "data": []}).to_string());
        }
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let text = body.to_string();
        if text.contains("function_call_output") || text.contains(SAID) {
            return Reply::sse(ScriptedMessage::text(&["All done."]).openai_responses_sse());
        }
        let call = ScriptedMessage::text(&["Making it."]).with_call(
            ScriptedCall::to("exec_command", json!({"cmd": "touch made.txt"}))
                .id("call_1")
                .in_fragments(2),
        );
        let reply = Reply::sse(call.openai_responses_sse());
        match &gate {
            Some(gate) => reply.held_until(0, gate.clone()),
            None => reply,
        }
    }));
    server
}

/// What a person says mid-run.
const SAID: &str = "also count the bananas";

/// `rein agents run codex` on the real CLI's app server in `work`, its
/// key and the stand-in's address handed over by name.
/// Codex's home lives as long as the returned folder.
fn hosted(home: &Path, work: &Path, server: &FakeServer) -> (Command, tempfile::TempDir) {
    // Not under the system's temporary folder: Codex makes the helper its
    // sandbox runs commands through under its home, and refuses to there.
    let codex_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let codex_home = codex_dir.path().to_owned();
    let provider = format!(
        "model_providers.standin={{name=\"standin\",base_url=\"{}/v1\",env_key=\"STANDIN_KEY\",wire_api=\"responses\"}}",
        server.base_url()
    );
    let mut cmd = common::rein_at(home);
    cmd.current_dir(work)
        .env("CODEX_HOME", &codex_home)
        .env("STANDIN_KEY", "sk-test-NOT-A-KEY")
        .args(["agents", "run", "codex", "--prompt", "make made.txt"])
        .args(["--timeout", "120"])
        .args(["--env", "CODEX_HOME", "--env", "STANDIN_KEY", "--"])
        .arg(rein_testing::clis::codex())
        .args(["app-server", "-c", "model_provider=\"standin\""])
        .args(["-c", "model=\"gpt-5\"", "-c", &provider]);
    (cmd, codex_dir)
}

/// The approvals a session recorded: (requested tool, decision, by).
async fn approvals(home: &Path, session: &str) -> Vec<(String, String, String)> {
    common::hosted::approvals(home, session)
        .await
        .into_iter()
        .map(|r| (r.tool, r.decision, r.by))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codexs_command_is_asked_of_the_person_a_yes_runs_it_and_a_no_does_not() {
    for (answer, runs) in [("y\n", true), ("n\n", false)] {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let server = stand_in().await;
        let (cmd, _codex) = hosted(home.path(), work.path(), &server);
        let out =
            tokio::task::spawn_blocking(move || common::run_with_stdin(cmd, answer.as_bytes()))
                .await
                .unwrap();
        let (stdout, stderr) = (common::stdout(&out), common::stderr(&out));
        assert!(out.status.success(), "{stderr}");
        assert!(stdout.contains("All done."), "{stdout}\n{stderr}");
        // The command line itself, never Codex's reason alone.
        assert!(stderr.contains("[rein] the agent asks to run:"), "{stderr}");
        assert!(stderr.contains("touch made.txt"), "{stderr}");
        let outputs: Vec<String> = server
            .requests()
            .iter()
            .map(|r| String::from_utf8_lossy(&r.body).into_owned())
            .filter(|b| b.contains("function_call_output"))
            .collect();
        assert_eq!(
            work.path().join("made.txt").exists(),
            runs,
            "answer {answer:?}: {stderr}\n{outputs:?}"
        );
        let decision = if runs { "approved" } else { "denied" };
        assert_eq!(
            approvals(home.path(), &common::hosted::attach_id(&stderr)).await,
            [(
                "command".to_owned(),
                decision.to_owned(),
                "stdin:person".to_owned()
            )],
            "{stderr}"
        );
        // The model saw the outcome: the command's output, or its refusal.
        let last = server.requests().last().map(|r| r.json().to_string());
        assert!(last.unwrap_or_default().contains("call_1"));
        assert!(!stderr.contains("NOT-A-KEY") && !stdout.contains("NOT-A-KEY"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codexs_question_is_decided_with_rein_approve_from_another_process() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let server = stand_in().await;
    // Nobody answers at the terminal: its stdin stays open and silent.
    let (cmd, _codex) = hosted(home.path(), work.path(), &server);
    let common::hosted::Silent {
        mut child,
        stdin,
        lines,
        session,
    } = common::hosted::silent(cmd);
    let approval = common::hosted::pending_approval(home.path(), &session);
    let said = common::rein_at(home.path())
        .args(["approve", &session, &approval, "yes"])
        .output()
        .unwrap();
    assert!(said.status.success(), "{}", common::stderr(&said));
    let status = child.wait().unwrap();
    drop(stdin);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(status.success(), "{}", rest.join("\n"));
    assert!(
        work.path().join("made.txt").exists(),
        "the approved command ran"
    );
    let recorded = approvals(home.path(), &session).await;
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0].1, "approved");
    assert_eq!(recorded[0].2, "rein approve");
}

/// Words said with `rein say` while Codex's model is answering are
/// recorded and steered into the open turn (`turn/steer`): its next
/// request carries them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_word_said_mid_run_is_steered_into_codexs_open_turn() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let gate = Arc::new(tokio::sync::Notify::new());
    let server = stand_in_held(Some(gate.clone())).await;
    let (mut cmd, _codex) = hosted(home.path(), work.path(), &server);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let session = loop {
        let line = lines.next().unwrap().unwrap();
        if line.contains("rein agents attach ") {
            break common::hosted::attach_id(&line);
        }
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !server.requests().iter().any(|r| r.method == "POST") {
        assert!(
            std::time::Instant::now() < deadline,
            "the model was never asked"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let said = common::rein_at(home.path())
        .args(["say", &session, SAID])
        .output()
        .unwrap();
    assert!(said.status.success(), "{}", common::stderr(&said));
    let store = rein::sessions::SqliteStore::open(home.path().join("rein.db"))
        .await
        .unwrap();
    loop {
        assert!(std::time::Instant::now() < deadline, "never recorded");
        let events = rein::sessions::read_all(&store, &session).await.unwrap();
        if events
            .iter()
            .any(|e| matches!(&e.event, rein::sessions::Event::SteerSaid { text } if text == SAID))
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // The held answer is let go only once Codex took the words into its
    // turn: rein shows them heard when `turn/steer` was accepted.
    let mut shown = Vec::new();
    loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("rein ended first: {shown:?}"))
            .unwrap();
        if line.contains("said: heard at the program's next step") {
            break;
        }
        assert!(!line.contains("did not take it"), "{line}");
        shown.push(line);
    }
    gate.notify_one();
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(status.success(), "{}", rest.join("\n"));
    // The turn's next request carries the words, after the person's own
    // request; nothing was asked or run for the answer they replaced.
    let bodies: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert!(bodies.len() >= 2, "{bodies:?}");
    let last = bodies.last().unwrap();
    assert!(
        last.contains(SAID) && last.contains("make made.txt"),
        "{last}"
    );
    assert!(!bodies[0].contains(SAID));
}

/// A rein chat whose model hands a command to the configured `coder` (the
/// real Codex through its app server): Codex's approval request reaches
/// the parent's person at the parent's terminal and is decided in the
/// helper's own session — a yes runs the command, a no does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_codex_helpers_command_is_asked_of_the_parents_person() {
    for (answer, runs) in [("y\n", true), ("n\n", false)] {
        let home = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let stand = stand_in().await;
        let codex_home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let provider = format!(
            "model_providers.standin={{name=\"standin\",base_url=\"{}/v1\",env_key=\"STANDIN_KEY\",wire_api=\"responses\"}}",
            stand.base_url()
        );
        common::definition::write(
            &home.path().join("config.toml"),
            &format!(
                "[agents.coder]\nkind = \"codex\"\ncommand = \"{}\"\n\
                 args = ['app-server', '-c', 'model_provider=\"standin\"', '-c', 'model=\"gpt-5\"', '-c', '{provider}']\n\
                 env = {{ CODEX_HOME = \"{}\", STANDIN_KEY = \"sk-test-NOT-A-KEY\" }}\n",
                rein_testing::clis::codex().display(),
                codex_home.path().display(),
            ),
        );
        let parent = FakeServer::start(vec![
            common::definition::call(
                "c1",
                "delegate",
                json!({"agent": "coder", "task": "make made.txt"}),
            ),
            common::definition::say("The coder is done."),
        ])
        .await
        .unwrap();
        let url = format!("{}/v1", parent.base_url());
        let mut cmd = common::rein_at(home.path());
        cmd.args(["chat", "--base-url", &url, "--model", "m", "--subagents"])
            .args(["-p", "have the coder make made.txt", "--root"])
            .arg(root.path());
        let out = common::definition::run(cmd, answer.as_bytes()).await;
        let err = common::stderr(&out);
        assert!(out.status.success(), "{err}");
        assert_eq!(
            root.path().join("made.txt").exists(),
            runs,
            "answer {answer:?}: {err}"
        );
        assert!(err.contains("command"), "{err}");
        // Decided in the helper's session, by the parent's terminal.
        let parent_session = common::session_in(&err);
        let store = rein::sessions::SqliteStore::open(home.path().join("rein.db"))
            .await
            .unwrap();
        let events = rein::sessions::read_all(&store, &parent_session)
            .await
            .unwrap();
        let child = events
            .iter()
            .find_map(|e| match &e.event {
                rein::sessions::Event::AgentStarted {
                    session: Some(s), ..
                } => Some(s.clone()),
                _ => None,
            })
            .expect("the helper's session");
        let decision = if runs { "approved" } else { "denied" };
        let recorded = approvals(home.path(), &child).await;
        assert_eq!(recorded.len(), 1, "{recorded:?}\n{err}");
        assert_eq!(
            (recorded[0].1.as_str(), recorded[0].2.as_str()),
            (decision, "terminal")
        );
        assert!(!err.contains("NOT-A-KEY"), "{err}");
    }
}
