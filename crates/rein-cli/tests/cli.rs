//! The `rein` binary from outside: `chat` with no key, offline, against a
//! fake server and piped, the sessions commands, `rein approve` from
//! another process, and the bounds and coded errors of every command.
//! (`wire decode` is in `wire.rs`.)

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::process::{Command, Stdio};

use crate::common::{rein, rein_at, run_with_stdin, stderr, stdout};

use rein_testing::{FakeServer, Reply, ScriptedMessage};
use serde_json::Value;

#[test]
fn chat_without_a_key_explains_and_offers_the_scripted_model() {
    let mut cmd = rein();
    cmd.arg("chat");
    let out = run_with_stdin(cmd, b"n\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ANTHROPIC_API_KEY") && err.contains("OPENAI_API_KEY"),
        "{err}"
    );
    assert!(err.contains("offline scripted model"), "{err}");
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("error[missing_api_key]"));

    let mut cmd = rein();
    cmd.arg("chat");
    let out = run_with_stdin(cmd, b"\nhello there\nhelp\n/exit\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("Hello! I am rein's offline scripted model."),
        "{said}"
    );
    assert!(
        said.contains("set ANTHROPIC_API_KEY or OPENAI_API_KEY"),
        "{said}"
    );
}

#[test]
fn chat_scripted_one_shot() {
    let out = rein()
        .args(["chat", "--scripted", "-p", "what is rein?"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("You said: \"what is rein?\""), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_streams_from_an_openai_compatible_server() {
    let message = ScriptedMessage::text(&["Paris ", "is the ", "capital."]);
    let server = FakeServer::start(vec![Reply::sse(message.openai_chat_sse())])
        .await
        .unwrap();
    let url = format!("{}/v1", server.base_url());
    let out = tokio::task::spawn_blocking(move || {
        rein()
            .args([
                "chat",
                "--base-url",
                &url,
                "--model",
                "local",
                "-p",
                "capital of France?",
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Paris is the capital."
    );
    let sent = server.requests()[0].json();
    assert_eq!(sent["model"], "local");
    assert_eq!(
        sent["messages"].as_array().unwrap().last().unwrap()["content"],
        "capital of France?"
    );
    // A compatible server gets the field every server knows; one that
    // states no window works in 8,192, and the answer gets a quarter.
    assert_eq!(sent["max_tokens"], 2048);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rein_offline_opens_no_socket() {
    let server = FakeServer::start(vec![Reply::sse(
        ScriptedMessage::text(&["x"]).anthropic_sse(),
    )])
    .await
    .unwrap();
    let url = server.base_url();
    let out = tokio::task::spawn_blocking(move || {
        rein()
            .env("REIN_OFFLINE", "1")
            .env("ANTHROPIC_API_KEY", "sk-offline-test")
            .args([
                "chat",
                "--provider",
                "anthropic",
                "--base-url",
                &url,
                "-p",
                "hi",
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error[offline]"), "{err}");
    assert!(!err.contains("sk-offline-test"));
    assert_eq!(server.connections(), 0);
}

#[test]
#[expect(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn chat_turns_are_recorded_and_the_sessions_commands_read_them() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--scripted"]);
    let out = run_with_stdin(cmd, b"hello\nwhat is two plus two\n/exit\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let id = err
        .split("rein chat --resume ")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(id.len(), 36, "{err}");

    let out = rein_at(home.path())
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["metadata"]["surface"], "terminal");
    // Title (the first turn's first words), model and state, newest first.
    assert_eq!(listed[0]["title"], "hello");
    assert_eq!(listed[0]["model"], "rein-scripted");
    assert_eq!(listed[0]["state"], "finished");
    let out = rein_at(home.path())
        .args(["sessions", "list"])
        .output()
        .unwrap();
    let line = stdout(&out);
    assert!(line.starts_with(&id), "{line}");
    for part in ["just now", "finished", "rein-scripted", "hello"] {
        assert!(line.contains(part), "{part}: {line}");
    }

    let out = rein_at(home.path())
        .args(["sessions", "show", &id])
        .output()
        .unwrap();
    let shown = stdout(&out);
    assert!(shown.contains("you> hello"), "{shown}");
    assert!(
        shown.contains("rein> Hello! I am rein's offline scripted model."),
        "{shown}"
    );
    assert!(shown.contains("you> what is two plus two"), "{shown}");

    let out = rein_at(home.path())
        .args(["sessions", "tree", &id])
        .output()
        .unwrap();
    let tree = stdout(&out);
    assert_eq!(
        tree.lines().filter(|l| l.contains("[finished]")).count(),
        2,
        "{tree}"
    );
    assert!(tree.contains("<- head"));
    // The second turn is a child of the first.
    let depth = |needle: &str| {
        tree.lines().find(|l| l.contains(needle)).unwrap().len()
            - tree
                .lines()
                .find(|l| l.contains(needle))
                .unwrap()
                .trim_start()
                .len()
    };
    assert!(depth("what is two plus two") > depth("hello"), "{tree}");

    let out = rein_at(home.path())
        .args(["trace", "report", &id, "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["totals"]["model_calls"], 2);
    assert_eq!(report["turns"], 2);
    assert_eq!(report["runs"].as_array().unwrap().len(), 2);
    assert!(report["totals"]["usage"]["output"].as_u64().unwrap() > 0);
    let out = rein_at(home.path())
        .args(["trace", "report", &id])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("model calls   2"), "{}", stdout(&out));

    // export -> import -> export is byte-identical, through the command line.
    let golden = home.path().join("golden.jsonl");
    let out = rein_at(home.path())
        .args(["sessions", "export", &id, "--out"])
        .arg(&golden)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = rein_at(home.path())
        .args(["sessions", "import"])
        .arg(&golden)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let imported = stdout(&out).trim().to_owned();
    assert_ne!(imported, id);
    let again = rein_at(home.path())
        .args(["sessions", "export", &imported])
        .output()
        .unwrap();
    assert_eq!(again.stdout, std::fs::read(&golden).unwrap());
}

#[test]
fn unknown_ids_and_a_newer_store_give_coded_errors() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        vec!["sessions", "show", "0190-nope"],
        vec!["sessions", "tree", "0190-nope"],
        vec!["sessions", "export", "0190-nope"],
        vec!["trace", "report", "0190-nope"],
        vec!["chat", "--scripted", "--session", "0190-nope", "-p", "hi"],
    ] {
        let out = rein_at(home.path()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains("error[session_not_found]"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = rein_at(home.path())
        .args(["sessions", "import", "-"])
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("error[golden_trace_invalid]"),
        "{}",
        stderr(&out)
    );
    // A store from a newer rein is refused, and --home is honoured.
    let other = tempfile::tempdir().unwrap();
    let out = rein()
        .arg("--home")
        .arg(other.path())
        .args(["sessions", "list"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(other.path().join("rein.db").exists());
    let status = Command::new("sqlite3")
        .arg(other.path().join("rein.db"))
        .arg("INSERT INTO _sqlx_migrations (version, description, installed_on, success, checksum, execution_time) VALUES (4242, 'future', CURRENT_TIMESTAMP, 1, x'00', 0);")
        .status();
    if status.is_ok_and(|s| s.success()) {
        let out = rein()
            .arg("--home")
            .arg(other.path())
            .args(["sessions", "list"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains("error[store_schema_newer]"),
            "{}",
            stderr(&out)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continued_session_sends_its_history_and_a_failed_turn_is_branched_around() {
    let first = ScriptedMessage::text(&["Blue."]);
    let third = ScriptedMessage::text(&["You asked about the sky."]);
    let server = FakeServer::start(vec![
        Reply::sse(first.openai_chat_sse()),
        Reply::status(
            400,
            r#"{"error":{"message":"nope","type":"invalid_request_error"}}"#,
        ),
        Reply::sse(third.openai_chat_sse()),
    ])
    .await
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let url = format!("{}/v1", server.base_url());
    let h = home.path().to_owned();
    let run = move |args: Vec<String>| {
        let h = h.clone();
        tokio::task::spawn_blocking(move || rein_at(&h).args(args).output().unwrap())
    };
    let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let out = run(a(&["chat", "--base-url", &url, "-p", "colour of the sky?"]))
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let id = err
        .split("rein chat --resume ")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap()
        .trim()
        .to_owned();
    let out = run(a(&[
        "chat",
        "--base-url",
        &url,
        "--session",
        &id,
        "-p",
        "this one fails",
    ]))
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("error[provider_bad_request]"));
    let out = run(a(&[
        "chat",
        "--base-url",
        &url,
        "--session",
        &id,
        "-p",
        "what did I ask?",
    ]))
    .await
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "You asked about the sky.");

    let sent = server.requests();
    assert_eq!(sent.len(), 3);
    // The third request carries the first exchange but not the failed turn.
    let messages = sent[2].json()["messages"].clone();
    let texts: Vec<String> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        texts[1..],
        ["colour of the sky?", "Blue.", "what did I ask?"],
        "{texts:?}"
    );
    // The failed turn is still in the log, on its own branch.
    let out = run(a(&["sessions", "tree", &id])).await.unwrap();
    let tree = stdout(&out);
    assert!(tree.contains("[error] this one fails"), "{tree}");
    assert!(tree.contains("[finished] what did I ask?"), "{tree}");
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(dir.path().join("b.txt"), "beta\n").unwrap();
    dir
}

#[test]
fn piped_chat_runs_tools_and_asks_before_writes() {
    let home = tempfile::tempdir().unwrap();
    let root = project();
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--provider", "scripted", "--root"])
        .arg(root.path());
    let out = run_with_stdin(
        cmd,
        b"list files\nwrite notes.txt\ny\ndelete a.txt\nn\nread ../../etc/passwd\n/exit\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    let err = stderr(&out);
    assert!(said.contains("a.txt") && said.contains("b.txt"), "{said}");
    assert_eq!(err.matches("approve? [y/N").count(), 2, "{err}");
    assert!(err.contains("-> write_file"), "{err}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.txt")).unwrap(),
        "written by rein's scripted model\n"
    );
    assert!(
        root.path().join("a.txt").exists(),
        "the denied delete did not run"
    );
    assert!(said.contains("That did not work"), "{said}");
    assert!(
        said.contains("outside the project root") || said.contains("not a path inside"),
        "{said}"
    );
}

#[test]
fn an_approval_survives_the_process_and_is_decided_by_rein_approve() {
    let home = tempfile::tempdir().unwrap();
    let root = project();
    // Process 1: the turn pauses for approval; stdin ends; the process exits.
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--scripted", "-p", "write later.txt", "--root"])
        .arg(root.path());
    let out = run_with_stdin(cmd, b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.contains("Decide with: rein approve"))
        .unwrap_or_else(|| panic!("{err}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "approve").unwrap();
    let (session, approval) = (words[at + 1].to_owned(), words[at + 2].to_owned());
    assert!(!root.path().join("later.txt").exists());

    // Nothing but a person's surface decides: a bad answer is refused.
    let out = rein_at(home.path())
        .args(["approve", &session, &approval, "maybe"])
        .output()
        .unwrap();
    assert!(stderr(&out).contains("error[invalid_input]"));
    let out = rein_at(home.path())
        .args(["approve", &session, "no-such-approval", "yes"])
        .output()
        .unwrap();
    assert!(stderr(&out).contains("error[invalid_input]"));
    // Process 2: a person approves.
    let out = rein_at(home.path())
        .args(["approve", &session, &approval, "yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !root.path().join("later.txt").exists(),
        "deciding does not run the tool by itself"
    );
    // Process 3: the session continues and the write runs.
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--scripted", "--resume", &session, "--root"])
        .arg(root.path());
    let out = run_with_stdin(cmd, b"/exit\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(root.path().join("later.txt").exists(), "{}", stderr(&out));
    let out = rein_at(home.path())
        .args(["sessions", "show", &session])
        .output()
        .unwrap();
    assert!(
        stdout(&out).contains("approval approved by rein approve"),
        "{}",
        stdout(&out)
    );
}

/// Start `rein chat` on a pipe and wait for its `you> ` prompt: the
/// child holds the session's lease from then on. Returns the child and its
/// session id.
fn chat_waiting_at_its_prompt(
    home: &std::path::Path,
    extra: &[&str],
) -> (std::process::Child, String) {
    use std::io::Read as _;
    let mut child = rein_at(home)
        .args(["chat", "--scripted"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = child.stderr.take().unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 1024];
    while !seen.contains("you> ") {
        let n = err.read(&mut buf).unwrap();
        assert!(n > 0, "the chat ended before its prompt: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let session = seen
        .split("· session ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no session in: {seen}"))
        .to_owned();
    (child, session)
}

#[test]
fn a_killed_chat_leaves_its_session_to_the_next_at_once_and_a_live_one_keeps_it() {
    let home = tempfile::tempdir().unwrap();
    let (mut first, session) = chat_waiting_at_its_prompt(home.path(), &[]);
    // While it lives, the session is locked; the refusal reads as a person
    // reads time.
    let out = rein_at(home.path())
        .args(["chat", "--scripted", "--resume", &session, "-p", "hello"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("error[session_locked]"), "{err}");
    assert!(
        err.contains("expires at") && err.contains("(in 1m 5"),
        "{err}"
    );
    assert!(!err.contains("after the epoch"), "{err}");
    // Killed, it cannot renew or release; the next chat takes over at once
    // (the lease's 120 s have not run).
    first.kill().unwrap();
    first.wait().unwrap();
    let out = rein_at(home.path())
        .args(["chat", "--scripted", "--resume", &session, "-p", "hello"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Hello!"), "{}", stdout(&out));
}

#[test]
fn unbounded_input_is_refused_at_a_bound() {
    let out = rein()
        .args(["wire", "decode", "--api", "anthropic", "/dev/zero"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("error[invalid_input]") && err.contains("larger than 64 MiB"),
        "{err}"
    );
}

#[test]
fn a_closed_output_ends_quietly() {
    let home = tempfile::tempdir().unwrap();
    for (what, script) in [
        (
            "stdout closed",
            r#""$REIN" sessions list | true; echo "rc=${PIPESTATUS[0]}""#,
        ),
        (
            "stdout and stderr closed",
            r#""$REIN" sessions list 2>&- | true; echo "rc=${PIPESTATUS[0]}""#,
        ),
        (
            "a decode to a closed pipe",
            r#""$REIN" wire decode --api anthropic /dev/null | true; echo "rc=${PIPESTATUS[0]}""#,
        ),
    ] {
        let out = Command::new("bash")
            .args(["-c", script])
            .env("REIN", env!("CARGO_BIN_EXE_rein"))
            .env("REIN_HOME", home.path())
            .output()
            .unwrap();
        let (said, err) = (stdout(&out), stderr(&out));
        // `wire decode` of an empty body fails on its own merits (1); what
        // matters is that no broken pipe is reported as a bug or a panic.
        assert!(
            said.contains("rc=0") || said.contains("rc=1"),
            "{what}: {said}"
        );
        assert!(
            !err.contains("error[internal]") && !err.contains("panicked"),
            "{what}: {err}"
        );
        assert!(!err.contains("Broken pipe"), "{what}: {err}");
    }
}

#[test]
fn bad_flags_and_paths_get_plain_coded_answers() {
    let home = tempfile::tempdir().unwrap();
    let out = rein_at(home.path())
        .args(["--home", "/tmp/x", "--bogus"])
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("Usage: rein [OPTIONS] <COMMAND>"),
        "{}",
        stderr(&out)
    );

    let file = home.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = rein_at(home.path())
        .args(["chat", "--scripted", "-p", "hello", "--root"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("error[invalid_input]") && stderr(&out).contains("not a directory"),
        "{}",
        stderr(&out)
    );

    let out = rein_at(home.path())
        .args(["approve", "s", "a", "no", "--always"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("error[invalid_input]")
            && stderr(&out).contains("--always goes with yes"),
        "{}",
        stderr(&out)
    );

    let out = rein_at(home.path())
        .arg("--home")
        .arg(&file)
        .args(["sessions", "list"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is a file, not a folder"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_chat_error_is_told_once() {
    let home = tempfile::tempdir().unwrap();
    // The offline switch makes the model call fail at once with a code.
    let out = rein_at(home.path())
        .env("REIN_OFFLINE", "1")
        .env("OPENAI_API_KEY", "sk-test")
        .args(["chat", "--provider", "openai-chat", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(
        stderr(&out).matches("error[offline]").count(),
        1,
        "{}",
        stderr(&out)
    );
    let mut cmd = rein_at(home.path());
    cmd.env("REIN_OFFLINE", "1")
        .env("OPENAI_API_KEY", "sk-test")
        .args(["chat", "--provider", "openai-chat"]);
    let out = run_with_stdin(cmd, b"hi\n/exit\n");
    assert_eq!(
        stderr(&out).matches("error[offline]").count(),
        1,
        "{}",
        stderr(&out)
    );
}

/// Each command tried on a fresh home, in a form that ends by itself.
const FRESH_HOME: &[&[&str]] = &[
    &["chat", "--scripted", "-p", "hello"],
    &["run", "graph.toml"],
    &["worker"],
    &["approve", "0000"],
    &["say", "0000", "hi"],
    &["stop", "0000"],
    &["acp"],
    &[
        "agents",
        "run",
        "claude",
        "--prompt",
        "hi",
        "--",
        "no-such-program-here",
    ],
    &["agents", "attach", "0000"],
    &["agents", "sessions"],
    &["agents", "list"],
    &["config", "show"],
    &["config", "check"],
    &["config", "trust", "."],
    &["config", "schema"],
    &["mcp", "list"],
    &["mcp", "serve"],
    &["plugin", "list"],
    &["plugin", "add", "no-such-folder"],
    &["plugin", "trust", "no-such-plugin"],
    &["plugin", "remove", "no-such-plugin"],
    &["memory", "add", "I prefer tabs"],
    &["memory", "list"],
    &["memory", "show", "mem_1"],
    &["memory", "search", "tabs"],
    &["memory", "forget", "mem_1"],
    &["memory", "export"],
    &["memory", "history"],
    &[
        "store",
        "copy",
        "--from",
        "sqlite:a.db",
        "--to",
        "sqlite:b.db",
    ],
    &["sessions", "list"],
    &["sessions", "show", "0000"],
    &["sessions", "tree", "0000"],
    &["sessions", "export", "0000"],
    &["sessions", "import", "missing.jsonl"],
    &["sessions", "fork", "0000"],
    &["trace", "report", "0000"],
    &["wire", "decode", "--api", "anthropic", "-"],
];

/// Every subcommand `rein --help` lists is in [`FRESH_HOME`], but `serve`,
/// which serves until stopped ([`serve_starts_on_a_home_that_does_not_exist_yet`]).
#[test]
fn every_listed_command_is_tried_on_a_fresh_home() {
    let commands = FRESH_HOME;
    for (command, subcommands) in subcommands() {
        let tried = |words: &[&str]| {
            commands
                .iter()
                .any(|c| c[0] == command && (words.is_empty() || c.get(1) == Some(&words[0])))
        };
        if command == "serve" {
            continue;
        }
        if subcommands.is_empty() {
            assert!(tried(&[]), "`rein {command}` is not tried on a fresh home");
        }
        for sub in subcommands {
            assert!(
                tried(&[&sub]),
                "`rein {command} {sub}` is not tried on a fresh home"
            );
        }
    }
}

/// Every command on a home that does not exist yet, in an empty folder:
/// each works or says what to do with a stable code — never the store's
/// or the system's own words (`unable to open database file`, `os error 2`).
/// `rein serve` on a fresh home, in an empty folder: it serves (its login
/// link printed), and is stopped.
#[test]
fn serve_starts_on_a_home_that_does_not_exist_yet() {
    use std::io::BufRead;
    let folder = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .arg("--home")
        .arg(folder.path().join("not").join("yet"))
        .args(["serve", "--scripted"])
        .current_dir(folder.path())
        .env_remove("REIN_HOME")
        .env_remove("REIN_STORE")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (lines, heard) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut said = Vec::new();
    // Bounded: a serve that neither serves nor ends fails here.
    while let Ok(line) = heard.recv_timeout(std::time::Duration::from_secs(60)) {
        let serving = line.starts_with("open http://127.0.0.1:");
        said.push(line);
        if serving {
            break;
        }
    }
    let served = child.try_wait().unwrap().is_none()
        && said.iter().any(|l| l.starts_with("open http://127.0.0.1:"));
    let _ = child.kill();
    let _ = child.wait();
    assert!(served, "rein serve did not serve on a fresh home: {said:?}");
}

/// Every subcommand is tried ([`FRESH_HOME`]).
#[test]
fn every_command_works_on_a_home_that_does_not_exist_yet() {
    for command in FRESH_HOME {
        let folder = tempfile::tempdir().unwrap();
        let home = folder.path().join("not").join("yet");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
            .arg("--home")
            .arg(&home)
            .args(*command)
            .current_dir(folder.path())
            .env_remove("REIN_HOME")
            .env_remove("REIN_STORE")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for raw in [
            "unable to open database",
            "database disk",
            "sqlite3",
            "(code:",
            "os error",
        ] {
            assert!(
                !said.to_lowercase().contains(raw),
                "`rein {}` on a fresh home said the store's words: {said}",
                command.join(" ")
            );
        }
        if command[0] == "store" {
            assert!(
                !folder.path().join("a.db").exists(),
                "a store to copy from named wrong is said, never made empty"
            );
        }
        if !out.status.success() {
            assert!(
                stable_code(&said),
                "`rein {}` on a fresh home failed without a stable code: {said}",
                command.join(" ")
            );
        }
    }
}

/// Whether `said` names an error by its stable code (`error[snake_case]`).
fn stable_code(said: &str) -> bool {
    said.split("error[").skip(1).any(|rest| {
        rest.split_once(']').is_some_and(|(code, _)| {
            !code.is_empty() && code.chars().all(|c| c.is_ascii_lowercase() || c == '_')
        })
    })
}

/// Each command `rein --help` lists (but `help`), with the subcommands its
/// own help lists.
fn subcommands() -> Vec<(String, Vec<String>)> {
    let listed = |args: &[&str]| -> Vec<String> {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
            .args(args)
            .arg("--help")
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout).into_owned();
        let Some((_, rest)) = help.split_once("Commands:\n") else {
            return Vec::new();
        };
        rest.lines()
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|name| *name != "help")
            .map(str::to_owned)
            .collect()
    };
    let commands = listed(&[]);
    assert!(commands.len() > 10, "{commands:?}");
    commands
        .into_iter()
        .map(|c| {
            let subs = listed(&[&c]);
            (c, subs)
        })
        .collect()
}
