//! The chat in a real pseudo-terminal — util-linux `script` allocates it,
//! so `rein chat` sees a terminal, reads with its line editor, and gets
//! SIGINT from the terminal's own Ctrl-C — for what only a person at a
//! terminal does: approvals answered at the prompt, Ctrl-C once interrupts
//! the turn at its next step, twice leaves at once, and the turn can then
//! be resumed.
//!
//! The model is a fake OpenAI-compatible server on loopback whose first
//! answer is held back, so the keys arrive while a turn runs.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rein_testing::{FakeServer, Reply, ScriptedCall, ScriptedMessage};
use serde_json::json;

/// `rein chat` running in a pseudo-terminal.
struct Term {
    child: Child,
    keys: ChildStdin,
    said: Arc<Mutex<String>>,
}

impl Term {
    fn start(home: &Path, args: &[&str]) -> Term {
        Term::spawn(home, &std::env::temp_dir(), args, false)
    }

    /// Start in the folder `cwd`.
    fn start_in(home: &Path, cwd: &Path, args: &[&str]) -> Term {
        Term::spawn(home, cwd, args, false)
    }

    /// Start with `colour` allowed or not (`NO_COLOR`).
    fn spawn(home: &Path, cwd: &Path, args: &[&str], colour: bool) -> Term {
        let quoted: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_rein"))
            .chain(args.iter().copied())
            .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
            .collect();
        let mut command = Command::new("script");
        if colour {
            command.env_remove("NO_COLOR");
        } else {
            command.env("NO_COLOR", "1");
        }
        let mut child = command
            .current_dir(cwd)
            // `exec`: the chat is the terminal's only process. A shell left
            // waiting (dash does not exec a lone command) would take the
            // terminal's SIGINT itself and die of it with status 130.
            .args(["-qfec", &format!("exec {}", quoted.join(" ")), "/dev/null"])
            .env("REIN_HOME", home)
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("util-linux `script` runs the chat in a pseudo-terminal");
        let keys = child.stdin.take().unwrap();
        let mut out = child.stdout.take().unwrap();
        let said = Arc::new(Mutex::new(String::new()));
        let sink = said.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Term { child, keys, said }
    }

    fn send(&mut self, keys: &[u8]) {
        self.keys.write_all(keys).unwrap();
        self.keys.flush().unwrap();
    }

    fn wait_for(&self, text: &str) -> String {
        self.wait_for_nth(text, 1)
    }

    /// Wait until `text` has been shown `nth` times.
    fn wait_for_nth(&self, text: &str, nth: usize) -> String {
        common::wait_for_said(&self.said, text, nth)
    }

