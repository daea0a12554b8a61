//! `rein run GRAPH.toml` from outside: the shipped example offline, a
//! graph refused before anything runs, a task's write that waits for a
//! person — answered with `rein approve` from another process, or refused
//! on the terminal — and a graph killed mid-run (SIGKILL) resumed with what
//! finished kept.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::io::Write;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use crate::common::{rein_at, run_with_stdin, spawn_with_lines, stderr, stdout};

fn example() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/graph.toml")
}

fn sessions(home: &std::path::Path) -> usize {
    let out = rein_at(home)
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    listed.as_array().unwrap().len()
}

#[test]
fn the_example_graph_runs_offline_each_task_a_session() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("README.md"), "a small project\n").unwrap();
    let mut cmd = rein_at(home.path());
    cmd.args(["run", example().to_str().unwrap(), "--scripted", "--root"])
        .arg(root.path());
    let out = run_with_stdin(cmd, b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stderr(&out);
    for task in ["survey", "risks", "tests", "plan"] {
        assert!(said.contains(&format!("{task}: ✓ done")), "{said}");
    }
    // Only the task nothing depends on is printed as the answer.
    assert!(stdout(&out).starts_with("## plan\n"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("## survey"));
    // The graph's record and one session per task.
    assert_eq!(sessions(home.path()), 5);
}

#[test]
fn a_graph_that_cannot_run_is_refused_before_anything_runs() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("cycle.toml");
    std::fs::write(
        &file,
        "[[task]]\nid = \"a\"\nbrief = \"x\"\ndepends_on = [\"b\"]\n\n[[task]]\nid = \"b\"\nbrief = \"y\"\ndepends_on = [\"a\"]\n",
    )
    .unwrap();
    let mut cmd = rein_at(home.path());
    cmd.args(["run", file.to_str().unwrap(), "--scripted"]);
    let out = run_with_stdin(cmd, b"");
    assert_eq!(out.status.code(), Some(1));
    let said = stderr(&out);
    assert!(said.contains("error[graph_invalid]"), "{said}");
    assert!(
        said.contains("a → b → a") || said.contains("b → a → b"),
        "{said}"
    );
    assert_eq!(sessions(home.path()), 0, "nothing ran");
    // No provider: refused before the graph is recorded.
    let mut cmd = rein_at(home.path());
    cmd.args(["run", example().to_str().unwrap()]);
    let out = run_with_stdin(cmd, b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("error[missing_api_key]"),
        "{}",
        stderr(&out)
    );
    assert_eq!(sessions(home.path()), 0, "nothing recorded");
}

/// Read `lines` into `seen` until an approval is asked and a line holds
/// `also`; the `rein approve …` command the run printed.
fn until_asked(lines: &mpsc::Receiver<String>, seen: &mut Vec<String>, also: &str) -> String {
    let until = std::time::Instant::now() + Duration::from_secs(60);
    let mut command = None;
    while command.is_none() || !seen.iter().any(|l| l.contains(also)) {
        let left = until.saturating_duration_since(std::time::Instant::now());
        let line = lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("not asked, or no `{also}`:\n{}", seen.join("\n")));
        if let Some(at) = line.find("rein approve ") {
            command = Some(line[at..].to_owned());
        }
        seen.push(line);
    }
    command.unwrap()
}

/// Wait for `child` to end — at most a minute: a run that hangs (an
/// approval nobody can answer) fails the test instead of the whole suite.
fn finish(mut child: std::process::Child) -> std::process::Output {
    let until = std::time::Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > until {
            child.kill().unwrap();
            panic!("rein run did not end within a minute");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// `rein run` on `file`, stdin kept open, its stderr lines on a channel.
fn spawn_run(
    home: &std::path::Path,
    root: &std::path::Path,
    args: &[&str],
) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut cmd = rein_at(home);
    cmd.arg("run")
        .args(args)
        .args(["--scripted", "--root"])
        .arg(root);
    spawn_with_lines(cmd)
}

#[test]
fn a_graph_killed_mid_run_resumes_keeping_what_finished() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let file = home.path().join("resume.toml");
    std::fs::write(
        &file,
        "[[task]]\nid = \"look\"\nbrief = \"list files\"\noutputs = [\"answer\"]\n\n\
         [[task]]\nid = \"scribe\"\nbrief = \"write notes.txt\"\n\n\
         [[task]]\nid = \"again\"\nbrief = \"list files after {{look.answer}}\"\ndepends_on = [\"look\"]\n",
    )
    .unwrap();
    let (mut child, lines) = spawn_run(home.path(), root.path(), &[file.to_str().unwrap()]);
    let mut seen = Vec::new();
    let asked = until_asked(&lines, &mut seen, "again: ✓ done");
    let graph = seen[0].split_whitespace().nth(1).unwrap().to_owned();
    assert!(
        seen[0].contains(&format!("rein run --resume {graph}")),
        "{}",
        seen[0]
    );
    // Killed while a task waits for a person: no goodbye, no clean-up.
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        sessions(home.path()),
        4,
        "the record and three task sessions"
    );
    assert!(!root.path().join("notes.txt").exists());

    // Resumed: look and again are kept (not run again); scribe carries on
    // in its own session and the same question is asked again.
    let (mut child, lines) = spawn_run(home.path(), root.path(), &["--resume", &graph]);
    let mut seen = Vec::new();
    let asked_again = until_asked(&lines, &mut seen, "▶ scribe");
    assert_eq!(asked_again, asked, "the same approval, in the same session");
    let said = seen.join("\n");
    assert!(said.contains("2 kept from before"), "{said}");
    assert!(
        !said.contains("▶ look") && !said.contains("▶ again"),
        "{said}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(sessions(home.path()), 4, "no session beside scribe's");

    // The person answers the question rein died asking, from another
    // process; the resumed graph takes that answer: the write runs once,
    // nobody is asked twice.
    let words: Vec<&str> = asked.split_whitespace().collect();
    let approved = rein_at(home.path())
        .args(["approve", words[2], words[3], "yes"])
        .output()
        .unwrap();
    assert!(approved.status.success(), "{}", stderr(&approved));
    let (child, lines) = spawn_run(home.path(), root.path(), &["--resume", &graph]);
    let out = finish(child);
    let said: Vec<String> = lines.try_iter().collect();
    let said = said.join("\n");
    assert!(out.status.success(), "{said}");
    assert!(said.contains("scribe: ✓ done"), "{said}");
    assert!(!said.contains("rein approve"), "asked again: {said}");
    assert_eq!(
        sessions(home.path()),
        4,
        "only scribe ran on, in its session"
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.txt")).unwrap(),
        "written by rein's scripted model\n"
    );
    // One write in scribe's log: the approved call has one result.
    let shown = rein_at(home.path())
        .args(["sessions", "show", words[2]])
        .output()
        .unwrap();
    let log = stdout(&shown);
    assert_eq!(log.matches("call write_file").count(), 1, "{log}");
    assert_eq!(log.matches("approval asked").count(), 1, "{log}");
}

