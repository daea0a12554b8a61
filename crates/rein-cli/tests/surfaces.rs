//! A person's input from any surface: a chat drives a session in one
//! process while `rein approve`, `rein say` and `rein stop` act on it from
//! others, and the chat goes on.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::path::Path;
use std::time::Duration;

use crate::common::{Chat, rein_at, stderr, stdout};
use rein_testing::{FakeServer, Reply, ScriptedCall, ScriptedMessage};

/// The approval a waiting chat names for other terminals.
fn approval_in(said: &str, session: &str) -> String {
    let marker = format!("rein approve {session} ");
    said.rsplit(&marker)
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        .filter(|_| said.contains(&marker))
        .unwrap_or_else(|| panic!("no approval named:\n{said}"))
        .to_owned()
}

fn rein(home: &Path, args: &[&str]) -> std::process::Output {
    rein_at(home).args(args).output().unwrap()
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    dir
}

#[test]
fn an_approval_waiting_in_a_chat_is_decided_from_another_process() {
    for (answer, written) in [("yes", true), ("no", false)] {
        let home = tempfile::tempdir().unwrap();
        let root = project();
        let mut chat = Chat::start(
            home.path(),
            &["--scripted", "--root", root.path().to_str().unwrap()],
        );
        let session = chat.session();
        chat.send("write later.txt");
        let said = chat.wait_for("approve? [y/N", 1);
        // The chat holds the session; another terminal decides anyway.
        let approval = approval_in(&said, &session);
        let out = rein(home.path(), &["approve", &session, &approval, answer]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stdout(&out).contains("takes it at its next step"),
            "{}",
            stdout(&out)
        );
        // The waiting chat learns of it, says so, and goes on.
        let decided = if written { "approved" } else { "denied" };
        chat.wait_for(&format!("{decided} by rein approve"), 1);
        // The turn goes on: the call gets its one result (the second
        // `<-`: the scripted model reads the file before it writes it).
        chat.wait_for("  <- ", 2);
        assert_eq!(root.path().join("later.txt").exists(), written, "{answer}");
        // A second decision is a conflict, whichever surface makes it.
        let again = rein(home.path(), &["approve", &session, &approval, "yes"]);
        assert!(
            stderr(&again).contains("error[conflict]"),
            "{}",
            stderr(&again)
        );
        // The Enter that finishes the settled prompt is not an answer.
        chat.send("");
        chat.send("/exit");
        let said = chat.finish();
        let log = stdout(&rein(home.path(), &["sessions", "show", &session]));
        assert_eq!(
            log.matches("  approval ").count(),
            2,
            "one request, one decision:\n{log}\n{said}"
        );
        assert!(
            log.contains(&format!("approval {decided} by rein approve")),
            "{log}"
        );
    }
}

#[test]
fn a_stop_from_another_process_ends_the_waiting_turn() {
    let home = tempfile::tempdir().unwrap();
    let root = project();
    let mut chat = Chat::start(
        home.path(),
        &["--scripted", "--root", root.path().to_str().unwrap()],
    );
    let session = chat.session();
    chat.send("delete a.txt");
    chat.wait_for("approve? [y/N", 1);
    let out = rein(home.path(), &["stop", &session]);
    assert!(out.status.success(), "{}", stderr(&out));
    chat.wait_for("stopped by rein stop", 1);
    chat.send("");
    chat.send("/exit");
    chat.finish();
    assert!(root.path().join("a.txt").exists());
    let log = stdout(&rein(home.path(), &["sessions", "show", &session]));
    assert!(log.contains("[turn ended: interrupted]"), "{log}");
    assert!(log.contains("approval stopped by rein stop"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn words_sent_from_another_process_reach_the_running_turn() {
    // The model's first answer (a read) comes late, so the turn is running
    // when `rein say` posts; the words are heard at the next step.
    let read = ScriptedMessage::text(&[])
        .with_call(ScriptedCall::to("read_file", serde_json::json!({"path": "a.txt"})).id("c1"));
    let slow = Reply::sse(read.openai_chat_sse()).delay_before(0, Duration::from_secs(2));
    let done = Reply::sse(ScriptedMessage::text(&["Read it."]).openai_chat_sse());
    let server = FakeServer::start(vec![slow, done]).await.unwrap();
    let url = format!("{}/v1", server.base_url());
    let home = tempfile::tempdir().unwrap();
    let root = project();
    let home_path = home.path().to_owned();
    let root_path = root.path().to_owned();
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
        chat.send("read a.txt");
        // Posted while the first model call is still waiting.
        std::thread::sleep(Duration::from_millis(300));
        let out = rein(&home_path, &["say", &session, "also count its lines"]);
        assert!(out.status.success(), "{}", stderr(&out));
        chat.wait_for("Read it.", 1);
        chat.send("/exit");
        chat.finish();
        let log = stdout(&rein(&home_path, &["sessions", "show", &session]));
        assert!(
            log.contains("(said mid-turn) also count its lines"),
            "{log}"
        );
    })
    .await
    .unwrap();
    // The second model call carried the words.
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert!(sent[1].json().to_string().contains("also count its lines"));
}
