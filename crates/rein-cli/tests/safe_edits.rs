//! Edits a model cannot wreck, through `rein chat` against a loopback
//! model that the test scripts: a change to a file the conversation has not
//! read is refused with a hint before anyone is asked, and asked (and run)
//! once read; a file changed after it was read is refused the same way; a
//! file changed while its approval waits is not overwritten; a write keeps
//! the file's mode and a link as a link, and undo gives both back.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use crate::common::definition::{call, typed};
use crate::common::{rein_at, run_with_stdin, session_in, spawn_with_lines, stderr};
use rein_testing::{FakeServer, Reply, ScriptedCall, ScriptedMessage};
use serde_json::json;

/// A source file of three functions.
const LIB: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n";

fn done() -> Reply {
    Reply::sse(ScriptedMessage::text(&["Done."]).openai_chat_sse())
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.py"), LIB).unwrap();
    dir
}

/// `rein chat` on `server` in `root`, the person typing `stdin`.
async fn chat(server: &FakeServer, home: &Path, root: &Path, stdin: &'static [u8]) -> String {
    let out = typed(home, server, root, stdin).await;
    assert!(out.status.success(), "{}", stderr(&out));
    stderr(&out)
}

fn asked(err: &str) -> usize {
    err.matches("approve? [y/N").count()
}

