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

use std::path::Path;
use std::sync::Arc;

use common::hosted::text;
use common::kept::{
    Kept, asked_with, attach, noting_messages, noting_responses, say, type_line, wait_until,
};
use serde_json::json;

/// The session's turns as recorded: (prompt, has a parent, reply).
async fn turns(home: &Path, session: &str) -> Vec<(String, bool, Option<String>)> {
    let mut turns: Vec<(String, bool, Option<String>)> = Vec::new();
    for e in common::hosted::recorded(home, session).await {
        match e {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_kept_open_takes_a_turn_from_an_attached_line_and_from_rein_say() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let server = noting_messages(None).await;
    let options = ["--keep-open", "120", "--timeout", "300"];
    let cmd = common::hosted::claude(
        home.path(),
        work.path(),
        &server,
        "first question",
        &options,
    );
    let run = Kept::start(cmd);
    let (home_path, session) = (home.path(), run.session.clone());
    run.answered("Noted: first question");

    // Between turns, a viewer's line starts the next one.
    let (mut viewer, status, _) = attach(home_path, &session, "bob");
    type_line(&mut viewer, "second question");
    wait_until("the viewer was told it starts a turn", || {
        text(&status).contains("said: it starts the agent's next turn")
    });
    run.answered("Noted: second question");
    // And so do words said from another process.
    say(home_path, &session, "third question");
    run.answered("Noted: third question");

    // A stop between turns cuts nothing short: the session ends finished.
    let (ok, stdout, stderr) = run.stop_between_turns(home_path).await;
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
    let cmd = common::hosted::codex_app(
        (home.path(), work.path(), codex_dir.path()),
        &server,
        "first question",
        &["--keep-open", "3", "--timeout", "300"],
    );
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
    let (mut viewer, status, _) = attach(home_path, &session, "bob");
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
