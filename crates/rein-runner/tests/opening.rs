//! Opening many conversations on one SQLite store: each open waits in the
//! store's own queue (`Store::opening`, at most `OPENING_AT_ONCE` at once),
//! a burst larger than the queue all opens, and one store's queue never
//! holds another store's opens.

use std::sync::Arc;
use std::time::Duration;

use rein_runner::{Agent, Profile, TurnOutcome};
use rein_sessions::{OPENING_AT_ONCE, SqliteStore, Store};
use rein_testing::{FakeToolBackend, Rule, ScriptedBrain};

fn agent() -> Agent {
    Agent::new(
        Arc::new(ScriptedBrain::new(vec![Rule::reply("hello", "Hi.")])),
        Arc::new(FakeToolBackend::new(&[]).unwrap()),
        Profile::new("desk", "rein-scripted"),
    )
}

async fn store(dir: &tempfile::TempDir, name: &str) -> Arc<SqliteStore> {
    Arc::new(SqliteStore::open(dir.path().join(name)).await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_opens_larger_than_the_queue_all_open_and_run_a_turn() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir, "rein.db").await;
    let mut all = tokio::task::JoinSet::new();
    for _ in 0..OPENING_AT_ONCE * 3 {
        let store: Arc<dyn Store> = store.clone();
        all.spawn(async move {
            let mut conversation = agent().open(store).await.unwrap();
            let outcome = conversation.turn("hello").await.unwrap();
            assert!(
                matches!(outcome, TurnOutcome::Finished { .. }),
                "{outcome:?}"
            );
            conversation.close().await.unwrap();
        });
    }
    while let Some(done) = all.join_next().await {
        done.unwrap();
    }
    let queue = store.opening().expect("the SQLite store keeps a queue");
    assert_eq!(
        queue.available_permits(),
        OPENING_AT_ONCE,
        "every place given back"
    );
    assert_eq!(
        store.list_sessions(1_000).await.unwrap().len(),
        OPENING_AT_ONCE * 3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_waits_in_its_own_stores_queue_only() {
    let dir = tempfile::tempdir().unwrap();
    let held = store(&dir, "held.db").await;
    let free = store(&dir, "free.db").await;
    // Every place in the first store's queue taken, as by opens that hang.
    let queue = held.opening().expect("the SQLite store keeps a queue");
    let places = queue
        .acquire_many(u32::try_from(OPENING_AT_ONCE).unwrap())
        .await
        .unwrap();

    let waiting = {
        let held: Arc<dyn Store> = held.clone();
        tokio::spawn(async move { agent().open(held).await })
    };
    // The other store's opens do not wait for it.
    let other: Arc<dyn Store> = free.clone();
    let opened = tokio::time::timeout(Duration::from_secs(30), agent().open(other))
        .await
        .expect("an open on another store does not wait")
        .unwrap();
    opened.close().await.unwrap();
    // Time enough for an open that did not wait to make its session.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "the open waits for a place");
    assert!(
        held.list_sessions(10).await.unwrap().is_empty(),
        "nothing made yet"
    );

    drop(places);
    let opened = waiting.await.unwrap().unwrap();
    assert_eq!(held.list_sessions(10).await.unwrap().len(), 1);
    opened.close().await.unwrap();
}
