//! The `Store` contract, run against the in-memory store, a real SQLite
//! file and (with the `postgres` feature) a real PostgreSQL server: the
//! same behaviour from each.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::sync::Arc;
use std::time::Duration;

use rein_sessions::{
    Event, InboxItem, Lease, MemoryStore, NewEvent, ResultSource, Slice, SqliteStore, Store,
    ToolStatus, history,
};
use rein_wire::error::codes;
use serde_json::json;

const TTL: Duration = Duration::from_secs(60);

async fn stores() -> Vec<(&'static str, Arc<dyn Store>, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("rein.db")).await.unwrap();
    #[cfg_attr(
        not(feature = "postgres"),
        expect(unused_mut, reason = "one more with postgres")
    )]
    let mut stores = vec![
        (
            "memory",
            Arc::new(MemoryStore::new()) as Arc<dyn Store>,
            None,
        ),
        ("sqlite", Arc::new(sqlite) as Arc<dyn Store>, Some(dir)),
    ];
    #[cfg(feature = "postgres")]
    if let Some(server) = rein_testing::postgres::server() {
        let pg = rein_sessions::PgStore::open(&server.database())
            .await
            .unwrap();
        stores.push(("postgres", Arc::new(pg) as Arc<dyn Store>, None));
    }
    stores
}

fn turn(id: &str, parent: Option<&str>) -> NewEvent {
    NewEvent::main(Event::TurnStarted {
        turn_id: id.into(),
        parent: parent.map(str::to_owned),
        prompt: format!("prompt {id}"),
    })
}

fn finish(id: &str) -> NewEvent {
    NewEvent::main(Event::TurnFinished {
        turn_id: id.into(),
        outcome: rein_wire::Ending::Finished,
        reply: Some(format!("reply {id}")),
    })
}

async fn open(store: &dyn Store) -> (String, Lease) {
    let session = store.create_session(json!({"app": "test"})).await.unwrap();
    let lease = store
        .acquire(&session.id, "test-writer", TTL)
        .await
        .unwrap();
    (session.id, lease)
}

#[tokio::test]
async fn sessions_open_reopen_and_list() {
    for (name, store, _dir) in stores().await {
        let a = store
            .create_session(json!({"title": "first", "nested": {"k": [1]}}))
            .await
            .unwrap();
        let b = store.create_session(json!(null)).await.unwrap();
        let again = store.session(&a.id).await.unwrap();
        assert_eq!(
            again.metadata,
            json!({"title": "first", "nested": {"k": [1]}}),
            "{name}"
        );
        assert_eq!(again.head_seq, 1, "{name}: session.created is event 1");
        let listed: Vec<String> = store
            .list_sessions(10)
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(
            listed,
            vec![b.id.clone(), a.id.clone()],
            "{name}: newest first"
        );
        let err = store.session("no-such-session").await.unwrap_err();
        assert_eq!(err.code, codes::SESSION_NOT_FOUND, "{name}");
        let err = store.read("no-such-session", 1, 10).await.unwrap_err();
        assert_eq!(err.code, codes::SESSION_NOT_FOUND, "{name}");
        let first = store.read(&a.id, 1, 10).await.unwrap();
        assert!(
            matches!(first[0].event, Event::SessionCreated { .. }),
            "{name}"
        );
    }
}

