//! The hosted trials' checks fail when a promise is broken: a finished run
//! of the real Claude Code CLI hosted by rein, its evidence tampered with
//! one break at a time.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use rein_chaos::campaign::prepare;
use rein_chaos::check::{scenario_ran, trial};
use rein_chaos::child::{Surface, root_path, store_path};
use rein_chaos::hosted::RAN;

/// The hosted scenario run whole by the built binary (Claude Code's
/// keeper is that binary).
fn finished_run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    prepare(dir.path()).unwrap();
    Surface::Hosted.write(dir.path()).unwrap();
    let ran = std::process::Command::new(env!("CARGO_BIN_EXE_rein-chaos"))
        .arg("child")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    dir
}

fn marks(dir: &Path) -> String {
    std::fs::read_to_string(root_path(dir).join(RAN)).unwrap()
}

fn add_mark(dir: &Path, line: &str) {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(root_path(dir).join(RAN))
        .unwrap();
    file.write_all(line.as_bytes()).unwrap();
}

#[tokio::test]
async fn a_hosted_run_uninterrupted_passes_and_runs_the_whole_scenario() {
    let dir = finished_run();
    let story = trial(dir.path()).await.unwrap();
    scenario_ran(dir.path()).await.unwrap();
    assert_eq!(story.interrupted(), 0);
    assert_eq!(story.replies.len(), 1, "{story:?}");
    assert_eq!(marks(dir.path()).lines().count(), 1);
}

#[tokio::test]
async fn a_hosted_command_run_twice_is_caught() {
    let dir = finished_run();
    let again = marks(dir.path());
    add_mark(dir.path(), &again);
    let broken = trial(dir.path()).await.unwrap_err();
    assert!(
        broken.iter().any(|b| b.contains("ran 2 times")),
        "{broken:?}"
    );
}

#[tokio::test]
async fn a_hosted_command_run_with_no_yes_is_caught() {
    let dir = finished_run();
    add_mark(dir.path(), "m0stranger\n");
    let broken = trial(dir.path()).await.unwrap_err();
    assert!(
        broken
            .iter()
            .any(|b| b.contains("run m0stranger ran with no yes recorded")),
        "{broken:?}"
    );
}

#[tokio::test]
async fn a_refused_removal_that_ran_is_caught() {
    let dir = finished_run();
    std::fs::remove_file(root_path(dir.path()).join("old.txt")).unwrap();
    let broken = trial(dir.path()).await.unwrap_err();
    assert!(
        broken.iter().any(|b| b.contains("old.txt is gone")),
        "{broken:?}"
    );
}

#[tokio::test]
async fn a_hosted_run_left_open_after_one_finished_is_caught() {
    let dir = finished_run();
    let store = Arc::new(
        rein_sessions::SqliteStore::open(store_path(dir.path()))
            .await
            .unwrap(),
    );
    // Begun by a driver still alive (this test): nobody closes it.
    let _open = rein_host::Recorder::start(store, "claude", "claude", "again")
        .await
        .unwrap();
    let broken = trial(dir.path()).await.unwrap_err();
    assert!(
        broken
            .iter()
            .any(|b| b.contains("run 2's run began after one had finished")),
        "{broken:?}"
    );
    assert!(
        broken
            .iter()
            .any(|b| b.contains("run 2's work left unfinished")),
        "{broken:?}"
    );
}