fn writing_graph(home: &std::path::Path) -> std::path::PathBuf {
    let file = home.join("write.toml");
    std::fs::write(
        &file,
        "[[task]]\nid = \"scribe\"\nbrief = \"write notes.txt\"\n\n[[task]]\nid = \"look\"\nbrief = \"list files\"\n",
    )
    .unwrap();
    file
}

#[test]
fn a_tasks_write_waits_for_rein_approve_from_another_process() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let file = writing_graph(home.path());
    let (child, lines) = spawn_run(home.path(), root.path(), &[file.to_str().unwrap()]);
    let mut seen = Vec::new();
    let command = until_asked(&lines, &mut seen, "look: ✓ done");
    assert!(!root.path().join("notes.txt").exists());
    let words: Vec<&str> = command.split_whitespace().collect();
    let (session, approval) = (words[2], words[3]);
    let approved = rein_at(home.path())
        .args(["approve", session, approval, "yes"])
        .output()
        .unwrap();
    assert!(approved.status.success(), "{}", stderr(&approved));
    let out = finish(child);
    let rest: Vec<String> = lines.try_iter().collect();
    assert!(
        out.status.success(),
        "{}\n{}",
        seen.join("\n"),
        rest.join("\n")
    );
    assert!(
        rest.iter().any(|l| l.contains("scribe: ✓ done")),
        "{rest:?}"
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.txt")).unwrap(),
        "written by rein's scripted model\n"
    );
}

#[test]
fn a_no_on_the_terminal_refuses_the_write_and_a_line_typed_before_answers_nothing() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let file = writing_graph(home.path());
    let (mut child, lines) = spawn_run(home.path(), root.path(), &[file.to_str().unwrap()]);
    let mut stdin = child.stdin.take().unwrap();
    // Typed before anything was asked: it must not approve what comes.
    stdin.write_all(b"y\n").unwrap();
    let mut seen = Vec::new();
    until_asked(&lines, &mut seen, "look: ✓ done");
    stdin.write_all(b"n\n").unwrap();
    drop(stdin);
    let out = finish(child);
    seen.extend(lines.try_iter());
    let said = seen.join("\n");
    assert!(out.status.success(), "{said}");
    assert!(said.contains("denied for scribe"), "{said}");
    assert!(!said.contains("approved for scribe"), "{said}");
    assert!(!root.path().join("notes.txt").exists(), "a no wins");
}

#[test]
fn at_a_terminal_each_task_has_a_live_line_with_its_tokens() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("README.md"), "a small project\n").unwrap();
    // util-linux `script` gives rein a pseudo-terminal for stdout and stderr.
    let command = format!(
        "exec '{}' run '{}' --scripted --root '{}'",
        env!("CARGO_BIN_EXE_rein"),
        example().display(),
        root.path().display()
    );
    let out = std::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env("REIN_HOME", home.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("util-linux `script` runs rein in a pseudo-terminal");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    for task in ["survey", "risks", "tests", "plan"] {
        // The task's own line, finished with its state and tokens.
        let finished = said
            .split(['\r', '\n'])
            .any(|l| l.contains(task) && l.contains("✓ done") && l.contains(" tokens"));
        assert!(finished, "no live line for {task}:\n{said}");
    }
    // Drawn in place (cursor movement), not printed as plain event lines.
    assert!(said.contains("\x1b["), "{said}");
    assert!(!said.contains("▶ survey"), "{said}");
    assert!(said.contains("tokens  state"), "the table: {said}");
}