#[tokio::test]
async fn sessions_are_found_by_a_metadata_string_and_nothing_else() {
    for (name, store, _dir) in stores().await {
        let ids = |found: Vec<rein_sessions::SessionInfo>| -> Vec<String> {
            found.into_iter().map(|s| s.id).collect()
        };
        let old = store
            .create_session(json!({"graph": "g1", "graph_task": "a"}))
            .await
            .unwrap();
        let new = store
            .create_session(json!({"graph": "g1", "graph_task": "b"}))
            .await
            .unwrap();
        // Near misses: another graph, the value as a number or nested, a
        // key that only a JSON path would read into.
        for metadata in [
            json!({"graph": "g2"}),
            json!({"graph": 1}),
            json!({"graph": ["g1"]}),
            json!({"nested": {"graph": "g1"}}),
            json!({"graph.x": "g1"}),
            json!(null),
        ] {
            store.create_session(metadata).await.unwrap();
        }
        let found = store.sessions_where("graph", "g1", 10).await.unwrap();
        assert_eq!(ids(found), vec![new.id.clone(), old.id.clone()], "{name}");
        let found = store.sessions_where("graph", "g1", 1).await.unwrap();
        assert_eq!(ids(found), vec![new.id.clone()], "{name}: the limit holds");
        let found = store.sessions_where("graph", "1", 10).await.unwrap();
        assert!(found.is_empty(), "{name}: a number is not its text");
        let found = store
            .sessions_where("graph", "' OR 1=1 --", 10)
            .await
            .unwrap();
        assert!(found.is_empty(), "{name}");
        for key in ["", "graph.x", "nested.graph", "a\"b", "$", "graph'--"] {
            let err = store.sessions_where(key, "g1", 10).await.unwrap_err();
            assert_eq!(err.code, codes::INVALID_INPUT, "{name}: {key}");
        }
    }
}

#[tokio::test]
async fn appends_are_gapless_ordered_and_readable_from_any_point() {
    for (name, store, _dir) in stores().await {
        let (id, lease) = open(store.as_ref()).await;
        for batch in 0..10 {
            let events: Vec<NewEvent> = (0..7)
                .map(|i| NewEvent {
                    agent_path: format!("main/w{i}"),
                    event: Event::SteerSaid {
                        text: format!("{batch}-{i}"),
                    },
                })
                .collect();
            let stored = store.append(&lease, events).await.unwrap();
            assert_eq!(stored.len(), 7);
        }
        let all = store.read(&id, 1, 1000).await.unwrap();
        assert_eq!(all.len(), 71, "{name}");
        for (i, e) in all.iter().enumerate() {
            assert_eq!(e.seq, i as u64 + 1, "{name}: gapless");
        }
        let tail = store.read(&id, 60, 5).await.unwrap();
        assert_eq!(
            tail.iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![60, 61, 62, 63, 64],
            "{name}"
        );
        // seq 60 is the 59th appended event: (60 - 2) % 7 = 2.
        assert_eq!(tail[0].agent_path, "main/w2", "{name}");
        assert!(store.read(&id, 1000, 5).await.unwrap().is_empty());
        assert_eq!(store.session(&id).await.unwrap().head_seq, 71);
    }
}

#[tokio::test]
async fn a_failing_batch_leaves_nothing_behind() {
    for (name, store, _dir) in stores().await {
        let (id, lease) = open(store.as_ref()).await;
        store.append(&lease, vec![turn("t1", None)]).await.unwrap();
        let before = store.read(&id, 1, 100).await.unwrap();
        // The second event of the batch refers to a turn that does not exist.
        let err = store
            .append(
                &lease,
                vec![
                    NewEvent::main(Event::SteerSaid { text: "x".into() }),
                    turn("t2", Some("nope")),
                ],
            )
            .await
            .unwrap_err();
        assert_eq!(err.code, codes::TURN_NOT_FOUND, "{name}");
        assert_eq!(
            store.read(&id, 1, 100).await.unwrap(),
            before,
            "{name}: nothing appended"
        );
        assert_eq!(store.turns(&id).await.unwrap().len(), 1, "{name}");
        // A duplicate turn id is refused too.
        let err = store
            .append(&lease, vec![turn("t1", None)])
            .await
            .unwrap_err();
        assert_eq!(err.code, codes::INVALID_INPUT, "{name}");
    }
}

#[tokio::test]
async fn subscribers_get_every_committed_event_in_order() {
    for (name, store, _dir) in stores().await {
        let (id, lease) = open(store.as_ref()).await;
        let mut rx = store.subscribe(&id);
        store
            .append(&lease, vec![turn("s1", None), finish("s1")])
            .await
            .unwrap();
        store
            .append(
                &lease,
                vec![NewEvent::main(Event::SteerSaid {
                    text: "more".into(),
                })],
            )
            .await
            .unwrap();
        let got: Vec<u64> = vec![
            rx.recv().await.unwrap().seq,
            rx.recv().await.unwrap().seq,
            rx.recv().await.unwrap().seq,
        ];
        assert_eq!(got, vec![2, 3, 4], "{name}");
    }
}

