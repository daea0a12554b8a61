//! `rein chat --subagents` from outside: a sub-agent's write asked on the
//! chat's terminal, decided with `rein approve` on the parent's session from
//! another process, and — with the chat killed (SIGKILL) while the
//! sub-agent waits — still listed, decided, and finished by the resumed
//! chat, its write run once.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::{rein_at, run_with_stdin, spawn_with_lines, stderr};

const ASK: &[u8] = b"ask a helper to write notes.md\n";
const WRITTEN: &str = "written by rein's scripted model\n";

fn chat(home: &std::path::Path, root: &std::path::Path) -> std::process::Command {
    let mut cmd = rein_at(home);
    cmd.args(["chat", "--scripted", "--subagents", "--root"])
        .arg(root);
    cmd
}

/// The chat, stdin kept open, its stderr lines on a channel.
fn spawn_chat(
    home: &std::path::Path,
    root: &std::path::Path,
) -> (std::process::Child, mpsc::Receiver<String>) {
    spawn_with_lines(chat(home, root))
}

/// Read lines until one holds `rein approve PARENT APPROVAL`: (parent, approval).
fn until_asked(lines: &mpsc::Receiver<String>, seen: &mut Vec<String>) -> (String, String) {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let line = lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("never asked:\n{}", seen.join("\n")));
        seen.push(line.clone());
        if let Some(at) = line.find("rein approve ") {
            let words: Vec<&str> = line[at..].split_whitespace().collect();
            return (words[2].to_owned(), words[3].to_owned());
        }
    }
}

fn until_line(lines: &mpsc::Receiver<String>, seen: &mut Vec<String>, text: &str) {
    let until = Instant::now() + Duration::from_secs(60);
    while !seen.iter().any(|l| l.contains(text)) {
        let left = until.saturating_duration_since(Instant::now());
        let line = lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no `{text}`:\n{}", seen.join("\n")));
        seen.push(line);
    }
}

fn approve(home: &std::path::Path, args: &[&str]) -> String {
    let out = rein_at(home).arg("approve").args(args).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_sub_agents_write_is_asked_on_the_chat_terminal() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let out = run_with_stdin(
        chat(home.path(), root.path()),
        b"ask a helper to write notes.md\ny\n",
    );
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("main/agent-1 asks: write_file notes.md"),
        "{said}"
    );
    assert!(said.contains("approved for main/agent-1"), "{said}");
    assert!(said.contains("[main/agent-1] -> write_file"), "{said}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.md")).unwrap(),
        WRITTEN
    );
}

#[test]
fn a_no_on_the_chat_terminal_refuses_the_sub_agents_write() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let out = run_with_stdin(
        chat(home.path(), root.path()),
        b"ask a helper to write notes.md\nn\n",
    );
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("denied for main/agent-1"), "{said}");
    assert!(!root.path().join("notes.md").exists());
}

#[test]
fn a_sub_agents_write_is_decided_from_another_process_through_the_parent() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let (mut child, lines) = spawn_chat(home.path(), root.path());
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(ASK).unwrap();
    let mut seen = Vec::new();
    let (parent, approval) = until_asked(&lines, &mut seen);
    // Listed from the parent with the agent that asked.
    let listed = approve(home.path(), &[&parent]);
    assert!(listed.contains("main/agent-1"), "{listed}");
    assert!(listed.contains("write_file"), "{listed}");
    assert!(listed.contains(&approval), "{listed}");
    approve(home.path(), &[&parent, &approval, "yes"]);
    until_line(&lines, &mut seen, "approved for main/agent-1 elsewhere");
    until_line(&lines, &mut seen, "[main/agent-1] <- ok");
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{}", seen.join("\n"));
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.md")).unwrap(),
        WRITTEN
    );
    // Nothing waits any more.
    assert!(approve(home.path(), &[&parent]).contains("nothing waits"));
}

#[test]
fn a_waiting_sub_agent_survives_a_kill_and_the_resumed_chat_finishes_it() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let (mut child, lines) = spawn_chat(home.path(), root.path());
    child.stdin.as_mut().unwrap().write_all(ASK).unwrap();
    let mut seen = Vec::new();
    let (parent, approval) = until_asked(&lines, &mut seen);
    // Killed while the sub-agent waits: no goodbye, no clean-up.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!root.path().join("notes.md").exists());
    // The question outlives the process, still found from the parent.
    assert!(approve(home.path(), &[&parent]).contains(&approval));
    approve(home.path(), &[&parent, &approval, "yes"]);
    // Resumed: the sub-agent is reattached (not started again), its write
    // runs once, and the parent's turn ends with its answer.
    let mut cmd = chat(home.path(), root.path());
    cmd.args(["--resume", &parent]);
    let out = run_with_stdin(cmd, b"");
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("[main/agent-1] -> write_file"), "{said}");
    assert!(!said.contains("main/agent-2"), "{said}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.md")).unwrap(),
        WRITTEN
    );
    // The delegate call has exactly one result, the sub-agent's answer.
    let shown = rein_at(home.path())
        .args(["sessions", "show", &parent])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert_eq!(text.matches("  result ").count(), 1, "{text}");
    assert!(text.contains("result ok (live)"), "{text}");
    assert!(text.contains("\"agent\":\"main/agent-1\""), "{text}");
}
