//! A hosted TUI drawn for the terminal of whoever holds it: `rein agents
//! run tui` and `rein agents attach`, each in a real PTY of its own size,
//! around a real `bash`, whose `stty size` says what its terminal is. The
//! program starts at the owner's size and follows the owner's resize
//! (SIGWINCH); an attached viewer's size is sent but does not apply while
//! the owner holds the session, and does once the viewer takes it over.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};

type Buf = Arc<Mutex<Vec<u8>>>;

/// A `rein` process in a PTY of `cols` × `rows`, its screen captured.
struct Term {
    master: Box<dyn MasterPty + Send>,
    keys: Box<dyn Write + Send>,
    screen: Buf,
    child: Box<dyn portable_pty::Child + Send + Sync>,
}

fn size(cols: u16, rows: u16) -> PtySize {
    PtySize {
        rows,
        cols,
        pixel_width: 0,
        pixel_height: 0,
    }
}

fn open(home: &std::path::Path, args: &[&str], cols: u16, rows: u16) -> Term {
    let pair = native_pty_system().openpty(size(cols, rows)).unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_rein"));
    cmd.args(args);
    cmd.env("REIN_HOME", home);
    cmd.env("TERM", "dumb");
    for gone in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "REIN_OFFLINE",
        "REIN_LOG",
    ] {
        cmd.env_remove(gone);
    }
    let child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let screen: Buf = Arc::default();
    let sink = screen.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = reader.read(&mut chunk) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
    });
    let keys = pair.master.take_writer().unwrap();
    Term {
        master: pair.master,
        keys,
        screen,
        child,
    }
}

impl Term {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// Wait until the screen shows `needle` after what it showed at `from`.
    fn wait_for(&self, from: usize, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = self.text();
            if text.get(from..).is_some_and(|t| t.contains(needle)) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "never saw {needle:?} in {:?}",
                text.get(from..).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn type_keys(&mut self, keys: &[u8]) {
        self.keys.write_all(keys).unwrap();
        self.keys.flush().unwrap();
    }

    /// Ask bash its terminal's size and wait for the answer.
    fn sees(&mut self, cols: u16, rows: u16) {
        let from = self.text().len();
        // The sum shows only in bash's answer, never in the echo.
        self.type_keys(b"echo size-$(stty size | tr ' ' x)-$((1+1))\r");
        self.wait_for(from, &format!("size-{rows}x{cols}-2"));
    }
}

#[test]
fn the_hosted_tui_is_the_holders_size() {
    let home = tempfile::tempdir().unwrap();
    let bash = [
        "agents",
        "run",
        "tui",
        "--",
        "/bin/bash",
        "--norc",
        "--noprofile",
        "-i",
    ];
    let mut owner = open(home.path(), &bash, 100, 30);
    owner.wait_for(0, "rein agents attach ");
    let text = owner.text();
    let id = text
        .split("rein agents attach ")
        .nth(1)
        .unwrap()
        .split('`')
        .next()
        .unwrap()
        .to_owned();

    // Started at the owner's size; follows the owner's resize.
    owner.sees(100, 30);
    owner.master.resize(size(90, 25)).unwrap();
    owner.sees(90, 25);

    // A viewer's size does not apply while the owner holds the session…
    let mut bob = open(
        home.path(),
        &["agents", "attach", &id, "--as", "bob"],
        70,
        20,
    );
    bob.wait_for(0, "attached as bob#");
    owner.sees(90, 25);
    // …and does once the viewer holds it.
    owner.type_keys(&[0x1d, b'r']);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !bob.text().contains("you took the session over") {
        // Until the owner's release is in, the key is refused, naming them.
        assert!(Instant::now() < deadline, "{}", bob.text());
        bob.type_keys(b"\r");
        std::thread::sleep(Duration::from_millis(100));
    }
    bob.sees(70, 20);
    // The holder's resize reaches the program; the owner's no longer does.
    bob.master.resize(size(60, 15)).unwrap();
    bob.sees(60, 15);
    owner.master.resize(size(110, 35)).unwrap();
    bob.sees(60, 15);

    bob.type_keys(b"exit\r");
    bob.wait_for(0, "the session ended");
    assert!(owner.child.wait().unwrap().success(), "{}", owner.text());
    let _ = bob.child.wait();
}
