//! A store's contents moved into another (`copy`, `Store::import`): every
//! session whole — the same events with the same numbers and times, the
//! same turn tree, control record and listing — and every artifact, into
//! memory, SQLite and PostgreSQL alike; a second copy skips what is there;
//! a log that is not one session's, or a session there at another length,
//! is refused and nothing of it is put.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::sync::Arc;
use std::time::Duration;

use rein_sessions::{Event, MemoryStore, NewEvent, Slice, SqliteStore, Store, copy, read_all};
use rein_wire::error::codes;
use serde_json::json;

async fn targets() -> Vec<(&'static str, Arc<dyn Store>, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("rein.db")).await.unwrap();
    #[cfg_attr(
        not(feature = "postgres"),
        expect(unused_mut, reason = "one more with postgres")
    )]
    let mut targets = vec![
        (
            "memory",
            Arc::new(MemoryStore::new()) as Arc<dyn Store>,
            tempfile::tempdir().unwrap(),
        ),
        ("sqlite", Arc::new(sqlite) as Arc<dyn Store>, dir),
    ];
    #[cfg(feature = "postgres")]
    if let Some(server) = rein_testing::postgres::server() {
        let pg = rein_sessions::PgStore::open(&server.database())
            .await
            .unwrap();
        targets.push((
            "postgres",
            Arc::new(pg) as Arc<dyn Store>,
            tempfile::tempdir().unwrap(),
        ));
    }
    targets
}

/// A source with two sessions: turns, a branch, an approval still pending,
/// and an artifact.
async fn source(dir: &std::path::Path) -> (SqliteStore, Vec<String>) {
    let store = SqliteStore::open(dir.join("source.db")).await.unwrap();
    let mut ids = Vec::new();
    for n in 0..2 {
        let id = store.create_session(json!({"n": n})).await.unwrap().id;
        let lease = store
            .acquire(&id, "test", Duration::from_secs(60))
            .await
            .unwrap();
        let (t1, t2) = (format!("{id}-t1"), format!("{id}-t2"));
        store
            .append(
                &lease,
                vec![
                    NewEvent::main(Event::TurnStarted {
                        turn_id: t1.clone(),
                        parent: None,
                        prompt: "first".into(),
                    }),
                    NewEvent::main(Event::TurnFinished {
                        turn_id: t1.clone(),
                        outcome: rein_wire::Ending::Finished,
                        reply: Some("done".into()),
                    }),
                    NewEvent::main(Event::BranchCreated { from_turn: None }),
                    NewEvent::main(Event::TurnStarted {
                        turn_id: t2,
                        parent: None,
                        prompt: "again".into(),
                    }),
                    NewEvent::main(Event::ApprovalRequested {
                        approval_id: format!("a{n}"),
                        call_id: "c".into(),
                        tool: "write_file".into(),
                        arguments: json!({"path": "x"}),
                        permission: rein_wire::permission::PermissionClass::SourceFileWrite,
                        preview: None,
                        bound_to: None,
                    }),
                ],
            )
            .await
            .unwrap();
        ids.push(id);
    }
    store
        .put_artifact(b"the bytes of a result", "text/plain")
        .await
        .unwrap();
    (store, ids)
}

#[tokio::test]
async fn every_session_and_artifact_arrives_as_it_was_and_a_second_copy_skips_them() {
    let dir = tempfile::tempdir().unwrap();
    let (from, ids) = source(dir.path()).await;
    for (name, to, _dir) in targets().await {
        let copied = copy(&from, to.as_ref()).await.unwrap();
        assert_eq!(
            (copied.sessions, copied.events, copied.artifacts),
            (2, 12, 1),
            "{name}"
        );
        for id in &ids {
            assert_eq!(
                read_all(&from, id).await.unwrap(),
                read_all(to.as_ref(), id).await.unwrap(),
                "{name}"
            );
            assert_eq!(
                from.session(id).await.unwrap(),
                to.session(id).await.unwrap(),
                "{name}"
            );
            assert_eq!(
                from.turns(id).await.unwrap(),
                to.turns(id).await.unwrap(),
                "{name}"
            );
            let control = to.control(id).await.unwrap();
            assert_eq!(from.control(id).await.unwrap(), control, "{name}");
            assert!(control.paused && control.pending.len() == 1, "{name}");
        }
        let listed =
            |s: Vec<rein_sessions::SessionInfo>| s.into_iter().map(|s| s.id).collect::<Vec<_>>();
        assert_eq!(
            listed(from.list_sessions(10).await.unwrap()),
            listed(to.list_sessions(10).await.unwrap()),
            "{name}"
        );
        let hash = rein_sessions::hash_hex(b"the bytes of a result");
        assert_eq!(
            to.read_artifact(&hash, Slice::Whole).await.unwrap(),
            b"the bytes of a result",
            "{name}"
        );
        let again = copy(&from, to.as_ref()).await.unwrap();
        assert_eq!((again.sessions, again.skipped), (0, 2), "{name}");
        // A copied session goes on as any other; the copy no longer
        // matches it, and says so instead of putting it again.
        let lease = to
            .acquire(&ids[0], "after", Duration::from_secs(60))
            .await
            .unwrap();
        let more = to
            .append(
                &lease,
                vec![NewEvent::main(Event::Stopped { by: "test".into() })],
            )
            .await
            .unwrap();
        assert_eq!(more[0].seq, 7, "{name}");
        let err = copy(&from, to.as_ref()).await.unwrap_err();
        assert_eq!(err.code, codes::CONFLICT, "{name}: {err}");
    }
}

#[tokio::test]
async fn a_log_that_is_not_one_whole_session_or_is_there_already_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (from, ids) = source(dir.path()).await;
    let log = read_all(&from, &ids[0]).await.unwrap();
    let info = from.session(&ids[0]).await.unwrap();
    for (name, to, _dir) in targets().await {
        let mut gap = log.clone();
        gap.remove(2);
        let mut foreign = log.clone();
        foreign[3].session_id = ids[1].clone();
        for bad in [gap, foreign, log[1..].to_vec(), Vec::new()] {
            let err = to.import(&info, bad).await.unwrap_err();
            assert_eq!(err.code, codes::INVALID_INPUT, "{name}: {err}");
            assert!(
                to.session(&ids[0]).await.is_err(),
                "{name}: nothing was put"
            );
        }
        to.import(&info, log.clone()).await.unwrap();
        let err = to.import(&info, log[..3].to_vec()).await.unwrap_err();
        assert_eq!(err.code, codes::CONFLICT, "{name}: {err}");
        assert_eq!(read_all(to.as_ref(), &ids[0]).await.unwrap(), log, "{name}");
    }
}
