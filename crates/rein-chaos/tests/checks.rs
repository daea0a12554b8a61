//! The checks fail when a promise is broken: a finished run's evidence,
//! tampered with one break at a time.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::io::Write as _;
use std::path::Path;

use rein_chaos::campaign::prepare;
use rein_chaos::check::{Story, scenario_ran, trial};
use rein_chaos::counted::EXECUTIONS;

/// The scenario run whole in this process, the built rein-chaos binary
/// the sandbox's helper.
async fn finished_run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    prepare(dir.path()).unwrap();
    let helper = Path::new(env!("CARGO_BIN_EXE_rein-chaos"));
    rein_chaos::child::run(dir.path(), helper).await.unwrap();
    dir
}

fn count_again(dir: &Path, line: &str) {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join(EXECUTIONS))
        .unwrap();
    file.write_all(line.as_bytes()).unwrap();
}

#[tokio::test]
async fn an_uninterrupted_run_passes_and_runs_the_whole_scenario() {
    let dir = finished_run().await;
    let story = trial(dir.path()).await.unwrap();
    scenario_ran(dir.path()).await.unwrap();
    assert_eq!(story.interrupted(), 0);
    assert_eq!(story.replies.len(), rein_chaos::model::TURNS.len());
}

#[tokio::test]
async fn a_write_run_twice_is_caught() {
    let dir = finished_run().await;
    count_again(dir.path(), "t0s1c0\twrite_file\n");
    let broken = trial(dir.path()).await.unwrap_err();
    assert!(
        broken
            .iter()
            .any(|b| b.contains("t0s1c0 (write_file, ok) ran 2 times")),
        "{broken:?}"
    );
}

#[tokio::test]
async fn a_refused_delete_that_ran_is_caught() {
    let dir = finished_run().await;
    count_again(dir.path(), "t0s2c0\tdelete_file\n");
    let broken = trial(dir.path()).await.unwrap_err();
    assert!(
        broken
            .iter()
            .any(|b| b.contains("a delete the person refused ran")),
        "{broken:?}"
    );
}

#[tokio::test]
async fn a_call_run_without_its_record_is_caught() {
    let dir = finished_run().await;
    // The model's last answer made no call; a call it never made ran.
    count_again(dir.path(), "t9s9c9\twrite_file\n");
    let broken = trial(dir.path()).await.unwrap_err();
    assert!(
        broken.iter().any(|b| b.contains("t9s9c9 (write_file) ran")),
        "{broken:?}"
    );
}

#[tokio::test]
async fn files_unlike_the_results_are_caught() {
    let dir = finished_run().await;
    let root = rein_chaos::child::root_path(dir.path());
    std::fs::remove_file(root.join("old.txt")).unwrap();
    std::fs::write(root.join("notes.txt"), "messy notes\n").unwrap();
    let broken = trial(dir.path()).await.unwrap_err();
    assert!(
        broken.iter().any(|b| b.contains("old.txt is gone")),
        "{broken:?}"
    );
    assert!(
        broken.iter().any(|b| b.contains("notes.txt holds")),
        "{broken:?}"
    );
}

#[tokio::test]
async fn a_command_begun_twice_or_left_half_done_is_caught() {
    let dir = finished_run().await;
    let stamp = rein_chaos::child::root_path(dir.path()).join("stamp.txt");
    assert_eq!(
        std::fs::read_to_string(&stamp).unwrap(),
        rein_chaos::model::STAMPED,
        "the sandboxed command ran whole"
    );
    std::fs::write(&stamp, "began\nbegan\nended\n").unwrap();
    let broken = trial(dir.path()).await.unwrap_err();
    assert!(
        broken.iter().any(|b| b.contains("ran more than once")),
        "{broken:?}"
    );
    std::fs::write(&stamp, "began\n").unwrap();
    let broken = trial(dir.path()).await.unwrap_err();
    assert!(
        broken
            .iter()
            .any(|b| b.contains("though the command's result says it ran")),
        "{broken:?}"
    );
}

#[test]
fn a_story_matches_its_reference_up_to_the_first_interruption() {
    let reference = Story {
        calls: vec![
            ("a".into(), "read_file".into()),
            ("b".into(), "write_file".into()),
        ],
        results: vec![("a".into(), "ok".into()), ("b".into(), "ok".into())],
        replies: vec!["done".into()],
    };
    assert_eq!(reference.matches(&reference), Ok(()));
    // A read cut short: the write after it is refused as not read.
    let cut = Story {
        results: vec![
            ("a".into(), "interrupted".into()),
            ("b".into(), "not_read".into()),
        ],
        ..reference.clone()
    };
    assert_eq!(cut.matches(&reference), Ok(()));
    // Without an interruption, a different result is a break…
    let differs = Story {
        results: vec![("a".into(), "ok".into()), ("b".into(), "not_read".into())],
        ..reference.clone()
    };
    assert!(differs.matches(&reference).is_err());
    // …and so is another reply or another call, whatever happened.
    let said = Story {
        replies: vec!["other".into()],
        ..cut.clone()
    };
    assert!(said.matches(&reference).is_err());
    let called = Story {
        calls: vec![("a".into(), "read_file".into())],
        ..cut
    };
    assert!(called.matches(&reference).is_err());
}

#[tokio::test]
async fn a_graph_task_run_beside_its_own_stale_session_is_caught() {
    use rein_sessions::Store as _;
    let dir = tempfile::tempdir().unwrap();
    prepare(dir.path()).unwrap();
    rein_chaos::child::Surface::Graph.write(dir.path()).unwrap();
    let helper = Path::new(env!("CARGO_BIN_EXE_rein-chaos"));
    rein_chaos::child::run(dir.path(), helper).await.unwrap();
    trial(dir.path()).await.unwrap();
    scenario_ran(dir.path()).await.unwrap();
    // A second session for the first task: what a resumed graph made
    // before tasks carried on in their own.
    let store = rein_sessions::SqliteStore::open(rein_chaos::child::store_path(dir.path()))
        .await
        .unwrap();
    let record = rein_chaos::graph::record_session(&store)
        .await
        .unwrap()
        .unwrap();
    store
        .create_session(serde_json::json!({"graph": record, "graph_task": "turn1"}))
        .await
        .unwrap();
    let broken = trial(dir.path()).await.unwrap_err();
    assert!(
        broken
            .iter()
            .any(|b| b.contains("task turn1 ran in two sessions")),
        "{broken:?}"
    );
}
