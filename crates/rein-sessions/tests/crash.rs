//! Crash safety against a real SQLite file and real processes: a child
//! appending in a loop is killed with SIGKILL at random moments, and two
//! processes contend for one session's lock.
//!
//! The children are this test binary itself, re-run on one `#[ignore]`d
//! helper (`helper_*`) with an environment variable saying what to do.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{Rng, helper_env, spawn_helper, wait_for};

use rein_sessions::recovery::dangling;
use rein_sessions::{Event, NewEvent, SqliteStore, Store};
use rein_wire::error::codes;
use serde_json::json;

/// Child: append batches forever (until killed).
#[tokio::test]
#[ignore = "helper run as a child process by append_loop_survives_sigkill"]
async fn helper_append_loop() {
    let Some((db, session)) = helper_env() else {
        return;
    };
    let store = SqliteStore::open(&db).await.unwrap();
    let holder = format!("append-loop pid {}", std::process::id());
    // Under a loaded machine the short lease can lapse between appends; the
    // helper then takes it again (nothing is lost: appends are atomic).
    let acquire = || async {
        loop {
            match store
                .acquire(&session, &holder, Duration::from_millis(300))
                .await
            {
                Ok(lease) => return lease,
                Err(err)
                    if err.code == codes::SESSION_LOCKED
                        || err.code == codes::STORE_UNAVAILABLE =>
                {
                    tokio::time::sleep(Duration::from_millis(20)).await
                }
                Err(err) => panic!("{err}"),
            }
        }
    };
    let mut lease = acquire().await;
    let start = store.session(&session).await.unwrap().head_seq;
    let mut batch = start;
    loop {
        batch += 1;
        let size = 1 + (batch % 5) as usize;
        let mut events: Vec<NewEvent> = (0..size)
            .map(|i| {
                NewEvent::main(Event::SteerSaid {
                    text: format!("b{batch}:{i}/{size}"),
                })
            })
            .collect();
        if batch % 3 == 0 {
            events.push(NewEvent::main(Event::ToolCalled {
                call_id: format!("call-{batch}"),
                tool: "write_file".into(),
                arguments: json!({"batch": batch}),
                permission: Some(rein_wire::permission::PermissionClass::SourceFileWrite),
            }));
        }
        loop {
            match store.append(&lease, events.clone()).await {
                Ok(_) => break,
                Err(err) if err.code == codes::LOCK_LOST => lease = acquire().await,
                Err(err) if err.code == codes::STORE_UNAVAILABLE => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                Err(err) => panic!("{err}"),
            }
        }
        if batch % 4 == 0
            && let Ok(renewed) = store.renew(&lease, Duration::from_millis(300)).await
        {
            lease = renewed;
        }
        if batch == start + 1 {
            println!("appending");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_loop_survives_sigkill_at_random_moments() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rein.db");
    let session = {
        let store = SqliteStore::open(&db).await.unwrap();
        let s = store
            .create_session(json!({"test": "crash"}))
            .await
            .unwrap();
        store.close().await;
        s.id
    };
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("crash test seed {seed}");
    let mut rng = Rng(seed);
    let mut last_head = 1;
    for round in 0..50 {
        let (mut child, mut out) = spawn_helper("helper_append_loop", &db, &session);
        wait_for(&mut out, "appending");
        std::thread::sleep(Duration::from_micros(rng.next() % 60_000));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let store = SqliteStore::open(&db).await.unwrap();
        let info = store.session(&session).await.unwrap();
        let events = store.read(&session, 1, usize::MAX >> 1).await.unwrap();
        assert_eq!(
            events.len() as u64,
            info.head_seq,
            "round {round}: head matches the log"
        );
        assert!(
            info.head_seq > last_head,
            "round {round}: the child appended"
        );
        last_head = info.head_seq;
        let mut batches: BTreeMap<u64, (usize, Vec<usize>)> = BTreeMap::new();
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e.seq, i as u64 + 1, "round {round}: gapless");
            match &e.event {
                Event::SteerSaid { text } => {
                    let (b, rest) = text.trim_start_matches('b').split_once(':').unwrap();
                    let (i, n) = rest.split_once('/').unwrap();
                    let entry = batches
                        .entry(b.parse().unwrap())
                        .or_insert((n.parse().unwrap(), Vec::new()));
                    entry.1.push(i.parse().unwrap());
                }
                Event::SessionCreated { .. } | Event::ToolCalled { .. } => {}
                other => panic!("round {round}: unexpected event {other:?}"),
            }
        }
        for (b, (size, seen)) in &batches {
            assert_eq!(
                seen,
                &(0..*size).collect::<Vec<_>>(),
                "round {round}: batch {b} is whole"
            );
        }
        // Every call recorded without a result is reported as dangling.
        let calls = events
            .iter()
            .filter(|e| matches!(e.event, Event::ToolCalled { .. }))
            .count();
        assert_eq!(dangling(&events).tool_calls.len(), calls, "round {round}");
        store.close().await;
    }
}

