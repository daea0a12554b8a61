//! The `Store` contract, continued (`contract.rs` has the rest): artifacts,
//! every event kind, and the inbox — the same behaviour from the in-memory
//! store, a real SQLite file and (with the `postgres` feature) a real
//! PostgreSQL server.

mod common;

use common::stores::{open, stores, turn};
use rein_sessions::{
    Event, InboxItem, NewEvent, ResultSource, SessionLock, Slice, Store, ToolStatus,
};
use rein_wire::error::codes;
use serde_json::json;

#[tokio::test]
async fn artifacts_are_content_addressed_and_sliceable() {
    for (name, store, _dir) in stores().await {
        let text = (0..1000).map(|i| format!("line {i}\n")).collect::<String>();
        let a = store
            .put_artifact(text.as_bytes(), "text/plain")
            .await
            .unwrap();
        let b = store
            .put_artifact(text.as_bytes(), "text/plain")
            .await
            .unwrap();
        assert_eq!(a, b, "{name}: stored once");
        assert_eq!(a.hash, rein_sessions::hash_hex(text.as_bytes()));
        assert_eq!(a.size, text.len() as u64);
        assert_eq!(
            store.read_artifact(&a.hash, Slice::Whole).await.unwrap(),
            text.as_bytes()
        );
        assert_eq!(
            store
                .read_artifact(
                    &a.hash,
                    Slice::Lines {
                        start: 10,
                        count: 2
                    }
                )
                .await
                .unwrap(),
            b"line 10\nline 11\n"
        );
        assert_eq!(
            store
                .read_artifact(&a.hash, Slice::Bytes { offset: 7, len: 6 })
                .await
                .unwrap(),
            b"line 1",
            "{name}"
        );
        assert_eq!(
            store
                .read_artifact(
                    &a.hash,
                    Slice::Bytes {
                        offset: 1 << 40,
                        len: 6
                    }
                )
                .await
                .unwrap(),
            b"",
            "{name}"
        );
        let missing = rein_sessions::hash_hex(b"never stored");
        assert_eq!(
            store
                .read_artifact(&missing, Slice::Whole)
                .await
                .unwrap_err()
                .code,
            codes::ARTIFACT_NOT_FOUND
        );
        assert_eq!(
            store
                .read_artifact("../../etc", Slice::Whole)
                .await
                .unwrap_err()
                .code,
            codes::INVALID_INPUT
        );
        let empty = store
            .put_artifact(b"", "application/octet-stream")
            .await
            .unwrap();
        assert_eq!(
            store
                .read_artifact(&empty.hash, Slice::Whole)
                .await
                .unwrap(),
            b"",
            "{name}"
        );
    }
}

#[tokio::test]
async fn every_kind_round_trips_and_unknown_kinds_are_kept() {
    for (name, store, _dir) in stores().await {
        let (id, lease) = open(store.as_ref()).await;
        let events = vec![
            turn("k1", None),
            NewEvent::main(Event::RunStarted {
                run_id: "r1".into(),
                turn_id: "k1".into(),
                budgets: json!({"steps": 100}),
                profile: json!({}),
            }),
            NewEvent::main(Event::ModelRequested {
                call_id: "m1".into(),
                prefix_fingerprint: "0123456789abcdef".into(),
                request_digest: "d".into(),
                estimated_tokens: 42,
                pressure: None,
            }),
            NewEvent::main(Event::ModelCompleted {
                call_id: "m1".into(),
                model: "claude-x".into(),
                message: rein_wire::Message::assistant("hi"),
                usage: Some(rein_wire::Usage {
                    input: 1,
                    output: 2,
                    cache_read: 3,
                    cache_write: 4,
                    reasoning: 0,
                }),
                cost_micro_usd: None,
                reasoning_cost_micro_usd: None,
                stop_reason: Some(rein_wire::StopReason::ToolUse),
                cache_verdict: Some(rein_wire::CacheVerdict::Cold),
                latency_ms: 12,
                repaired: Vec::new(),
            }),
            NewEvent::main(Event::ToolCalled {
                call_id: "c1".into(),
                tool: "read".into(),
                arguments: json!({"p": 1}),
                permission: Some(rein_wire::permission::PermissionClass::Read),
            }),
            NewEvent::main(Event::ToolResult {
                call_id: "c1".into(),
                status: ToolStatus::Ok,
                source: ResultSource::Cache,
                content: json!("x"),
                artifact: None,
                operation_id: Some("op".into()),
                undo: true,
                duration_ms: 3,
                seen: None,
            }),
            NewEvent {
                agent_path: "main/researcher".into(),
                event: Event::AgentStarted {
                    agent_path: "main/researcher".into(),
                    task: "look".into(),
                    call_id: Some("toolu_9".into()),
                    session: Some("s-child".into()),
                },
            },
            NewEvent::main(Event::CompactionCreated {
                from_seq: 2,
                to_seq: 5,
                summary: Box::new(json!({"files": []}).into()),
                target_tokens: 1000,
            }),
            NewEvent::main(Event::Unknown {
                kind: "future.thing".into(),
                version: 3,
                data: json!({"keep": ["me"]}),
            }),
            NewEvent::main(Event::RunFinished {
                run_id: "r1".into(),
                outcome: rein_wire::Ending::Finished,
                totals: json!({}),
            }),
        ];
        let written: Vec<Event> = events.iter().map(|e| e.event.clone()).collect();
        store.append(&lease, events).await.unwrap();
        let back: Vec<Event> = store
            .read(&id, 2, 100)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.event)
            .collect();
        assert_eq!(back, written, "{name}");
    }
}

