//! What the `rein` binary's tests share: a command with its own home, a
//! run with piped stdin, its output as text.

#![allow(dead_code, reason = "each test file uses a part of it")]
#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

pub mod acp;
pub mod definition;
pub mod hosted;
pub mod kept;
pub mod mcp;
pub mod python;
pub mod serve;

use std::io::{BufRead, BufReader, Read as _, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::{Arc, Mutex, mpsc};

/// A `rein` command with its own empty home, so tests never touch the
/// user's store.
pub fn rein() -> Command {
    let home = tempfile::tempdir().unwrap().keep();
    rein_at(&home)
}

/// A `rein` command on the store in `home`, with no provider key and no
/// switches inherited from the environment.
pub fn rein_at(home: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rein"));
    cmd.env("REIN_HOME", home)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("REIN_OFFLINE")
        .env_remove("REIN_LOG")
        .env_remove("REIN_STORE");
    cmd
}

/// Run `cmd` with `stdin` piped in and wait for it.
pub fn run_with_stdin(mut cmd: Command, stdin: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// Start `cmd` with stdin kept open; its stderr, line by line, on a channel.
pub fn spawn_with_lines(mut cmd: Command) -> (Child, mpsc::Receiver<String>) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = mpsc::channel::<String>();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, lines)
}

/// What it printed on stdout.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What it printed on stderr.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The session a chat names in its closing line (`rein chat --resume ID)`).
pub fn session_of(out: &Output) -> String {
    session_in(&stderr(out))
}

/// The session named in a chat's status text (`rein chat --resume ID)`).
pub fn session_in(err: &str) -> String {
    err.split("rein chat --resume ")
        .nth(1)
        .unwrap_or_else(|| panic!("no session named in:\n{err}"))
        .split([')', '\n', ' '])
        .next()
        .unwrap()
        .trim()
        .to_owned()
}

/// The pending approval a chat names when stdin ended at its prompt:
/// `(session, approval)`.
pub fn pending_of(out: &Output) -> (String, String) {
    let err = stderr(out);
    let line = err
        .lines()
        .find(|l| l.contains("Decide with: rein approve"))
        .unwrap_or_else(|| panic!("no pending approval in:\n{err}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "approve").unwrap();
    (words[at + 1].to_owned(), words[at + 2].to_owned())
}

/// Wait until what a running chat has said (collected into `said` by a
/// reader thread) holds `text` `nth` times; all of it so far.
pub fn wait_for_said(said: &std::sync::Mutex<String>, text: &str, nth: usize) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let now = said.lock().unwrap().clone();
        if now.matches(text).count() >= nth {
            return now;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "waited for `{text}`; got:\n{now}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A chat in its own process, its stderr collected as it comes.
pub struct Chat {
    child: Child,
    stdin: Option<ChildStdin>,
    said: Arc<Mutex<String>>,
}

impl Chat {
    pub fn start(home: &Path, args: &[&str]) -> Chat {
        Chat::start_with_env(home, args, &[])
    }

    /// Like [`Chat::start`], with variables set in its environment.
    pub fn start_with_env(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Chat {
        let mut child = rein_at(home)
            .arg("chat")
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let said = Arc::new(Mutex::new(String::new()));
        for stream in [
            Box::new(child.stderr.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stdout.take().unwrap()),
        ] {
            let said = said.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = [0u8; 4096];
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    said.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            });
        }
        let stdin = child.stdin.take();
        Chat { child, stdin, said }
    }

    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Wait until the chat has said `text` (`nth` times).
    pub fn wait_for(&self, text: &str, nth: usize) -> String {
        wait_for_said(&self.said, text, nth)
    }

    pub fn session(&self) -> String {
        let said = self.wait_for("· session ", 1);
        said.split("· session ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap()
            .to_owned()
    }

    pub fn finish(mut self) -> String {
        self.stdin.take();
        let status = self.child.wait().unwrap();
        let said = self.said.lock().unwrap().clone();
        assert!(status.success(), "{said}");
        said
    }
}