/// What the model was told about its calls, from the requests it got.
fn told(server: &FakeServer) -> String {
    server
        .requests()
        .iter()
        .map(|r| r.json().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A small model's move — the whole file replaced by a fragment, never
/// having read it — is refused before anyone is asked, and answered with
/// the file as it is now (counted as the read): its next call, the edit of
/// the one function, is asked and runs; the rest of the file is intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_an_unread_file_is_refused_with_a_hint_and_asked_once_read() {
    let server = FakeServer::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "lib.py", "content": "def add(a, b): return a + b\n"}),
        ),
        call(
            "c2",
            "edit_file",
            json!({"path": "lib.py", "edits": [{"old_text": "a - b", "new_text": "b - a"}]}),
        ),
        done(),
    ])
    .await
    .unwrap();
    let (home, root) = (tempfile::tempdir().unwrap(), project());
    let err = chat(&server, home.path(), root.path(), b"fix sub\ny\n/exit\n").await;
    assert_eq!(
        asked(&err),
        1,
        "only the edit after the refusal is asked:\n{err}"
    );
    assert_eq!(err.matches("not_read").count(), 1, "{err}");
    let told = told(&server);
    assert!(told.contains("not_read"), "{told}");
    assert!(
        told.contains("had not been read") && told.contains("It is read now"),
        "the model gets the hint and the file: {told}"
    );
    assert!(told.contains("def mul(a, b)"), "the file as it is: {told}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("lib.py")).unwrap(),
        LIB.replace("a - b", "b - a"),
        "the other functions are intact"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changed_after_it_was_read_must_be_read_again() {
    let server = FakeServer::start(vec![
        call("c1", "read_file", json!({"path": "lib.py"})),
        done(),
        call(
            "c2",
            "write_file",
            json!({"path": "lib.py", "content": "stale\n"}),
        ),
        call("c3", "read_file", json!({"path": "lib.py"})),
        call(
            "c4",
            "write_file",
            json!({"path": "lib.py", "content": "fresh\n"}),
        ),
        done(),
    ])
    .await
    .unwrap();
    let (home, root) = (tempfile::tempdir().unwrap(), project());
    // Between the two turns someone else changes the file: piped input
    // cannot wait, so the second turn starts from a file rewritten by a
    // hook the test owns — a second `rein chat` on the same session.
    let err = chat(&server, home.path(), root.path(), b"read lib.py\n/exit\n").await;
    let session = session_in(&err);
    std::fs::write(root.path().join("lib.py"), "def changed(): pass\n").unwrap();
    let url = format!("{}/v1", server.base_url());
    let (home_path, root_path) = (home.path().to_owned(), root.path().to_owned());
    let out = tokio::task::spawn_blocking(move || {
        let mut cmd = rein_at(&home_path);
        cmd.args([
            "chat",
            "--base-url",
            &url,
            "--model",
            "m",
            "--resume",
            &session,
            "--root",
        ])
        .arg(&root_path);
        run_with_stdin(cmd, b"rewrite it\ny\n/exit\n")
    })
    .await
    .unwrap();
    let err = stderr(&out);
    assert!(err.contains("changed_since_read"), "{err}");
    // The whole-file rewrite says so before its diff.
    assert!(
        err.contains("REWRITES THE WHOLE FILE: replaces 1 line with 1"),
        "{err}"
    );
    assert_eq!(asked(&err), 1, "{err}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("lib.py")).unwrap(),
        "fresh\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changed_while_its_approval_waits_is_not_overwritten() {
    let server = FakeServer::start(vec![
        call("c1", "read_file", json!({"path": "lib.py"})),
        call(
            "c2",
            "write_file",
            json!({"path": "lib.py", "content": "replaced\n"}),
        ),
        done(),
    ])
    .await
    .unwrap();
    let (home, root) = (tempfile::tempdir().unwrap(), project());
    let url = format!("{}/v1", server.base_url());
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--base-url", &url, "--model", "m", "--root"])
        .arg(root.path());
    let (mut child, lines) = spawn_with_lines(cmd);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"replace lib.py\n").unwrap();
    let mut seen = Vec::new();
    // The person is asked; meanwhile someone else edits the file.
    loop {
        let line = lines.recv_timeout(Duration::from_secs(60)).unwrap();
        seen.push(line.clone());
        if line.contains("rein approve") {
            break;
        }
    }
    let theirs = "def add(a, b):\n    return a + b  # someone else's edit\n";
    std::fs::write(root.path().join("lib.py"), theirs).unwrap();
    stdin.write_all(b"y\n/exit\n").unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    seen.extend(lines.iter());
    let err = seen.join("\n");
    assert!(status.success(), "{err}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("lib.py")).unwrap(),
        theirs,
        "the approved diff no longer described the change:\n{err}"
    );
    assert!(
        err.contains("changed_since_approval"),
        "the person is told:\n{err}"
    );
    assert!(
        told(&server).contains("changed_since_approval"),
        "the model is told"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_keeps_the_mode_and_the_link_and_undo_gives_both_back() {
    let server = FakeServer::start(vec![
        call("c1", "read_file", json!({"path": "run.sh"})),
        call(
            "c2",
            "write_file",
            json!({"path": "run.sh", "content": "#!/bin/sh\necho new\n"}),
        ),
        done(),
    ])
    .await
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("bin")).unwrap();
    let script = root.path().join("bin/run.sh");
    std::fs::write(&script, "#!/bin/sh\necho old\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o750)).unwrap();
    std::os::unix::fs::symlink("bin/run.sh", root.path().join("run.sh")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let mode = |p: &Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions())
            & 0o777
    };
    let err = chat(
        &server,
        home.path(),
        root.path(),
        b"update run.sh\ny\n/exit\n",
    )
    .await;
    let link = root.path().join("run.sh");
    assert!(
        std::fs::symlink_metadata(&link).unwrap().is_symlink(),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&script).unwrap(),
        "#!/bin/sh\necho new\n"
    );
    assert_eq!(mode(&script), 0o750, "{err}");
    // Undo: the old content, the same mode, the link still a link.
    let session = session_in(&err);
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--scripted", "--resume", &session]);
    let out = run_with_stdin(cmd, b"/undo\n/exit\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(
        std::fs::read_to_string(&script).unwrap(),
        "#!/bin/sh\necho old\n"
    );
    assert_eq!(mode(&script), 0o750);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_models_near_misses_are_repaired_and_recorded() {
    let raw = |id: &str, name: &str, arguments: &str| {
        Reply::sse(
            ScriptedMessage::text(&[])
                .with_call(ScriptedCall {
                    id: id.into(),
                    name: name.into(),
                    arguments: arguments.into(),
                    fragments: 3,
                })
                .openai_chat_sse(),
        )
    };
    let server = FakeServer::start(vec![
        // A stray prefix and the wrong case; single quotes and a trailing comma.
        raw("c1", "functions.Read_File", "{'path': 'lib.py',}"),
        // A JSON string holding the object; an edit whose text lost its
        // indentation to a tab.
        raw(
            "c2",
            "edit_file",
            &serde_json::to_string(
                &json!({"path": "lib.py", "edits": [{"old_text": "\treturn a - b", "new_text": "\treturn b - a"}]})
                    .to_string(),
            )
            .unwrap(),
        ),
        // Nothing fits two ways: refused, never guessed.
        raw("c3", "file", "{}"),
        done(),
    ])
    .await
    .unwrap();
    let (home, root) = (tempfile::tempdir().unwrap(), project());
    let err = chat(&server, home.path(), root.path(), b"fix sub\ny\n/exit\n").await;
    assert_eq!(
        std::fs::read_to_string(root.path().join("lib.py")).unwrap(),
        LIB.replace("a - b", "b - a"),
        "{err}"
    );
    assert!(
        err.contains("repaired: the tool name `functions.Read_File` was taken as `read_file`"),
        "{err}"
    );
    assert!(err.contains("single quotes, trailing commas"), "{err}");
    assert!(err.contains("a JSON string holding the object"), "{err}");
    assert!(err.contains("tool_not_found"), "{err}");
    // Recorded: the log says what was repaired, and what the model sent.
    let session = session_in(&err);
    let out = rein_at(home.path())
        .args(["sessions", "export", &session])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(log.contains("\"repaired\""), "{log}");
    assert!(log.contains("functions.Read_File"), "{log}");
    assert!(
        log.contains("with whitespace ignored"),
        "the edit says so: {log}"
    );
}