    /// Wait for the chat to end: how it ended and everything it said.
    fn wait(mut self) -> Ended {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Ended {
                    status,
                    said: self.said.lock().unwrap().clone(),
                };
            }
            assert!(
                Instant::now() < deadline,
                "the chat did not end; it said:\n{}",
                self.said.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// How a chat ended, with everything it said (shown when a test fails).
struct Ended {
    status: ExitStatus,
    said: String,
}

impl Ended {
    /// Assert the chat ended well.
    fn success(&self) {
        assert!(
            self.status.success(),
            "{:?}; it said:\n{}",
            self.status,
            self.said
        );
    }
}

/// A server whose first answer (a read of `a.txt`) comes after `hold`,
/// then a plain answer.
async fn slow_model(hold: Duration) -> FakeServer {
    let call = ScriptedMessage::text(&["Reading."])
        .with_call(ScriptedCall::to("read_file", json!({"path": "a.txt"})).id("c1"));
    FakeServer::start(vec![
        Reply::sse(call.openai_chat_sse()).delay_before(0, hold),
        Reply::sse(ScriptedMessage::text(&["done"]).openai_chat_sse()),
    ])
    .await
    .unwrap()
}

/// A home folder and a project folder holding `a.txt`.
fn folders() -> (tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
    (home, root)
}

/// `rein chat` over `root` talking to `server`, told "go": back once the
/// model has been called (its answer is held back).
fn chat_going(server: &FakeServer, home: &Path, root: &Path) -> Term {
    let url = format!("{}/v1", server.base_url());
    let root = root.to_str().unwrap();
    let mut term = Term::start(
        home,
        &["chat", "--base-url", &url, "--model", "m", "--root", root],
    );
    term.wait_for("you> ");
    term.send(b"go\r");
    wait_for_requests(server, 1);
    term
}

fn wait_for_requests(server: &FakeServer, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.requests().len() < n {
        assert!(Instant::now() < deadline, "the model was not called");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_once_interrupts_the_turn_even_mid_answer() {
    // The model holds its answer for a minute: the interrupt does not wait
    // for it (`wait_for` gives up sooner).
    let server = slow_model(Duration::from_secs(60)).await;
    let (home, root) = folders();
    let (home_path, root_path) = (home.path().to_owned(), root.path().to_owned());
    let said = tokio::task::spawn_blocking(move || {
        let mut term = chat_going(&server, &home_path, &root_path);
        // While the model holds its answer, the status line says so.
        term.wait_for(" working ");
        term.send(b"\x03");
        term.wait_for("interrupting");
        // The open answer is cut: its read never runs, and the model is
        // not called again.
        let said = term.wait_for("[turn ended: interrupted]");
        assert_eq!(server.requests().len(), 1, "{said}");
        term.send(b"/exit\r");
        term.wait().success();
        said
    })
    .await
    .unwrap();
    assert!(!said.contains("<- ok"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_twice_leaves_at_once_and_the_turn_can_be_resumed() {
    // The model answers at once; the turn's check then runs for half a
    // minute. An open answer is cut by one Ctrl-C, but a running check (or
    // tool) finishes first: the second Ctrl-C leaves now.
    let server = FakeServer::start(vec![Reply::sse(
        ScriptedMessage::text(&["done"]).openai_chat_sse(),
    )])
    .await
    .unwrap();
    let (home, root) = folders();
    let (home_path, root_path) = (home.path().to_owned(), root.path().to_owned());
    tokio::task::spawn_blocking(move || {
        let url = format!("{}/v1", server.base_url());
        let mut term = Term::start(
            &home_path,
            &[
                "chat",
                "--base-url",
                &url,
                "--model",
                "m",
                "--root",
                root_path.to_str().unwrap(),
                "--verify",
                "sleep 30",
            ],
        );
        term.wait_for("you> ");
        term.send(b"go\r");
        // The answer is shown once it has streamed whole: the check runs.
        term.wait_for("done");
        term.send(b"\x03");
        term.wait_for("interrupting");
        term.send(b"\x03");
        let said = term.wait_for("continues the turn");
        let ended = term.wait();
        assert_eq!(ended.status.code(), Some(130), "{}", ended.said);
        let session = said
            .split("rein chat --resume ")
            .nth(1)
            .unwrap()
            .split('`')
            .next()
            .unwrap()
            .trim()
            .to_owned();
        // The turn was left open; resuming it on another model (the
        // offline one) is a change of the run's authority, which the
        // person accepts here; then it finishes, and the session's lease
        // did not outlive the process.
        let mut cmd = common::rein_at(&home_path);
        cmd.args(["chat", "--scripted", "--resume", &session]);
        let out = common::run_with_stdin(cmd, b"y\n/exit\n");
        let err = common::stderr(&out);
        assert!(out.status.success(), "{err}");
        assert!(err.contains("changed: model"), "{err}");
        assert!(err.contains("(resuming the unfinished turn)"), "{err}");
    })
    .await
    .unwrap();
}

#[test]
fn an_edit_shown_as_a_diff_approved_undone_denied_and_a_branch_at_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let notes = root.path().join("notes.txt");
    let original = "one\nTODO: buy tea\ntwo\n";
    std::fs::write(&notes, original).unwrap();
    let mut term = Term::start(
        home.path(),
        &[
            "chat",
            "--scripted",
            "--root",
            root.path().to_str().unwrap(),
        ],
    );
    term.wait_for("you> ");
    term.send(b"edit notes.txt\r");
    let said = term.wait_for("approve?");
    assert!(
        said.contains("-TODO: buy tea") && said.contains("+DONE: buy tea"),
        "{said}"
    );
    term.send(b"y\r");
    term.wait_for("(/undo reverts it)");
    term.wait_for_nth("you> ", 2);
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "one\nDONE: buy tea\ntwo\n"
    );
    term.send(b"/undo\r");
    term.wait_for("undone: notes.txt is back as it was");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), original);
    // The same edit again, denied: nothing changes.
    term.send(b"edit notes.txt\r");
    term.wait_for_nth("approve?", 2);
    term.send(b"n\r");
    term.wait_for("not_approved");
    term.wait_for_nth("you> ", 4);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), original);
    term.send(b"/branch\r");
    term.wait_for("/branch TURN continues from one of these");
    term.send(b"/exit\r");
    term.wait().success();
}

#[test]
fn a_session_resumed_at_a_terminal_in_another_folder_works_in_its_own_root() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let mut term = Term::start(
        home.path(),
        &[
            "chat",
            "--scripted",
            "--root",
            root.path().to_str().unwrap(),
        ],
    );
    term.wait_for("you> ");
    term.send(b"/exit\r");
    let said = term.wait_for("continue with: rein chat --resume ");
    term.wait().success();
    let session = said
        .split("continue with: rein chat --resume ")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap()
        .to_owned();
    let mut term = Term::start_in(
        home.path(),
        elsewhere.path(),
        &["chat", "--scripted", "--resume", &session],
    );
    term.wait_for("you> ");
    term.send(b"write later.txt\r");
    term.wait_for("approve?");
    term.send(b"y\r");
    term.wait_for("(/undo reverts it)");
    // Typed before the turn has ended: a command waits for the turn.
    term.send(b"/exit\r");
    term.wait().success();
    assert!(root.path().join("later.txt").exists());
    assert!(!elsewhere.path().join("later.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_typed_while_a_turn_runs_steers_it_at_the_next_step() {
    let server = slow_model(Duration::from_secs(2)).await;
    let (home, root) = folders();
    let (home_path, root_path) = (home.path().to_owned(), root.path().to_owned());
    tokio::task::spawn_blocking(move || {
        let mut term = chat_going(&server, &home_path, &root_path);
        // Typed while the model is still thinking about "go".
        term.send(b"use the blue one\r");
        term.wait_for("(heard: the model reads it at its next step)");
        // The next model call carries the words, after the read's result.
        wait_for_requests(&server, 2);
        let second = server.requests()[1].json().to_string();
        assert!(second.contains("use the blue one"), "{second}");
        term.wait_for("done");
        term.wait_for_nth("you> ", 2);
        term.send(b"/exit\r");
        term.wait().success();
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markdown_is_styled_at_a_terminal_and_model_escapes_are_not() {
    let answer = ScriptedMessage::text(&["Use **bold** and `ls`\n", "- one\n", "\x1b[31mred"]);
    let server = FakeServer::start(vec![Reply::sse(answer.openai_chat_sse())])
        .await
        .unwrap();
    let url = format!("{}/v1", server.base_url());
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().to_owned();
    let said = tokio::task::spawn_blocking(move || {
        let tmp = std::env::temp_dir();
        let mut term = Term::spawn(
            &home_path,
            &tmp,
            &["chat", "--base-url", &url, "--model", "m"],
            true,
        );
        term.wait_for("you> ");
        term.send(b"hi\r");
        let said = term.wait_for_nth("you> ", 2);
        term.send(b"/exit\r");
        term.wait().success();
        said
    })
    .await
    .unwrap();
    assert!(
        said.contains("Use \x1b[1mbold\x1b[0m and \x1b[36mls\x1b[0m"),
        "{said:?}"
    );
    assert!(said.contains("• one"), "{said:?}");
    // The model's own escape is shown, not obeyed.
    assert!(said.contains("^[[31mred"), "{said:?}");
    assert!(!said.contains("\x1b[31m"), "{said:?}");
}

#[test]
fn approvals_are_answered_y_and_n_at_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("b.txt"), "beta\n").unwrap();
    let mut term = Term::start(
        home.path(),
        &[
            "chat",
            "--scripted",
            "--root",
            root.path().to_str().unwrap(),
        ],
    );
    // Answer each prompt as a person would: only once it is shown.
    let script = [
        ("you> ", 1, "write tty.txt"),
        ("approve? [y/N", 1, "y"),
        ("you> ", 2, "delete b.txt"),
        ("approve? [y/N", 2, "n"),
        ("you> ", 3, "/exit"),
    ];
    for (prompt, nth, answer) in script {
        term.wait_for_nth(prompt, nth);
        term.send(format!("{answer}\r").as_bytes());
    }
    let ended = term.wait();
    ended.success();
    assert!(root.path().join("tty.txt").exists(), "{}", ended.said);
    assert!(
        root.path().join("b.txt").exists(),
        "the denied delete did not run: {}",
        ended.said
    );
    assert!(ended.said.contains("-> write_file"), "{}", ended.said);
}
