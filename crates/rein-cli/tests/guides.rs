//! The guides' commands run as written: every fenced block in `docs/guide/`
//! whose info string is `sh offline` is run by `bash -eu -o pipefail` with
//! this build's `rein` first on `PATH`, a home that does not exist yet, no
//! provider key and the network refused (`REIN_OFFLINE=1`), in a fresh
//! folder holding a small Python project. A block that fails names its
//! page, its first line and what it printed.
//!
//! Not here: blocks that need a key, a server or another program (plain
//! `sh`), or the README's two commands (CI runs the second; the fresh-home
//! tests in `cli.rs` try every subcommand).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The fence that marks a block this test runs.
const OFFLINE: &str = "```sh offline";

/// A block of a guide: its page and its text.
struct Block {
    page: String,
    text: String,
}

fn guides() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/guide")
}

/// The `sh offline` blocks of `page`'s text.
fn blocks(page: &str, text: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(OFFLINE) {
        let after = &rest[open + OFFLINE.len()..];
        let Some(body_start) = after.find('\n') else {
            break;
        };
        // The info string is exactly `sh offline`: nothing after it.
        let info_tail = &after[..body_start];
        let body = &after[body_start + 1..];
        let Some(end) = body.find("\n```") else {
            panic!("{page}: a `sh offline` block is not closed");
        };
        if info_tail.trim().is_empty() {
            found.push(Block {
                page: page.to_owned(),
                text: body[..end].to_owned(),
            });
        }
        rest = &body[end + 4..];
    }
    found
}

/// A fresh folder with a small project in it (what a guide's commands
/// work on), and a home inside it that is not made yet.
fn folder() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("app.py"),
        "def slugify(s):\n    return s.lower()\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("README.md"), "a small project\n").unwrap();
    let home = dir.path().join("home-not-made-yet");
    (dir, home)
}

fn run(block: &Block) -> Result<(), String> {
    let (dir, home) = folder();
    let rein = PathBuf::from(env!("CARGO_BIN_EXE_rein"));
    let bin = rein.parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-eu", "-o", "pipefail", "-c", &block.text])
        .current_dir(dir.path())
        .env("PATH", path)
        .env("REIN_HOME", &home)
        .env("REIN_OFFLINE", "1")
        .env("NO_COLOR", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("REIN_STORE")
        .env_remove("REIN_LOG")
        .output()
        .unwrap();
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{}: the block starting `{}` failed ({}):\n{}{}",
        block.page,
        block.text.lines().next().unwrap_or_default(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    ))
}

#[test]
fn every_offline_block_of_the_guides_runs_as_written() {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(guides()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            let page = path.file_name().unwrap().to_string_lossy().into_owned();
            all.extend(blocks(&page, &std::fs::read_to_string(&path).unwrap()));
        }
    }
    // The guides carry commands a person can try offline; a test with
    // none to run would pass on nothing.
    assert!(
        all.len() >= 6,
        "only {} offline blocks in docs/guide",
        all.len()
    );
    let failed: Vec<String> = all.iter().filter_map(|b| run(b).err()).collect();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn a_block_is_found_only_under_its_exact_fence() {
    let text = "x\n```sh offline\nrein --version\n```\n```sh\nrein chat\n```\n```sh offline-ish\nno\n```\n";
    let found = blocks("p.md", text);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].text, "rein --version");
}
