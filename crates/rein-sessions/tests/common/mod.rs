//! What the crash tests share: a child process that is this test binary
//! re-run on one `#[ignore]`d helper, its output read line by line, and a
//! small seeded random source.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]
#![allow(dead_code, reason = "each test binary uses a part")]

pub mod stores;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Run the helper test `name` as a child with the database and the work
/// it does in its environment.
pub fn spawn_helper(
    name: &str,
    db: &Path,
    session: &str,
) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            name,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("REIN_HELPER_DB", db)
        .env("REIN_HELPER_SESSION", session)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    (child, out)
}

/// Read the child's stdout until a line holds `marker`; return the line from it.
pub fn wait_for(out: &mut BufReader<std::process::ChildStdout>, marker: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the helper exited before `{marker}`"
        );
        // libtest prints `test NAME ... ` without a newline before the
        // helper runs, so the marker may follow it on the same line.
        if let Some(at) = line.find(marker) {
            return line[at..].trim().to_owned();
        }
    }
}

pub fn helper_env() -> Option<(String, String)> {
    Some((
        std::env::var("REIN_HELPER_DB").ok()?,
        std::env::var("REIN_HELPER_SESSION").ok()?,
    ))
}

/// A xorshift source, seeded by the test (the seed is printed).
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
