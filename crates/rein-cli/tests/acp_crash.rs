//! `rein acp` killed outright while its write waits for the editor's
//! person. An ACP session is rein's own conversation, recorded in its own
//! root, and `rein acp` cannot load a session again (`loadSession`: false):
//! its question stays the person's to decide from another surface, as a
//! killed chat's does. A "yes" from `rein approve` is recorded, not run;
//! the conversation goes on only where a person resumes it (`rein chat
//! --resume`), in the session's root whatever the current directory, and
//! the write runs once.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

/// `rein acp --scripted` asked to write notes.txt in `work`, killed once it
/// asks the editor; the session's id.
fn killed_while_asking(home: &std::path::Path, work: &std::path::Path) -> String {
    let mut editor = common::acp::Editor::start(home, work);
    let mut session = String::new();
    loop {
        let message = editor.next();
        if message["id"] == 2 {
            session = message["result"]["sessionId"].as_str().unwrap().to_owned();
            editor.prompt(&message["result"]["sessionId"], "write notes.txt");
        }
        if message["method"] == "session/request_permission" {
            break;
        }
    }
    // Killed outright while the editor is asked: no goodbye.
    editor.child.kill().unwrap();
    editor.child.wait().unwrap();
    session
}

#[test]
fn a_question_of_a_killed_rein_acp_is_the_persons_and_runs_once_where_they_resume() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let session = killed_while_asking(home.path(), work.path());
    assert!(!work.path().join("notes.txt").exists());

    // Listed for the person, never blind, and decided from another surface.
    let listed = common::rein_at(home.path())
        .args(["approve", &session])
        .output()
        .unwrap();
    let text = common::stdout(&listed);
    // `AGENT TOOL APPROVAL (CLASS)`, then what the call does.
    let approval = text
        .lines()
        .find(|l| l.contains("write_file"))
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap_or_else(|| panic!("not listed:\n{text}"))
        .to_owned();
    assert!(text.contains("notes.txt"), "{text}");
    let yes = common::rein_at(home.path())
        .args(["approve", &session, &approval, "yes"])
        .output()
        .unwrap();
    assert!(yes.status.success(), "{}", common::stderr(&yes));
    assert!(
        common::stdout(&yes).contains(&format!("rein chat --resume {session}")),
        "{}",
        common::stdout(&yes)
    );
    // Recorded, not run: nobody drives the session.
    assert!(!work.path().join("notes.txt").exists());

    // Resumed by the person from another folder: in the session's root.
    let mut cmd = common::rein_at(home.path());
    cmd.current_dir(elsewhere.path())
        .args(["chat", "--scripted", "--resume", &session]);
    let out = common::run_with_stdin(cmd, b"/exit\n");
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(
        work.path().join("notes.txt").exists(),
        "{}",
        common::stderr(&out)
    );
    assert!(!elsewhere.path().join("notes.txt").exists());

    // One result for the call, nothing left waiting or open.
    let after = common::rein_at(home.path())
        .args(["approve", &session])
        .output()
        .unwrap();
    assert!(
        common::stdout(&after).contains("nothing waits"),
        "{}",
        common::stdout(&after)
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = rein::sessions::SqliteStore::open(home.path().join("rein.db"))
            .await
            .unwrap();
        let log = rein::sessions::read_all(&store, &session).await.unwrap();
        let open = rein::sessions::recovery::dangling(&log);
        assert!(open.is_clean(), "{open:?}");
        // The scripted model reads first (not found), then writes: each
        // call has its one result, and the write one that says it ran.
        let results: Vec<&rein::sessions::Event> = log
            .iter()
            .map(|e| &e.event)
            .filter(|e| matches!(e, rein::sessions::Event::ToolResult { .. }))
            .collect();
        let called = log
            .iter()
            .filter(|e| matches!(e.event, rein::sessions::Event::ToolCalled { .. }))
            .count();
        assert_eq!((called, results.len()), (2, 2), "{log:?}");
        assert!(
            matches!(
                results[1],
                rein::sessions::Event::ToolResult {
                    status: rein::sessions::ToolStatus::Ok,
                    ..
                }
            ),
            "{log:?}"
        );
    });
}