#[tokio::test]
async fn the_inbox_takes_posts_without_the_lease_and_records_them_once() {
    for (name, store, _dir) in stores().await {
        let (id, lease) = open(store.as_ref()).await;
        // Posting needs no lease: the writer holds it.
        let decision = |by: &str| InboxItem::Decision {
            approval_id: "a1".into(),
            decision: rein_wire::permission::Decision::Approved,
            lease: None,
            by: by.into(),
        };
        let first = store.post(&id, decision("rein approve")).await.unwrap();
        // One approval is decided once.
        let second = store.post(&id, decision("http:bob")).await.unwrap_err();
        assert_eq!(second.code, codes::CONFLICT, "{name}");
        let said = store
            .post(
                &id,
                InboxItem::Say {
                    text: "also x".into(),
                    by: "rein say".into(),
                },
            )
            .await
            .unwrap();
        assert!(said > first, "{name}");
        assert_eq!(
            store
                .post("no-such-session", InboxItem::Stop { by: "x".into() })
                .await
                .unwrap_err()
                .code,
            codes::SESSION_NOT_FOUND,
            "{name}"
        );
        let open_items = store.inbox(&id).await.unwrap();
        assert_eq!(open_items.len(), 2, "{name}");
        assert_eq!(open_items[0].item, decision("rein approve"), "{name}");
        // Taking needs the lease, and records with the events atomically.
        let stranger = SessionLock {
            token: "forged".into(),
            ..lease.clone()
        };
        let err = store
            .take_inbox(
                &stranger,
                said,
                vec![NewEvent::main(Event::SteerSaid {
                    text: "also x".into(),
                })],
            )
            .await
            .unwrap_err();
        assert_eq!(err.code, codes::LOCK_LOST, "{name}");
        assert_eq!(
            store.inbox(&id).await.unwrap().len(),
            2,
            "{name}: nothing taken"
        );
        let stored = store
            .take_inbox(
                &lease,
                first,
                vec![NewEvent::main(Event::SteerSaid { text: "x".into() })],
            )
            .await
            .unwrap();
        assert_eq!(stored.len(), 1, "{name}");
        let left = store.inbox(&id).await.unwrap();
        assert_eq!(left.len(), 1, "{name}");
        assert_eq!(left[0].id, said, "{name}");
        // Taken decisions still block a second one.
        assert_eq!(
            store.post(&id, decision("later")).await.unwrap_err().code,
            codes::CONFLICT,
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_post_in_this_process_wakes_whoever_waits_on_the_inbox() {
    for (name, store, _dir) in stores().await {
        let (id, _lease) = open(store.as_ref()).await;
        let mut first = store.posted(&id);
        let mut second = store.posted(&id);
        assert!(first.hears_every_post(), "{name}: its waiters would poll");
        // Another session's post tells nobody here.
        let (other, _other_lease) = open(store.as_ref()).await;
        store
            .post(&other, InboxItem::Stop { by: "x".into() })
            .await
            .unwrap();
        assert!(!first.fresh(), "{name}: told of another session's post");
        {
            let waiting = first.wait();
            tokio::pin!(waiting);
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            let early = std::future::Future::poll(waiting.as_mut(), &mut cx);
            assert!(early.is_pending(), "{name}: woken by nothing");
        }
        {
            let waiting = first.wait();
            tokio::pin!(waiting);
            store
                .post(
                    &id,
                    InboxItem::Say {
                        text: "hello".into(),
                        by: "rein say".into(),
                    },
                )
                .await
                .unwrap();
            // Woken by the post itself: without it this never completes.
            tokio::time::timeout(std::time::Duration::from_secs(30), waiting)
                .await
                .unwrap_or_else(|_| panic!("{name}: the post woke nobody"));
        }
        // Each holder hears it once, whether it waited or only asks.
        assert!(!first.fresh(), "{name}: heard twice");
        assert!(second.fresh(), "{name}: the second holder missed the post");
        assert!(!second.fresh(), "{name}: the second holder heard it twice");
    }
}

/// A post through another store on the same file — all another process
/// shares with this one — wakes a waiter here, once, without the waiter
/// looking at the store: the store's watcher tells it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_from_another_process_wakes_a_sqlite_waiter_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rein.db");
    let here = rein_sessions::SqliteStore::open(&path).await.unwrap();
    let there = rein_sessions::SqliteStore::open(&path).await.unwrap();
    let (id, _lease) = open(&here).await;
    let mut waiter = here.posted(&id);
    there
        .post(
            &id,
            InboxItem::Stop {
                by: "elsewhere".into(),
            },
        )
        .await
        .unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(30), waiter.wait())
        .await
        .expect("a post from another process woke nobody");
    // Its own posts are not told twice by the watcher.
    let mut own = there.posted(&id);
    there
        .post(
            &id,
            InboxItem::Say {
                text: "again".into(),
                by: "there".into(),
            },
        )
        .await
        .unwrap();
    assert!(own.fresh());
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert!(
        !own.fresh(),
        "the watcher told this process of its own post"
    );
    assert!(
        waiter.fresh(),
        "the second post never reached the other store"
    );
}
