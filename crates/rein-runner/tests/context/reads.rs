//! What one file alone said, carried through compaction: quoted in every
//! state, read whole by the summariser after pruning set it aside, and
//! recited by the loop nudge to a model going round in circles.
//!
//! Not here: the pressure rules themselves (the parent module).

use std::sync::Arc;

use rein_runner::{Conversation, TurnOutcome};
use rein_sessions::{Event, SqliteStore, Store};
use serde_json::json;

use super::{Worker, backend_of, compacted, files, kinds, profile};

/// A turn of `steps` reads over as many files in a window of `window`
/// tokens, file `marked` beginning with `sentence`, that finishes: the
/// worker and the session's log.
async fn read_with_one_marked(
    window: u32,
    steps: usize,
    marked: usize,
    sentence: &str,
) -> (Arc<Worker>, Vec<rein_sessions::StoredEvent>) {
    let worker = Worker::new(window, steps);
    let (outcome, log) = run_with_one_marked(&worker, steps, marked, sentence).await;
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    (worker, log)
}

/// `worker`'s turn over `files` files, file `marked` beginning with
/// `sentence`: how it ended and the session's log.
async fn run_with_one_marked(
    worker: &Arc<Worker>,
    files_n: usize,
    marked: usize,
    sentence: &str,
) -> (TurnOutcome, Vec<rein_sessions::StoredEvent>) {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let mut owned = files(files_n);
    owned[marked].1 = format!("{sentence} {}", owned[marked].1);
    let backend = backend_of(&owned);
    let mut conv = Conversation::open(store.clone(), worker.clone(), backend, profile(), None)
        .await
        .unwrap();
    conv.agent.budgets.max_steps = worker.steps as u32 + 80;
    let outcome = conv.turn("read them all").await.unwrap();
    let log = store.read(conv.session_id(), 1, 100_000).await.unwrap();
    (outcome, log)
}

/// What one file alone said is quoted in every compaction's state, so the
/// model still sees it after the read itself was compacted away; the
/// filler every file shares (digits apart) is not.
#[tokio::test]
async fn what_one_file_alone_said_outlives_every_compaction() {
    let sentence = "file 3: the colour of the sea here is BLUE.";
    let (_, log) = read_with_one_marked(6_000, 40, 3, sentence).await;
    let states = compacted(&log);
    assert!(states.len() >= 2, "{}", states.len());
    for summary in states {
        assert_eq!(
            summary["state"]["read_notes"],
            json!([{"path": "f3.txt", "saw": [sentence]}]),
            "{summary}"
        );
        assert!(summary["text"].as_str().unwrap().contains(sentence));
    }
}

/// The model summarising a stretch reads the results soft pruning set
/// aside in it, whole: the summary is all that stands for them afterwards,
/// and shown only the stubs it could keep nothing they said.
#[tokio::test]
async fn the_summariser_reads_what_pruning_set_aside() {
    let (worker, log) =
        read_with_one_marked(16_000, 120, 5, "file 5: the key is under the mat.").await;
    let kinds = kinds(&log);
    // Pruning came first, so f5's result was a stub in the model's window.
    assert_eq!(kinds.first(), Some(&"prune"), "{kinds:?}");
    assert!(kinds.contains(&"compact"), "{kinds:?}");
    let first = worker.summary_requests.lock().unwrap()[0].clone();
    assert!(first.contains("the key is under the mat"), "{first}");
}

/// A model going round in circles after a compaction is told, in the loop
/// nudge, the person's words and the lines the turn's latest compaction
/// found in the files read (`{asked}`, `{found}`): try 35's small model
/// answered with a file from the raw tail, the state's lines out of mind.
#[tokio::test]
async fn a_loop_after_a_compaction_is_told_the_lines_found() {
    let sentence = "file 3: the colour of the sea here is BLUE.";
    let worker = Worker::stuck(6_000, 60, 39);
    let (outcome, log) = run_with_one_marked(&worker, 40, 3, sentence).await;
    assert_eq!(outcome, TurnOutcome::LoopDetected);
    let last_compaction = log
        .iter()
        .rposition(|e| {
            matches!(
                &e.event,
                Event::CompactionCreated { summary, .. }
                    if matches!(**summary, rein_sessions::Compaction::Compact(_))
            )
        })
        .expect("the forty reads compacted");
    let nudges: Vec<&str> = log[last_compaction..]
        .iter()
        .filter_map(|e| match &e.event {
            Event::SteerSaid { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let [nudge] = nudges[..] else {
        panic!("one nudge after the last compaction: {nudges:?}")
    };
    assert!(nudge.contains("> read them all"), "{nudge}");
    assert!(
        nudge.contains(&format!(
            "Lines found in the files read (quoted from the log):\n- f3.txt: \"{sentence}\""
        )),
        "{nudge}"
    );
    assert!(
        !nudge.contains("{found}") && !nudge.contains("{asked}"),
        "{nudge}"
    );
}
