//! A stop stops: it wins over a decision queued after it, it cuts an open
//! model stream at once, and with no turn open it is refused and not kept
//! for the next turn. Each through real `rein` processes on one store.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::path::Path;
use std::time::Duration;

use crate::common::{Chat, rein_at, stderr, stdout};
use rein_testing::{FakeServer, Reply, ScriptedMessage};

fn rein(home: &Path, args: &[&str]) -> std::process::Output {
    rein_at(home).args(args).output().unwrap()
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    dir
}

fn approval_in(said: &str, session: &str) -> String {
    let marker = format!("rein approve {session} ");
    said.rsplit(&marker)
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        .filter(|_| said.contains(&marker))
        .unwrap_or_else(|| panic!("no approval named:\n{said}"))
        .to_owned()
}

#[test]
fn a_stop_wins_over_a_decision_queued_after_it() {
    let home = tempfile::tempdir().unwrap();
    let root = project();
    let mut chat = Chat::start(
        home.path(),
        &["--scripted", "--root", root.path().to_str().unwrap()],
    );
    let session = chat.session();
    chat.send("delete a.txt");
    let said = chat.wait_for("approve? [y/N", 1);
    let approval = approval_in(&said, &session);
    let stopped = rein(home.path(), &["stop", &session]);
    assert!(stopped.status.success(), "{}", stderr(&stopped));
    // Another terminal says yes after the stop: refused, not "decided".
    let approved = rein(home.path(), &["approve", &session, &approval, "yes"]);
    assert!(!approved.status.success(), "{}", stdout(&approved));
    assert!(
        stderr(&approved).contains("error[conflict]") && stderr(&approved).contains("stopped"),
        "{}",
        stderr(&approved)
    );
    // And the chat's own "y", typed at once, does not run the delete either.
    chat.send("y");
    chat.wait_for("stopped by rein stop", 1);
    chat.send("");
    chat.send("/exit");
    chat.finish();
    assert!(root.path().join("a.txt").exists(), "the stopped delete ran");
    let log = stdout(&rein(home.path(), &["sessions", "show", &session]));
    assert!(log.contains("approval stopped by rein stop"), "{log}");
    assert!(!log.contains("approval approved"), "{log}");
    assert!(log.contains("[turn ended: interrupted]"), "{log}");
}

#[test]
fn a_stop_with_no_turn_open_is_refused_and_not_kept() {
    let home = tempfile::tempdir().unwrap();
    let root = project();
    let mut chat = Chat::start(
        home.path(),
        &["--scripted", "--root", root.path().to_str().unwrap()],
    );
    let session = chat.session();
    chat.send("hello");
    finished_turns(home.path(), &session, 1);
    // The chat holds the session between turns; nothing runs.
    let stopped = rein(home.path(), &["stop", &session]);
    assert!(!stopped.status.success(), "{}", stdout(&stopped));
    assert!(
        stderr(&stopped).contains("error[no_open_turn]"),
        "{}",
        stderr(&stopped)
    );
    // The next turn is not ended by it.
    chat.send("read a.txt");
    finished_turns(home.path(), &session, 2);
    chat.send("/exit");
    let said = chat.finish();
    assert!(!said.contains("interrupted"), "{said}");
    let log = stdout(&rein(home.path(), &["sessions", "show", &session]));
    assert!(
        !log.contains("interrupted") && !log.contains("stopped by"),
        "{log}"
    );
}

/// Wait until `session`'s tree shows `n` finished turns.
fn finished_turns(home: &Path, session: &str, n: usize) {
    for _ in 0..600 {
        let tree = stdout(&rein(home, &["sessions", "tree", session]));
        assert!(!tree.contains("[interrupted]"), "{tree}");
        if tree.matches("[finished]").count() >= n {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{session} never finished {n} turns");
}

/// A model whose answer starts, then stalls for ten minutes.
fn stalling() -> Reply {
    let body = ScriptedMessage::text(&["Thinking it", " over"]).openai_chat_sse();
    let parts: Vec<String> = body.split_inclusive("\n\n").map(str::to_owned).collect();
    assert!(parts.len() > 3, "{body}");
    Reply::sse_chunks(parts).delay_before(2, Duration::from_secs(600))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_cuts_an_open_model_stream() {
    let server = FakeServer::start(vec![stalling()]).await.unwrap();
    let url = format!("{}/v1", server.base_url());
    let home = tempfile::tempdir().unwrap();
    let root = project();
    let (home_path, root_path) = (home.path().to_owned(), root.path().to_owned());
    tokio::task::spawn_blocking(move || {
        let mut chat = Chat::start(
            &home_path,
            &[
                "--base-url",
                &url,
                "--model",
                "m",
                "--root",
                root_path.to_str().unwrap(),
            ],
        );
        let session = chat.session();
        chat.send("think");
        chat.wait_for("Thinking it", 1);
        let stopped = rein(&home_path, &["stop", &session]);
        assert!(stopped.status.success(), "{}", stderr(&stopped));
        // Ended by the stop, not by the stream's idle timeout (90 s) or
        // its ten-minute stall: `wait_for` gives up after a minute.
        chat.wait_for("[turn ended: interrupted]", 1);
        chat.send("/exit");
        chat.finish();
        let log = stdout(&rein(&home_path, &["sessions", "show", &session]));
        assert!(log.contains("[turn ended: interrupted]"), "{log}");
        assert!(log.contains("stopped by rein stop"), "{log}");
    })
    .await
    .unwrap();
}

/// Ctrl-C reaches a chat whose stdin is no terminal (a pipe, a script): the
/// chat leaves, saying how to go on, instead of ignoring it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_ends_a_chat_whose_stdin_is_a_pipe() {
    let mut slow = Reply::sse(ScriptedMessage::text(&["Thinking."]).openai_chat_sse());
    slow.chunks[0].delay = Duration::from_secs(60);
    let server = FakeServer::start(vec![slow]).await.unwrap();
    let url = format!("{}/v1", server.base_url());
    let home = tempfile::tempdir().unwrap();
    let root = project();
    let mut child = rein_at(home.path())
        .args(["chat", "--base-url", &url, "--model", "m", "--root"])
        .arg(root.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello\n").unwrap();
    // The turn is waiting on the model's first byte.
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while server.requests().is_empty() {
        assert!(std::time::Instant::now() < until, "the turn never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let ended = tokio::task::spawn_blocking(move || child.wait_with_output());
    let out = tokio::time::timeout(Duration::from_secs(20), ended)
        .await
        .expect("the chat ignored Ctrl-C")
        .unwrap()
        .unwrap();
    drop(stdin);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("rein chat --resume"),
        "{}",
        stderr(&out)
    );
}