#[tokio::test]
async fn the_turn_tree_branches_without_rewriting() {
    for (name, store, _dir) in stores().await {
        let (id, lease) = open(store.as_ref()).await;
        //   a ─ b ─ c
        //        └─ d ─ e
        //   a ─ f
        //   g (a second root)
        store
            .append(&lease, vec![turn("a", None), finish("a")])
            .await
            .unwrap();
        store
            .append(&lease, vec![turn("b", Some("a")), finish("b")])
            .await
            .unwrap();
        store
            .append(&lease, vec![turn("c", Some("b")), finish("c")])
            .await
            .unwrap();
        let before_branch = store.read(&id, 1, 1000).await.unwrap();
        store
            .append(
                &lease,
                vec![NewEvent::main(Event::BranchCreated {
                    from_turn: Some("b".into()),
                })],
            )
            .await
            .unwrap();
        assert_eq!(
            store.session(&id).await.unwrap().head_turn.as_deref(),
            Some("b"),
            "{name}"
        );
        store
            .append(&lease, vec![turn("d", Some("b")), finish("d")])
            .await
            .unwrap();
        store
            .append(&lease, vec![turn("e", Some("d"))])
            .await
            .unwrap();
        store
            .append(
                &lease,
                vec![NewEvent::main(Event::BranchCreated {
                    from_turn: Some("a".into()),
                })],
            )
            .await
            .unwrap();
        store
            .append(&lease, vec![turn("f", Some("a")), finish("f")])
            .await
            .unwrap();
        store
            .append(
                &lease,
                vec![NewEvent::main(Event::BranchCreated { from_turn: None })],
            )
            .await
            .unwrap();
        store.append(&lease, vec![turn("g", None)]).await.unwrap();

        // Nothing before the branch changed.
        let after = store.read(&id, 1, 1000).await.unwrap();
        assert_eq!(&after[..before_branch.len()], &before_branch[..], "{name}");

        let turns = store.turns(&id).await.unwrap();
        assert_eq!(
            turns.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
            ["a", "b", "c", "d", "e", "f", "g"]
        );
        let path = |head: &str| {
            history(&turns, head)
                .into_iter()
                .map(|t| t.id)
                .collect::<Vec<_>>()
        };
        assert_eq!(path("c"), ["a", "b", "c"], "{name}");
        assert_eq!(path("e"), ["a", "b", "d", "e"], "{name}");
        assert_eq!(path("f"), ["a", "f"], "{name}");
        assert_eq!(path("g"), ["g"], "{name}");
        let e = turns.iter().find(|t| t.id == "e").unwrap();
        assert!(e.finished_seq.is_none() && e.outcome.is_none(), "{name}");
        let d = turns.iter().find(|t| t.id == "d").unwrap();
        assert_eq!(d.outcome.map(|o| o.as_str()), Some("finished"));
        assert_eq!(
            store.session(&id).await.unwrap().head_turn.as_deref(),
            Some("g")
        );

        // A branch from another session's turn is refused, and changes nothing.
        let (other, other_lease) = open(store.as_ref()).await;
        let err = store
            .append(
                &other_lease,
                vec![NewEvent::main(Event::BranchCreated {
                    from_turn: Some("b".into()),
                })],
            )
            .await
            .unwrap_err();
        assert_eq!(err.code, codes::TURN_NOT_IN_SESSION, "{name}");
        assert_eq!(store.session(&other).await.unwrap().head_seq, 1);
        let err = store
            .append(
                &other_lease,
                vec![NewEvent::main(Event::BranchCreated {
                    from_turn: Some("zz".into()),
                })],
            )
            .await
            .unwrap_err();
        assert_eq!(err.code, codes::TURN_NOT_FOUND, "{name}");
    }
}

