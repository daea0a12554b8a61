//! The guards, probed end to end as a hostile model and a careless person
//! would: `rein chat` with piped answers over a real file tree (symbolic
//! and hard links made here), then the files and the log checked.
//!
//! Each test names the promise it holds: a person's "no" wins over every
//! lease and a lease ends with its turn; a tool touches only what the root
//! allows, decided on the path actually opened; model text never reaches a
//! terminal as raw control bytes; only what could run is asked about.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::path::Path;

use crate::common::{pending_of, rein_at, run_with_stdin, session_of, stderr, stdout};
use rein_testing::{FakeServer, Reply, ScriptedMessage};

/// A project folder `root` beside an `outside` folder, in one temporary
/// folder (one file system, so hard links work).
struct Tree {
    _base: tempfile::TempDir,
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn tree() -> Tree {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("root");
    let outside = base.path().join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "TOPSECRET outside the root\n").unwrap();
    Tree {
        _base: base,
        root,
        outside,
    }
}

fn chat(home: &Path, root: &Path, extra: &[&str], stdin: &[u8]) -> std::process::Output {
    let mut cmd = rein_at(home);
    cmd.args(["chat", "--scripted"])
        .args(extra)
        .arg("--root")
        .arg(root);
    let out = run_with_stdin(cmd, stdin);
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

fn shown(home: &Path, session: &str) -> String {
    let out = rein_at(home)
        .args(["sessions", "show", session])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

fn asked(out: &std::process::Output) -> usize {
    stderr(out).matches("approve? [y/N").count()
}

// --- 1. "always" ends with its turn; a person's "no" wins over any lease.

#[test]
fn always_ends_with_its_turn_and_a_later_no_wins_in_the_same_chat() {
    let home = tempfile::tempdir().unwrap();
    let t = tree();
    let out = chat(
        home.path(),
        &t.root,
        &[],
        b"write one.txt\na\nwrite two.txt\nn\n/exit\n",
    );
    assert!(t.root.join("one.txt").exists(), "{}", stderr(&out));
    assert_eq!(
        asked(&out),
        2,
        "the second turn asks again: {}",
        stderr(&out)
    );
    assert!(
        !t.root.join("two.txt").exists(),
        "a denied write ran under an earlier turn's lease:\n{}",
        shown(home.path(), &session_of(&out))
    );
    let log = shown(home.path(), &session_of(&out));
    assert!(log.contains("approval denied by terminal"), "{log}");
}

/// "No" to a call, then "always" for its tool later in the same turn: the
/// identical refused call, made again, is asked again — never run under
/// the lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_call_is_asked_again_after_a_later_always() {
    use rein_testing::ScriptedCall;
    let write = |id: &str, path: &str| {
        Reply::sse(
            ScriptedMessage::text(&[])
                .with_call(
                    ScriptedCall::to(
                        "write_file",
                        serde_json::json!({"path": path, "content": "x\n"}),
                    )
                    .id(id),
                )
                .openai_chat_sse(),
        )
    };
    let server = FakeServer::start(vec![
        write("c1", "refused.txt"),
        write("c2", "allowed.txt"),
        write("c3", "refused.txt"),
        Reply::sse(ScriptedMessage::text(&["Done."]).openai_chat_sse()),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1", server.base_url());
    let home = tempfile::tempdir().unwrap();
    let t = tree();
    let (home_path, root) = (home.path().to_owned(), t.root.clone());
    let out = tokio::task::spawn_blocking(move || {
        let mut cmd = rein_at(&home_path);
        cmd.args(["chat", "--base-url", &url, "--model", "m", "--root"])
            .arg(&root);
        run_with_stdin(cmd, b"write things\nn\na\nn\n/exit\n")
    })
    .await
    .unwrap();
    assert!(t.root.join("allowed.txt").exists(), "{}", stderr(&out));
    assert!(
        !t.root.join("refused.txt").exists(),
        "the refused call ran under a later lease:\n{}",
        stderr(&out)
    );
    assert_eq!(asked(&out), 3, "{}", stderr(&out));
}

#[test]
fn always_does_not_survive_into_a_resumed_session() {
    let home = tempfile::tempdir().unwrap();
    let t = tree();
    let first = chat(home.path(), &t.root, &[], b"write one.txt\na\n/exit\n");
    assert!(t.root.join("one.txt").exists());
    let session = session_of(&first);
    let second = chat(
        home.path(),
        &t.root,
        &["--resume", &session],
        b"write two.txt\nn\n/exit\n",
    );
    assert_eq!(asked(&second), 1, "{}", stderr(&second));
    assert!(
        !t.root.join("two.txt").exists(),
        "{}",
        shown(home.path(), &session)
    );
    // And without a denial a later turn is asked, not covered.
    let third = chat(
        home.path(),
        &t.root,
        &["--resume", &session],
        b"write three.txt\n",
    );
    assert_eq!(asked(&third), 1, "{}", stderr(&third));
    assert!(!t.root.join("three.txt").exists());
}

#[test]
fn a_no_from_rein_approve_wins_over_an_earlier_always() {
    let home = tempfile::tempdir().unwrap();
    let t = tree();
    // Turn 1 approves with "always"; turn 2's approval is left pending.
    let out = chat(
        home.path(),
        &t.root,
        &[],
        b"write one.txt\na\nwrite two.txt\n",
    );
    assert!(t.root.join("one.txt").exists());
    let (session, approval) = pending_of(&out);
    let decided = rein_at(home.path())
        .args(["approve", &session, &approval, "no"])
        .output()
        .unwrap();
    assert!(decided.status.success(), "{}", stderr(&decided));
    chat(home.path(), &t.root, &["--resume", &session], b"/exit\n");
    let log = shown(home.path(), &session);
    assert!(!t.root.join("two.txt").exists(), "{log}");
    assert!(log.contains("approval denied by rein approve"), "{log}");
}

// --- 2. A dangling symbolic link does not lead a write outside the root.

#[test]
fn a_write_through_a_dangling_symlink_stays_inside_the_root() {
    let home = tempfile::tempdir().unwrap();
    let t = tree();
    std::os::unix::fs::symlink("../outside/new.txt", t.root.join("dangling")).unwrap();
    std::os::unix::fs::symlink(t.outside.join("abs.txt"), t.root.join("dangling-abs")).unwrap();
    std::os::unix::fs::symlink("../outside/missing-dir", t.root.join("dir-link")).unwrap();
    let out = chat(
        home.path(),
        &t.root,
        &[],
        b"write dangling\ny\nwrite dangling-abs\ny\nwrite dir-link/x.txt\ny\n/exit\n",
    );
    for escaped in ["new.txt", "abs.txt", "missing-dir"] {
        assert!(
            !t.outside.join(escaped).exists(),
            "{escaped} was created outside the root:\n{}",
            stderr(&out)
        );
    }
    let said = stdout(&out);
    assert_eq!(said.matches("That did not work").count(), 3, "{said}");
}

// --- 3. Hard links do not reach outside files.

#[test]
fn hard_links_to_outside_files_are_neither_read_nor_written() {
    let home = tempfile::tempdir().unwrap();
    let t = tree();
    std::fs::hard_link(t.outside.join("secret.txt"), t.root.join("hard")).unwrap();
    let out = chat(
        home.path(),
        &t.root,
        &[],
        b"read hard\nsearch TOPSECRET\nwrite hard\ny\n/exit\n",
    );
    let session = session_of(&out);
    let log = shown(home.path(), &session);
    assert!(
        !stdout(&out).contains("TOPSECRET outside"),
        "{}",
        stdout(&out)
    );
    assert!(!log.contains("TOPSECRET outside"), "{log}");
    assert_eq!(
        std::fs::read_to_string(t.outside.join("secret.txt")).unwrap(),
        "TOPSECRET outside the root\n"
    );
    assert_eq!(
        log.matches("result error (live): hard_link").count(),
        3,
        "the read, the write's read first and the write are refused, saying why: {log}"
    );
    assert!(log.contains("skipped_hard_links"), "{log}");
}

// --- 4. Model text reaches the terminal with its control bytes visible.

const HOSTILE: [&str; 4] = [
    "Hi \u{1b}]0;pwned\u{7}",
    "\u{1b}[2K\rapprove? [y/N] ",
    "\u{202e}txt.exe\u{2066}",
    " \u{9b}31m done",
];

fn no_raw_controls(what: &str, text: &str) {
    for c in text.chars() {
        let raw = (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        assert!(!raw, "{what} carries raw {:?}: {text:?}", c);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_text_reaches_the_terminal_with_its_controls_made_visible() {
    let server = FakeServer::start(vec![Reply::sse(
        ScriptedMessage::text(&HOSTILE).openai_chat_sse(),
    )])
    .await
    .unwrap();
    let url = format!("{}/v1", server.base_url());
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().to_owned();
    let (out, log) = tokio::task::spawn_blocking(move || {
        let out = rein_at(&home_path)
            .args(["chat", "--base-url", &url, "--model", "m", "-p", "hi"])
            .output()
            .unwrap();
        let log = shown(&home_path, &session_of(&out));
        (out, log)
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    no_raw_controls("chat", &stdout(&out));
    no_raw_controls("chat's status lines", &stderr(&out));
    no_raw_controls("sessions show", &log);
    // Made visible, not dropped: the person sees something was there.
    assert!(stdout(&out).contains("^["), "{}", stdout(&out));
    assert!(stdout(&out).contains("<U+202E>"), "{}", stdout(&out));
    assert!(log.contains("^[]0;pwned^G"), "{log}");
}

// --- 5. Only what could run is asked about.

#[test]
fn a_write_outside_the_root_is_refused_before_anyone_is_asked() {
    let home = tempfile::tempdir().unwrap();
    let t = tree();
    std::os::unix::fs::symlink("../outside", t.root.join("out-link")).unwrap();
    let out = chat(
        home.path(),
        &t.root,
        &[],
        b"write ../escape.txt\nwrite out-link/x.txt\ndelete /etc/hostname\n/exit\n",
    );
    assert_eq!(asked(&out), 0, "{}", stderr(&out));
    assert!(!t.outside.join("x.txt").exists());
    assert!(!t.root.parent().unwrap().join("escape.txt").exists());
    let log = shown(home.path(), &session_of(&out));
    // Each change and the read before it, refused.
    assert_eq!(
        log.matches("result error (live): outside_root").count(),
        6,
        "{log}"
    );
}
