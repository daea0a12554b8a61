//! A fork copies a session's history up to a finished turn into a new
//! session that names where it came from, never the turn after, never
//! touching the first — and its history is evidence, as an import is.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::time::Duration;

use rein_sessions::{Event, NewEvent, SqliteStore, Store, read_all, recovery};
use rein_wire::Ending;
use serde_json::json;

fn at(event: Event) -> NewEvent {
    NewEvent {
        agent_path: "main".into(),
        event,
    }
}

fn started(id: &str, parent: Option<&str>, prompt: &str) -> NewEvent {
    at(Event::TurnStarted {
        turn_id: id.into(),
        parent: parent.map(str::to_owned),
        prompt: prompt.into(),
    })
}

fn finished(id: &str, outcome: Ending) -> NewEvent {
    at(Event::TurnFinished {
        turn_id: id.into(),
        outcome,
        reply: Some(format!("reply to {id}")),
    })
}

/// A session with turns `a` and `b` finished and `c` paused for a person.
async fn three_turns(store: &SqliteStore) -> String {
    let session = store
        .create_session(json!({"ticket": "T-7"}))
        .await
        .unwrap();
    let lock = store
        .acquire(&session.id, "test", Duration::from_secs(30))
        .await
        .unwrap();
    let events = vec![
        started("a", None, "first"),
        finished("a", Ending::Finished),
        started("b", Some("a"), "second"),
        finished("b", Ending::Finished),
        started("c", Some("b"), "third"),
        finished("c", Ending::AwaitingApproval),
    ];
    store.append(&lock, events).await.unwrap();
    store.release(&lock).await.unwrap();
    session.id
}

fn prompts(events: &[rein_sessions::StoredEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::TurnStarted { prompt, .. } => Some(prompt.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_fork_at_a_turn_copies_up_to_it_and_names_its_origin() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("rein.db")).await.unwrap();
    let first = three_turns(&store).await;
    let before = read_all(&store, &first).await.unwrap().len();

    let forked = rein_trace::fork(&store, &first, Some("a")).await.unwrap();
    assert_eq!(forked.turn.as_deref(), Some("a"));
    assert_ne!(forked.session, first);
    let copy = read_all(&store, &forked.session).await.unwrap();
    assert_eq!(prompts(&copy), ["first"], "nothing after turn a");
    let info = store.session(&forked.session).await.unwrap();
    assert_eq!(info.metadata["ticket"], "T-7", "the metadata travels");
    assert_eq!(
        info.metadata["forked_from"],
        json!({"session": first, "turn": "a"})
    );
    assert!(
        recovery::imported_through(&info.metadata) > 0,
        "evidence, not authority"
    );
    let ids_are_new = copy
        .iter()
        .all(|e| !matches!(&e.event, Event::TurnStarted { turn_id, .. } if turn_id == "a"));
    assert!(ids_are_new, "the copy's ids are its own");
    assert_eq!(
        read_all(&store, &first).await.unwrap().len(),
        before,
        "the first is untouched"
    );

    // With no turn: up to the last finished one; the paused turn stays behind.
    let latest = rein_trace::fork(&store, &first, None).await.unwrap();
    assert_eq!(latest.turn.as_deref(), Some("b"));
    let copy = read_all(&store, &latest.session).await.unwrap();
    assert_eq!(prompts(&copy), ["first", "second"]);
}

#[tokio::test]
async fn a_fork_is_refused_where_there_is_nothing_whole_to_copy() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("rein.db")).await.unwrap();
    let first = three_turns(&store).await;
    let paused = rein_trace::fork(&store, &first, Some("c"))
        .await
        .unwrap_err();
    assert_eq!(paused.code, "invalid_input", "{}", paused.message);
    let unknown = rein_trace::fork(&store, &first, Some("zz"))
        .await
        .unwrap_err();
    assert_eq!(unknown.code, "turn_not_found");
    let nobody = rein_trace::fork(&store, "no-such-session", None)
        .await
        .unwrap_err();
    assert_eq!(nobody.code, "session_not_found");
}
