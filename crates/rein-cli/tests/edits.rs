//! Edits a person can read: `rein chat` over a real folder with piped
//! answers — an edit shown as a diff and approved, the same edit denied,
//! an edit that cannot apply refused before anyone is asked, a new file and
//! a delete shown by what they do.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::path::Path;

use crate::common::{rein_at, run_with_stdin, stderr};

fn chat(home: &Path, root: &Path, stdin: &[u8]) -> std::process::Output {
    let mut cmd = rein_at(home);
    cmd.args(["chat", "--scripted", "--root"]).arg(root);
    let out = run_with_stdin(cmd, stdin);
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

fn project(notes: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), notes).unwrap();
    dir
}

const NOTES: &str = "one\ntwo\nTODO: buy tea\nthree\nfour\n";

#[test]
fn an_edit_is_shown_as_a_diff_and_runs_once_approved() {
    let home = tempfile::tempdir().unwrap();
    let root = project(NOTES);
    let out = chat(home.path(), root.path(), b"edit notes.txt\ny\n/exit\n");
    let err = stderr(&out);
    // The person sees the change, not the JSON of the call.
    assert!(err.contains("edit_file notes.txt"), "{err}");
    assert!(err.contains("--- a/notes.txt"), "{err}");
    assert!(err.contains("-TODO: buy tea"), "{err}");
    assert!(err.contains("+DONE: buy tea"), "{err}");
    let asked = &err[..err.find("approve?").unwrap()];
    assert!(!asked.contains("old_text"), "{err}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.txt")).unwrap(),
        "one\ntwo\nDONE: buy tea\nthree\nfour\n"
    );
}

#[test]
fn a_denied_edit_changes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let root = project(NOTES);
    let out = chat(home.path(), root.path(), b"edit notes.txt\nn\n/exit\n");
    assert!(stderr(&out).contains("+DONE: buy tea"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.txt")).unwrap(),
        NOTES
    );
}

#[test]
fn an_edit_that_cannot_apply_is_refused_before_anyone_is_asked() {
    let home = tempfile::tempdir().unwrap();
    // No TODO at all, then two of them.
    for (notes, code) in [
        ("nothing to do\n", "edit_no_match"),
        ("TODO a\nTODO b\n", "edit_ambiguous"),
    ] {
        let root = project(notes);
        let out = chat(home.path(), root.path(), b"edit notes.txt\n/exit\n");
        let err = stderr(&out);
        assert!(!err.contains("approve?"), "{err}");
        assert!(err.contains(code), "{err}");
        assert_eq!(
            std::fs::read_to_string(root.path().join("notes.txt")).unwrap(),
            notes
        );
    }
}

#[test]
fn a_long_diff_shows_its_start_and_the_rest_on_request() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let long: String = (0..100).map(|i| format!("line {i}\n")).collect();
    std::fs::write(root.path().join("big.txt"), &long).unwrap();
    // Without asking for the rest: the start, and how much more there is.
    let out = chat(home.path(), root.path(), b"write big.txt\nn\n/exit\n");
    let err = stderr(&out);
    assert!(err.contains("write_file big.txt"), "{err}");
    assert!(err.contains("-line 0\n"), "{err}");
    assert!(err.contains("more lines"), "{err}");
    assert!(!err.contains("-line 99\n"), "{err}");
    // `d` shows all of it, and the question is asked again.
    let out = chat(home.path(), root.path(), b"write big.txt\nd\nn\n/exit\n");
    let err = stderr(&out);
    assert!(err.contains("-line 99\n"), "{err}");
    assert_eq!(err.matches("approve? [y/N").count(), 2, "{err}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("big.txt")).unwrap(),
        long
    );
    // A new file shows its first lines.
    let out = chat(home.path(), root.path(), b"write new.txt\nn\n/exit\n");
    assert!(stderr(&out).contains("new file, "), "{}", stderr(&out));
    assert!(!root.path().join("new.txt").exists());
}

#[test]
fn a_delete_shows_what_it_removes() {
    let home = tempfile::tempdir().unwrap();
    let root = project(NOTES);
    let out = chat(home.path(), root.path(), b"delete notes.txt\nn\n/exit\n");
    let err = stderr(&out);
    assert!(err.contains("delete_file notes.txt"), "{err}");
    assert!(err.contains("bytes, 5 lines"), "{err}");
    assert!(err.contains("TODO: buy tea"), "{err}");
    assert!(root.path().join("notes.txt").exists());
}

