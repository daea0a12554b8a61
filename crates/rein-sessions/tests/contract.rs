//! The `Store` contract, run against the in-memory store, a real SQLite
//! file and (with the `postgres` feature) a real PostgreSQL server: the
//! same behaviour from each.

mod common;

use std::time::Duration;

use common::stores::{TTL, finish, open, stores, turn};
use rein_sessions::{Event, NewEvent, history};
use rein_wire::error::codes;
use serde_json::json;

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
#[expect(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
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
        assert_eq!(err.code, codes::LOCK_LOST, "{name}");
        assert_eq!(
            store.renew(&first, TTL).await.unwrap_err().code,
            codes::LOCK_LOST
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
