//! The blackboard: compare-and-set only, a conflict says what is there now,
//! every accepted write is recorded once, and racing writers never both win.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test's answer"
)]

use std::sync::{Arc, Mutex};

use rein_orchestrator::{Blackboard, MAX_KEY, MAX_VALUE, Write};
use rein_wire::error::codes;
use serde_json::json;

fn recorded() -> (Blackboard, Arc<Mutex<Vec<Write>>>) {
    let log: Arc<Mutex<Vec<Write>>> = Arc::default();
    let into = log.clone();
    let board = Blackboard::restored(Default::default(), move |w| {
        into.lock().unwrap().push(w.clone());
    });
    (board, log)
}

#[test]
fn a_write_against_a_stale_revision_fails_with_what_is_there() {
    let (board, log) = recorded();
    assert_eq!(
        board.compare_and_set("plan", 0, json!("v1"), "a").unwrap(),
        1
    );
    // Creating it again (expecting absence) conflicts.
    let err = board
        .compare_and_set("plan", 0, json!("v1b"), "b")
        .unwrap_err();
    assert_eq!(err.code, codes::BLACKBOARD_CONFLICT);
    let detail = err.detail.unwrap();
    assert_eq!(detail["revision"], 1);
    assert_eq!(detail["value"], "v1");
    assert_eq!(
        board.compare_and_set("plan", 1, json!("v2"), "b").unwrap(),
        2
    );
    let err = board
        .compare_and_set("plan", 1, json!("v3"), "a")
        .unwrap_err();
    assert_eq!(err.detail.unwrap()["value"], "v2");
    let entry = board.get("plan").unwrap();
    assert_eq!((entry.value, entry.revision), (json!("v2"), 2));
    // Only accepted writes are recorded, each once, in order.
    let log = log.lock().unwrap();
    let seen: Vec<(u64, &str)> = log.iter().map(|w| (w.revision, w.by.as_str())).collect();
    assert_eq!(seen, [(1, "a"), (2, "b")]);
}

#[test]
fn racing_writers_never_both_win_a_revision() {
    let (board, log) = recorded();
    board.compare_and_set("count", 0, json!(0), "init").unwrap();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let board = board.clone();
            std::thread::spawn(move || {
                let mut wins = 0;
                while wins < 50 {
                    let entry = board.get("count").unwrap();
                    let next = entry.value.as_u64().unwrap() + 1;
                    if board
                        .compare_and_set("count", entry.revision, json!(next), &format!("t{t}"))
                        .is_ok()
                    {
                        wins += 1;
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // No lost update: every win added one.
    assert_eq!(board.get("count").unwrap().value, json!(400));
    assert_eq!(board.get("count").unwrap().revision, 401);
    assert_eq!(log.lock().unwrap().len(), 401);
}

#[test]
fn keys_and_values_are_bounded() {
    let board = Blackboard::new();
    let long = "k".repeat(MAX_KEY + 1);
    assert_eq!(
        board
            .compare_and_set(&long, 0, json!(1), "a")
            .unwrap_err()
            .code,
        codes::INVALID_INPUT
    );
    assert_eq!(
        board
            .compare_and_set("", 0, json!(1), "a")
            .unwrap_err()
            .code,
        codes::INVALID_INPUT
    );
    let big = json!("x".repeat(MAX_VALUE));
    assert_eq!(
        board.compare_and_set("big", 0, big, "a").unwrap_err().code,
        codes::INVALID_INPUT
    );
    assert!(board.is_empty());
}