/// Child: hold the session's lock with a heartbeat until killed.
#[tokio::test]
#[ignore = "helper run as a child process by a_killed_holder_is_taken_over_after_expiry"]
async fn helper_hold_lock() {
    let Some((db, session)) = helper_env() else {
        return;
    };
    let store = SqliteStore::open(&db).await.unwrap();
    let holder = format!("lock-holder pid {}", std::process::id());
    let mut lease = store
        .acquire(&session, &holder, Duration::from_millis(800))
        .await
        .unwrap();
    println!("locked {}", lease.acquired_ms);
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        lease = store
            .renew(&lease, Duration::from_millis(800))
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_is_taken_over_after_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rein.db");
    let store = SqliteStore::open(&db).await.unwrap();
    let session = store.create_session(json!({})).await.unwrap().id;
    let (mut child, mut out) = spawn_helper("helper_hold_lock", &db, &session);
    let line = wait_for(&mut out, "locked");
    let since: i64 = line.trim_start_matches("locked ").parse().unwrap();

    // While the holder lives (and beats), the second writer is refused with
    // the holder's name and since when — across several lease lengths.
    for _ in 0..3 {
        let err = store
            .acquire(&session, "second", Duration::from_secs(5))
            .await
            .unwrap_err();
        assert_eq!(err.code, codes::SESSION_LOCKED);
        let detail = err.detail.unwrap();
        assert_eq!(detail["holder"], format!("lock-holder pid {}", child.id()));
        assert_eq!(detail["since_ms"], since);
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();

    // After the holder dies its lease runs out and the second writer takes over.
    let deadline = Instant::now() + Duration::from_secs(20);
    let lease = loop {
        match store
            .acquire(&session, "second", Duration::from_secs(5))
            .await
        {
            Ok(lease) => break lease,
            Err(err) if err.code == codes::SESSION_LOCKED && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(err) => panic!("never taken over: {err}"),
        }
    };
    assert_eq!(lease.holder, "second");
    store
        .append(
            &lease,
            vec![NewEvent::main(Event::SteerSaid {
                text: "taken over".into(),
            })],
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_newer_schema_is_refused_and_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rein.db");
    let store = SqliteStore::open(&db).await.unwrap();
    let s = store.create_session(json!({"keep": true})).await.unwrap();
    store.close().await;
    drop(store);
    // Simulate a newer rein: a migration this build does not know.
    {
        use sqlx::Connection;
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
            .await
            .unwrap();
        sqlx::query("INSERT INTO _sqlx_migrations (version, description, installed_on, success, checksum, execution_time) VALUES (9999, 'from the future', CURRENT_TIMESTAMP, 1, x'00', 0)")
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    let err = SqliteStore::open(&db).await.unwrap_err();
    assert_eq!(err.code, codes::STORE_SCHEMA_NEWER);
    assert!(err.message.contains("9999"), "{}", err.message);
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "the database was changed"
    );
    let _ = s;
}

/// A process killed while it first created the store (SQLite's rollback
/// journal is in use until WAL is switched on) leaves a hot journal: the
/// next open rolls it back and goes on, instead of refusing the store for
/// good (`attempt to write a readonly database`). The fixture is the pair
/// of files `cargo xtask chaos` found after such a kill.
#[tokio::test]
async fn a_store_killed_while_first_created_opens_again() {
    let dir = tempfile::tempdir().unwrap();
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hot_journal");
    for name in ["rein.db", "rein.db-journal"] {
        std::fs::copy(fixture.join(name), dir.path().join(name)).unwrap();
    }
    let db = dir.path().join("rein.db");
    let store = SqliteStore::open(&db).await.unwrap();
    assert!(store.list_sessions(10).await.unwrap().is_empty());
    let s = store.create_session(json!({})).await.unwrap();
    assert_eq!(
        store.session(&s.id).await.unwrap().head_seq,
        1,
        "its first event"
    );
    assert!(
        !dir.path().join("rein.db-journal").exists()
            || std::fs::metadata(dir.path().join("rein.db-journal"))
                .unwrap()
                .len()
                == 0
    );
}

/// Two processes opening a store that does not exist yet (`rein serve`
/// and `rein agents run` started together on a new home) both find no
/// schema and both make it; neither may fail for the other's tables, and
/// the schema is made once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_opened_at_once_on_a_new_file_all_open() {
    for round in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("rein.db");
        let opening: Vec<_> = (0..6)
            .map(|_| {
                let db = db.clone();
                tokio::spawn(async move { SqliteStore::open(&db).await })
            })
            .collect();
        let mut stores = Vec::new();
        for opened in opening {
            match opened.await.unwrap() {
                Ok(store) => stores.push(store),
                Err(err) => panic!("round {round}: {err}"),
            }
        }
        let made = stores[0].create_session(json!({})).await.unwrap();
        for store in &stores {
            assert_eq!(store.session(&made.id).await.unwrap().id, made.id);
        }
    }
}
