//! A conversation opened again from what it kept of its log
//! (`close_keeping`, `Agent::reopen_kept`) reads from the store only what
//! came after — the next turn a server runs does not read the whole log
//! first — yet sees what another writer appended meanwhile, and reads the
//! whole log when the kept one is not the start of the store's.

use std::sync::Arc;

use rein_runner::{Agent, Profile, TurnOutcome};
use rein_sessions::{Event, MemoryStore, Store, StoredEvent, read_all};
use rein_testing::{FakeToolBackend, Rule, ScriptedBrain};

fn agent() -> Agent {
    Agent::new(
        Arc::new(ScriptedBrain::new(vec![
            Rule::reply("first", "One."),
            Rule::reply("second", "Two."),
            Rule::reply("between", "Meanwhile."),
        ])),
        Arc::new(FakeToolBackend::new(&[]).unwrap()),
        Profile::new("desk", "rein-scripted"),
    )
}

/// Each event's place and content (a staged event's time is stamped
/// again when it is written, so the conversation's copy may differ there).
fn contents(log: &[StoredEvent]) -> Vec<(u64, String, Event)> {
    log.iter()
        .map(|e| (e.seq, e.agent_path.clone(), e.event.clone()))
        .collect()
}

/// A session with `turns` finished turns, and what its conversation kept.
async fn kept_after(store: &Arc<MemoryStore>, turns: usize) -> (String, rein_runner::KeptLog) {
    let mut conversation = agent().open(store.clone()).await.unwrap();
    for _ in 0..turns {
        let outcome = conversation.turn("first").await.unwrap();
        assert!(
            matches!(outcome, TurnOutcome::Finished { .. }),
            "{outcome:?}"
        );
    }
    let session = conversation.session_id().to_owned();
    (session, conversation.close_keeping().await.unwrap())
}

#[tokio::test]
async fn a_kept_log_is_not_read_again_and_the_next_turn_sees_all_of_it() {
    let store = Arc::new(MemoryStore::new());
    let (session, kept) = kept_after(&store, 20).await;
    let whole = read_all(store.as_ref(), &session).await.unwrap();
    assert_eq!(kept.len(), whole.len());

    let before = store.events_read();
    let mut again = agent().reopen_kept(store.clone(), kept).await.unwrap();
    let outcome = again.turn("second").await.unwrap();
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    let read = store.events_read() - before;
    // The kept log's last event (checked against the store), nothing more:
    // the new turn's events are the conversation's own.
    assert!(
        read <= 2,
        "{read} events read again of a {}-event log",
        whole.len()
    );
    let log = again.log_events().await.unwrap();
    let stored = read_all(store.as_ref(), &session).await.unwrap();
    assert!(
        contents(&log) == contents(&stored),
        "the reopened log is the store's"
    );
    again.close().await.unwrap();

    // Without the kept log the whole of it is read: the figure above is
    // the kept log's doing.
    let before = store.events_read();
    agent()
        .reopen(store.clone(), &session)
        .await
        .unwrap()
        .close()
        .await
        .unwrap();
    assert!(store.events_read() - before >= whole.len() as u64);
}

#[tokio::test]
async fn what_another_writer_appended_after_the_kept_log_is_read() {
    let store = Arc::new(MemoryStore::new());
    let (session, kept) = kept_after(&store, 2).await;
    let mut other = agent().reopen(store.clone(), &session).await.unwrap();
    other.turn("between").await.unwrap();
    other.close().await.unwrap();

    let mut again = agent().reopen_kept(store.clone(), kept).await.unwrap();
    let log = again.log_events().await.unwrap();
    let stored = read_all(store.as_ref(), &session).await.unwrap();
    assert!(
        contents(&log) == contents(&stored),
        "the reopened log is the store's"
    );
    assert!(
        log.iter().any(|e| matches!(
            &e.event,
            Event::TurnStarted { prompt, .. } if prompt == "between"
        )),
        "the other writer's turn is in the reopened log"
    );
    again.close().await.unwrap();
}

/// A kept log that is not the start of the store's (the session made
/// again elsewhere under the same id) is thrown away, never mixed in.
#[tokio::test]
async fn a_kept_log_that_is_not_the_stores_is_thrown_away() {
    let first = Arc::new(MemoryStore::new());
    let (session, kept) = kept_after(&first, 3).await;
    let info = first.session(&session).await.unwrap();
    // The same id elsewhere, with one turn of other words.
    let other = Arc::new(MemoryStore::new());
    let (donor, _) = kept_after(&other, 1).await;
    let mut events = read_all(other.as_ref(), &donor).await.unwrap();
    for event in &mut events {
        event.session_id = session.clone();
    }
    let moved = MemoryStore::new();
    moved.import(&info, events).await.unwrap();
    let moved: Arc<dyn Store> = Arc::new(moved);

    let mut again = agent().reopen_kept(moved.clone(), kept).await.unwrap();
    let log = again.log_events().await.unwrap();
    let stored = read_all(moved.as_ref(), &session).await.unwrap();
    assert!(
        contents(&log) == contents(&stored),
        "the kept log was mixed in"
    );
    again.close().await.unwrap();
}

/// The request a reopened conversation makes goes on from the transcript
/// the kept log carried — through another writer's turn and a branch made
/// meanwhile — and is exactly the one a conversation that read the whole
/// log makes (debug builds also check each step's projection against the
/// whole log's).
#[tokio::test]
async fn a_carried_transcript_gives_the_request_a_whole_read_gives() {
    let store = Arc::new(MemoryStore::new());
    let (session, kept) = kept_after(&store, 3).await;
    let turns = store.turns(&session).await.unwrap();
    let mut other = agent().reopen(store.clone(), &session).await.unwrap();
    other.turn("between").await.unwrap();
    other.branch_from(&turns[1].id).await.unwrap();
    other.turn("second").await.unwrap();
    other.close().await.unwrap();

    // One writer at a time: each request is taken, its conversation
    // closed (keeping), then the whole log's is taken.
    let mut carried = agent().reopen_kept(store.clone(), kept).await.unwrap();
    let from_carried = carried.next_request().await.unwrap().messages;
    let kept = carried.close_keeping().await.unwrap();
    assert_eq!(from_carried, whole_request(&store, &session).await);
    assert!(
        !format!("{from_carried:?}").contains("Meanwhile"),
        "the branch left the other writer's turn behind"
    );

    // A turn on the carried transcript, kept again, reopened again.
    let mut again = agent().reopen_kept(store.clone(), kept).await.unwrap();
    again.turn("first").await.unwrap();
    let kept = again.close_keeping().await.unwrap();
    let mut last = agent().reopen_kept(store.clone(), kept).await.unwrap();
    let from_carried = last.next_request().await.unwrap().messages;
    last.close().await.unwrap();
    assert_eq!(from_carried, whole_request(&store, &session).await);
}

/// The messages of the next request of a conversation that read the whole
/// log of `session`.
async fn whole_request(
    store: &Arc<MemoryStore>,
    session: &str,
) -> Vec<std::sync::Arc<rein_wire::Message>> {
    let mut whole = agent().reopen(store.clone(), session).await.unwrap();
    let messages = whole.next_request().await.unwrap().messages;
    whole.close().await.unwrap();
    messages
}