#[tokio::test]
async fn the_control_record_moves_with_the_log() {
    for (name, store, _dir) in stores().await {
        let (id, lease) = open(store.as_ref()).await;
        let request = |a: &str| {
            NewEvent::main(Event::ApprovalRequested {
                approval_id: a.into(),
                call_id: format!("call-{a}"),
                tool: "write_file".into(),
                arguments: json!({"path": "x"}),
                permission: rein_wire::permission::PermissionClass::SourceFileWrite,
                preview: None,
                bound_to: None,
            })
        };
        let decide = |a: &str| {
            NewEvent::main(Event::ApprovalDecided {
                approval_id: a.into(),
                decision: rein_wire::permission::Decision::Approved,
                by: "terminal".into(),
                lease: None,
            })
        };
        store
            .append(&lease, vec![request("ap1"), request("ap2")])
            .await
            .unwrap();
        let c = store.control(&id).await.unwrap();
        assert!(c.paused, "{name}");
        assert_eq!(c.paused_by.as_deref(), Some("approval"));
        assert_eq!(
            c.pending
                .iter()
                .map(|p| p.approval_id.as_str())
                .collect::<Vec<_>>(),
            ["ap1", "ap2"]
        );
        store.append(&lease, vec![decide("ap1")]).await.unwrap();
        assert!(
            store.control(&id).await.unwrap().paused,
            "{name}: one still pending"
        );
        store.append(&lease, vec![decide("ap2")]).await.unwrap();
        let c = store.control(&id).await.unwrap();
        assert!(!c.paused && c.pending.is_empty(), "{name}");
        store
            .append(
                &lease,
                vec![NewEvent::main(Event::Stopped {
                    by: "person".into(),
                })],
            )
            .await
            .unwrap();
        assert!(store.control(&id).await.unwrap().stopped, "{name}");
    }
}

#[tokio::test]
async fn one_writer_per_session_with_expiring_leases() {
    for (name, store, _dir) in stores().await {
        let session = store.create_session(json!({})).await.unwrap();
        let first = store
            .acquire(
                &session.id,
                "writer-one (pid 1)",
                Duration::from_millis(300),
            )
            .await
            .unwrap();
        let err = store
            .acquire(&session.id, "writer-two", TTL)
            .await
            .unwrap_err();
        assert_eq!(err.code, codes::SESSION_LOCKED, "{name}");
        assert_eq!(err.detail.as_ref().unwrap()["holder"], "writer-one (pid 1)");
        assert_eq!(err.detail.as_ref().unwrap()["since_ms"], first.acquired_ms);
        assert!(err.message.contains("writer-one"));
        // A heartbeat keeps it.
        let first = store
            .renew(&first, Duration::from_millis(300))
            .await
            .unwrap();
        store
            .append(
                &first,
                vec![NewEvent::main(Event::SteerSaid {
                    text: "mine".into(),
                })],
            )
            .await
            .unwrap();
        // Let it lapse, then a second writer takes over.
        tokio::time::sleep(Duration::from_millis(400)).await;
        let second = store.acquire(&session.id, "writer-two", TTL).await.unwrap();
        let err = store
            .append(
                &first,
                vec![NewEvent::main(Event::SteerSaid {
                    text: "late".into(),
                })],
            )
            .await
            .unwrap_err();
        assert_eq!(err.code, codes::LEASE_LOST, "{name}");
        assert_eq!(
            store.renew(&first, TTL).await.unwrap_err().code,
            codes::LEASE_LOST
        );
        store
            .append(
                &second,
                vec![NewEvent::main(Event::SteerSaid {
                    text: "ours".into(),
                })],
            )
            .await
            .unwrap();
        // Releasing frees it at once; a stale release does nothing.
        store.release(&first).await.unwrap();
        assert!(
            store
                .acquire(&session.id, "writer-three", TTL)
                .await
                .is_err()
        );
        store.release(&second).await.unwrap();
        store
            .acquire(&session.id, "writer-three", TTL)
            .await
            .unwrap();
        assert_eq!(
            store.acquire("nope", "w", TTL).await.unwrap_err().code,
            codes::SESSION_NOT_FOUND
        );
    }
}

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
                summary: json!({"files": []}),
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
        let stranger = Lease {
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
        assert_eq!(err.code, codes::LEASE_LOST, "{name}");
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