#[test]
fn the_cost_line_shows_only_a_known_price_and_cost_always_answers() {
    let home = tempfile::tempdir().unwrap();
    let root = project(NOTES);
    let out = chat(
        home.path(),
        root.path(),
        b"hello\n/cost\n/help\n/nope\n/exit\n",
    );
    let err = stderr(&out);
    // The scripted model has no price: no line after the turn ...
    assert!(!err.contains("[session cost so far"), "{err}");
    // ... but /cost answers, /help lists the commands, a typo is named.
    assert!(
        err.contains("session cost so far: unknown: no price for this model (1 calls)"),
        "{err}"
    );
    assert!(err.contains("/cost   what this session has cost"), "{err}");
    assert!(err.contains("no command /nope"), "{err}");
    // The banner names the root once.
    assert_eq!(err.matches(" · root ").count(), 1, "{err}");
}

#[test]
fn a_resumed_session_works_in_its_own_root_whatever_the_current_directory() {
    let home = tempfile::tempdir().unwrap();
    let first = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = chat(home.path(), first.path(), b"write one.txt\ny\n/exit\n");
    let session = common::session_of(&out);
    assert!(first.path().join("one.txt").exists());
    // Resumed from another directory, without --root: the session's root.
    let mut cmd = rein_at(home.path());
    cmd.current_dir(elsewhere.path())
        .args(["chat", "--scripted", "--resume", &session]);
    let out = run_with_stdin(cmd, b"write two.txt\ny\n/exit\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(first.path().join("two.txt").exists(), "{}", stderr(&out));
    assert!(!elsewhere.path().join("two.txt").exists());
    // Another --root is refused unless the person confirms it ...
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--scripted", "--resume", &session, "--root"])
        .arg(elsewhere.path());
    let out = run_with_stdin(cmd, b"n\nwrite three.txt\ny\n/exit\n");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("error[invalid_input]"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("the session's root is"),
        "{}",
        stderr(&out)
    );
    assert!(!elsewhere.path().join("three.txt").exists());
    assert!(!first.path().join("three.txt").exists());
    // ... and used when they do.
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--scripted", "--resume", &session, "--root"])
        .arg(elsewhere.path());
    let out = run_with_stdin(cmd, b"y\nwrite four.txt\ny\n/exit\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        elsewhere.path().join("four.txt").exists(),
        "{}",
        stderr(&out)
    );
}

#[test]
fn sessions_are_listed_newest_first_with_their_state() {
    let home = tempfile::tempdir().unwrap();
    let root = project(NOTES);
    // One finished, then one left waiting at its approval (input ended).
    chat(home.path(), root.path(), b"read notes.txt\n/exit\n");
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--scripted", "--root"]).arg(root.path());
    let out = run_with_stdin(
        cmd,
        b"delete notes.txt with a long first line of many words\n",
    );
    let waiting = common::session_of(&out);
    let out = rein_at(home.path())
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    assert_eq!(listed[0]["id"], waiting.as_str());
    assert_eq!(listed[0]["state"], "waiting for approval");
    assert_eq!(
        listed[0]["title"],
        "delete notes.txt with a long first line of…"
    );
    assert_eq!(listed[1]["state"], "finished");
    assert_eq!(listed[1]["title"], "read notes.txt");
}

#[test]
fn undo_reverts_changes_newest_first_and_tells_the_model() {
    let home = tempfile::tempdir().unwrap();
    let root = project(NOTES);
    let out = chat(
        home.path(),
        root.path(),
        b"edit notes.txt\ny\nwrite notes.txt\ny\n/undo\n/undo\n/undo\n/exit\n",
    );
    let err = stderr(&out);
    assert!(err.contains("(/undo reverts it)"), "{err}");
    // Newest first: the write, then the edit; then there is nothing left.
    assert_eq!(
        err.matches("undone: notes.txt is back as it was").count(),
        2,
        "{err}"
    );
    assert!(
        err.contains("cannot undo: error[invalid_input]: nothing to undo"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.txt")).unwrap(),
        NOTES
    );
    // The log records each undo, and the model is told.
    let session = common::session_of(&out);
    let shown = rein_at(home.path())
        .args(["sessions", "show", &session])
        .output()
        .unwrap();
    let shown = common::stdout(&shown);
    assert_eq!(
        shown
            .matches("The person undid your change to `notes.txt`")
            .count(),
        2,
        "{shown}"
    );
}

#[test]
fn undo_removes_a_file_the_change_created_and_refuses_when_it_changed_since() {
    let home = tempfile::tempdir().unwrap();
    let root = project(NOTES);
    let out = chat(
        home.path(),
        root.path(),
        b"write new.txt\ny\nwrite other.txt\ny\n/exit\n",
    );
    let session = common::session_of(&out);
    // Someone changes other.txt after the chat wrote it.
    std::fs::write(root.path().join("other.txt"), "changed by hand\n").unwrap();
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--scripted", "--resume", &session]);
    let out = run_with_stdin(cmd, b"/undo\n/exit\n");
    let err = stderr(&out);
    assert!(err.contains("error[changed_since]"), "{err}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("other.txt")).unwrap(),
        "changed by hand\n"
    );
    // Put back as the chat left it, the undo goes through and removes it.
    std::fs::write(
        root.path().join("other.txt"),
        "written by rein's scripted model\n",
    )
    .unwrap();
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--scripted", "--resume", &session]);
    let out = run_with_stdin(cmd, b"/undo\n/undo\n/exit\n");
    assert_eq!(
        stderr(&out).matches("is back as it was").count(),
        2,
        "{}",
        stderr(&out)
    );
    assert!(!root.path().join("other.txt").exists());
    assert!(!root.path().join("new.txt").exists());
}

#[test]
fn a_deleted_file_comes_back_with_undo() {
    let home = tempfile::tempdir().unwrap();
    let root = project(NOTES);
    chat(
        home.path(),
        root.path(),
        b"delete notes.txt\ny\n/undo\n/exit\n",
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.txt")).unwrap(),
        NOTES
    );
}

#[test]
fn branch_lists_the_turns_and_continues_from_an_earlier_one() {
    let home = tempfile::tempdir().unwrap();
    let root = project(NOTES);
    let out = chat(home.path(), root.path(), b"hello\nread notes.txt\n/exit\n");
    let session = common::session_of(&out);
    let tree = |home: &Path| {
        let out = rein_at(home)
            .args(["sessions", "tree", &session])
            .output()
            .unwrap();
        common::stdout(&out)
    };
    let before = tree(home.path());
    let first = before
        .lines()
        .find(|l| l.ends_with("] hello"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--scripted", "--resume", &session]);
    let input = format!(
        "/branch\n/branch nope\n/branch {}\nhelp\n/exit\n",
        &first[..13]
    );
    let out = run_with_stdin(cmd, input.as_bytes());
    let err = stderr(&out);
    assert!(
        err.contains("/branch TURN continues from one of these"),
        "{err}"
    );
    assert!(err.contains("error[turn_not_found]"), "{err}");
    assert!(
        err.contains("the next message continues from the turn \"hello\""),
        "{err}"
    );
    // "help" grew from "hello", beside "read notes.txt": two children.
    let after = tree(home.path());
    let children: Vec<&str> = after.lines().filter(|l| l.starts_with("    ")).collect();
    assert_eq!(children.len(), 2, "{after}");
    assert!(
        children.iter().any(|l| l.ends_with("] read notes.txt")),
        "{after}"
    );
    assert!(children.iter().any(|l| l.contains("] help")), "{after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_is_shown_only_when_asked_and_never_in_the_answer() {
    use rein_testing::{FakeServer, Reply, ScriptedMessage};
    // A hostile model's reasoning carries terminal controls (set the
    // window title, ring the bell): shown, they are made visible.
    let answer = ScriptedMessage::text(&["The answer is 4."]).with_reasoning(
        "two and two make four\u{1b}]0;pwned\u{7}",
        "sig",
        "rs_1",
    );
    for show in [true, false] {
        let server = FakeServer::start(vec![Reply::sse(answer.anthropic_sse())])
            .await
            .unwrap();
        let url = server.base_url();
        let home = tempfile::tempdir().unwrap();
        let home_path = home.path().to_owned();
        let out = tokio::task::spawn_blocking(move || {
            let mut cmd = rein_at(&home_path);
            cmd.env("ANTHROPIC_API_KEY", "sk-ant-test")
                .args(["chat", "--provider", "anthropic", "--base-url", &url])
                .args(["--model", "m", "--reasoning", "low", "-p", "2+2?"]);
            if show {
                cmd.arg("--show-reasoning");
            }
            cmd.output().unwrap()
        })
        .await
        .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let said = common::stdout(&out);
        assert!(said.contains("The answer is 4."), "{said}");
        assert!(
            !said.contains("two and two"),
            "the answer carries no reasoning: {said}"
        );
        assert_eq!(
            stderr(&out).contains("two and two make four"),
            show,
            "{}",
            stderr(&out)
        );
        assert!(
            !stderr(&out).contains(['\u{1b}', '\u{7}']),
            "no raw control byte reaches the terminal: {:?}",
            stderr(&out)
        );
        // The request asked for it.
        assert_eq!(server.requests()[0].json()["thinking"]["type"], "enabled");
    }
}

#[test]
fn undo_never_writes_through_a_link_planted_since_the_change() {
    let home = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("root");
    let outside = base.path().join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("notes.txt"), NOTES).unwrap();
    std::fs::write(outside.join("secret.txt"), "keep me\n").unwrap();
    let out = chat(home.path(), &root, b"edit notes.txt\ny\n/exit\n");
    let session = common::session_of(&out);
    // A careless person (or a hostile process) swaps the edited file for a
    // link to a file outside the root, then asks for the undo.
    std::fs::remove_file(root.join("notes.txt")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("notes.txt")).unwrap();
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--scripted", "--resume", &session]);
    let out = run_with_stdin(cmd, b"/undo\n/exit\n");
    assert!(stderr(&out).contains("cannot undo"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "keep me\n"
    );
}

#[test]
fn a_file_too_large_to_keep_for_undo_is_not_replaced_or_deleted() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let big = root.path().join("big.txt");
    std::fs::write(&big, vec![b'x'; 5 * 1024 * 1024]).unwrap();
    for ask in ["write big.txt", "delete big.txt"] {
        let out = chat(
            home.path(),
            root.path(),
            format!("{ask}\n/exit\n").as_bytes(),
        );
        let err = stderr(&out);
        // Refused with its reason before anyone is asked.
        assert!(!err.contains("approve?"), "{ask}: {err}");
        assert!(err.contains("too_large"), "{ask}: {err}");
        assert!(err.contains("undone"), "{ask}: {err}");
        assert_eq!(std::fs::metadata(&big).unwrap().len(), 5 * 1024 * 1024);
    }
}

#[test]
fn a_binary_file_is_previewed_as_what_it_is_and_its_replacement_undone() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let blob = root.path().join("blob.bin");
    let bytes: Vec<u8> = (0..1000u32).map(|i| (i % 256) as u8).collect();
    std::fs::write(&blob, &bytes).unwrap();
    let out = chat(
        home.path(),
        root.path(),
        b"write blob.bin\ny\n/undo\ndelete blob.bin\nn\n/exit\n",
    );
    let err = stderr(&out);
    // Not "new file": what is there now, its size and kind.
    assert!(
        err.contains("replaces a binary file of 1000 bytes"),
        "{err}"
    );
    assert!(!err.contains("new file"), "{err}");
    assert!(err.contains("a binary file of 1000 bytes"), "{err}");
    // Replaced, then undone byte for byte.
    assert_eq!(std::fs::read(&blob).unwrap(), bytes);
}

#[test]
fn undo_brings_a_deleted_script_back_with_its_exec_bit() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let script = root.path().join("run.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    chat(
        home.path(),
        root.path(),
        b"delete run.sh\ny\n/undo\n/exit\n",
    );
    let mode = std::fs::metadata(&script).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755, "the script came back without its exec bit");
}

#[test]
fn undo_brings_a_deleted_link_back_as_a_link() {
    let home = tempfile::tempdir().unwrap();
    let root = project(NOTES);
    let link = root.path().join("latest.txt");
    std::os::unix::fs::symlink("notes.txt", &link).unwrap();
    chat(
        home.path(),
        root.path(),
        b"delete latest.txt\ny\n/undo\n/exit\n",
    );
    let meta = std::fs::symlink_metadata(&link).expect("it is back");
    assert!(meta.file_type().is_symlink(), "it came back as a copy");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        std::path::PathBuf::from("notes.txt")
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.txt")).unwrap(),
        NOTES
    );
}
