//! Group commit under SIGKILL: a child appends to forty sessions at once
//! (so the writer commits many sessions' appends together) and prints each
//! append it was told is done; it is killed at a random moment. After
//! reopening, every append the child was told about is there whole, no
//! append is there in part, and every session's log is gapless with its
//! head where the log ends.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::sync::Arc;
use std::time::Duration;

use common::{Rng, helper_env, spawn_helper, wait_for};
use rein_sessions::{Event, NewEvent, SqliteStore, Store};
use serde_json::json;

const SESSIONS: usize = 40;

/// Child: append to every session at once, forever; print `told S R B`
/// after each append of batch B (of round R) to session S returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "helper run as a child process by group_commit_survives_sigkill"]
async fn helper_group_appends() {
    let Some((db, work)) = helper_env() else {
        return;
    };
    let (round, sessions) = work.split_once('|').unwrap();
    let round = round.to_owned();
    let store = Arc::new(SqliteStore::open(&db).await.unwrap());
    // Every lease first (a killed predecessor's are taken over: its process
    // is gone), then all the appending at once.
    let mut leases = Vec::new();
    for session in sessions.split(',') {
        leases.push(
            store
                .acquire(session, "group-commit helper", Duration::from_secs(600))
                .await
                .unwrap(),
        );
    }
    let mut tasks = Vec::new();
    for lease in leases {
        let store = store.clone();
        let round = round.clone();
        tasks.push(tokio::spawn(async move {
            for batch in 0u64.. {
                let size = 1 + (batch % 4) as usize;
                let events = (0..size)
                    .map(|i| {
                        NewEvent::main(Event::SteerSaid {
                            text: format!("r{round}b{batch}:{i}/{size}"),
                        })
                    })
                    .collect();
                store.append(&lease, events).await.unwrap();
                println!("told {} {round} {batch}", lease.session_id);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// `r{round}b{batch}:{i}/{size}` → ((round, batch), i, size).
fn label(text: &str) -> ((u64, u64), usize, usize) {
    let (rb, rest) = text.trim_start_matches('r').split_once(':').unwrap();
    let (r, b) = rb.split_once('b').unwrap();
    let (i, n) = rest.split_once('/').unwrap();
    (
        (r.parse().unwrap(), b.parse().unwrap()),
        i.parse().unwrap(),
        n.parse().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_commit_survives_sigkill_with_many_sessions_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rein.db");
    let sessions: Vec<String> = {
        let store = SqliteStore::open(&db).await.unwrap();
        let mut ids = Vec::new();
        for n in 0..SESSIONS {
            ids.push(store.create_session(json!({"n": n})).await.unwrap().id);
        }
        store.close().await;
        ids
    };
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("group commit crash test seed {seed}");
    let mut rng = Rng(seed);
    let mut told: BTreeSet<(String, (u64, u64))> = BTreeSet::new();
    let mut last_total = 0;
    for round in 0..10u64 {
        let work = format!("{round}|{}", sessions.join(","));
        let (mut child, mut out) = spawn_helper("helper_group_appends", &db, &work);
        // Once one append is done, the kill may come at any moment.
        wait_for(&mut out, "told ");
        // Read everything it says while it runs, so it never waits on the pipe.
        let reader =
            std::thread::spawn(move || out.lines().map_while(Result::ok).collect::<Vec<_>>());
        std::thread::sleep(Duration::from_micros(rng.next() % 50_000));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // Whatever the child printed before it died, it was told.
        for line in reader.join().unwrap() {
            let Some(at) = line.find("told ") else {
                continue;
            };
            let mut words = line[at + 5..].split_whitespace();
            let (Some(s), Some(r), Some(b)) = (words.next(), words.next(), words.next()) else {
                continue; // the last line may be cut by the kill
            };
            let (Ok(r), Ok(b)) = (r.parse(), b.parse()) else {
                continue;
            };
            told.insert((s.to_owned(), (r, b)));
        }

        let store = SqliteStore::open(&db).await.unwrap();
        let mut total = 0;
        for session in &sessions {
            let info = store.session(session).await.unwrap();
            let events = store.read(session, 1, usize::MAX >> 1).await.unwrap();
            assert_eq!(events.len() as u64, info.head_seq, "round {round}: head");
            let mut appends: BTreeMap<(u64, u64), (usize, Vec<usize>)> = BTreeMap::new();
            for (i, e) in events.iter().enumerate() {
                assert_eq!(e.seq, i as u64 + 1, "round {round}: gapless");
                if let Event::SteerSaid { text } = &e.event {
                    let (key, i, n) = label(text);
                    let entry = appends.entry(key).or_insert((n, Vec::new()));
                    entry.1.push(i);
                }
            }
            for (key, (size, seen)) in &appends {
                assert_eq!(
                    seen,
                    &(0..*size).collect::<Vec<_>>(),
                    "round {round}: append {key:?} of {session} is whole"
                );
            }
            for (s, key) in told.iter().filter(|(s, _)| s == session) {
                assert!(
                    appends.contains_key(key),
                    "round {round}: {s} was told {key:?} was appended, and it is not there"
                );
            }
            total += appends.len();
        }
        assert!(total > last_total, "round {round}: the child appended");
        last_total = total;
        store.close().await;
    }
    assert!(!told.is_empty());
}

/// `n` new sessions of `store`, each leased.
async fn leased(store: &SqliteStore, n: usize) -> Vec<rein_sessions::SessionLock> {
    let mut leases = Vec::new();
    for _ in 0..n {
        let id = store.create_session(json!({})).await.unwrap().id;
        leases.push(
            store
                .acquire(&id, "test", Duration::from_secs(60))
                .await
                .unwrap(),
        );
    }
    leases
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_write_fails_alone_and_one_session_stays_gapless_in_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let leases = leased(&store, 20).await;
    // Every other session's lease is gone: its appends must be refused
    // while the rest of the same batches commit.
    for lease in leases.iter().step_by(2) {
        store.release(lease).await.unwrap();
    }
    let mut tasks = Vec::new();
    for (n, lease) in leases.iter().enumerate() {
        // Ten appends at once per session, so batches mix sessions and
        // hold several appends of one session.
        for k in 0..10 {
            let (store, lease) = (store.clone(), lease.clone());
            tasks.push(tokio::spawn(async move {
                let said = NewEvent::main(Event::SteerSaid {
                    text: format!("{n}/{k}"),
                });
                (n, store.append(&lease, vec![said]).await)
            }));
        }
    }
    for task in tasks {
        let (n, result) = task.await.unwrap();
        match result {
            Ok(_) => assert!(n % 2 == 1, "session {n} appended without its lease"),
            Err(err) => {
                assert!(n % 2 == 0, "session {n}: {err}");
                assert_eq!(err.code, rein_wire::error::codes::LOCK_LOST);
            }
        }
    }
    for (n, lease) in leases.iter().enumerate() {
        let events = store.read(&lease.session_id, 1, 100).await.unwrap();
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        let expected = if n % 2 == 1 { 11 } else { 1 };
        assert_eq!(seqs, (1..=expected).collect::<Vec<_>>(), "session {n}");
    }
}

/// A write refused after it had changed something (here a trigger the test
/// adds refuses a turn whose prompt says so, after the append's events were
/// inserted) is rolled back alone: the batch runs again write by write,
/// the others in it commit, and its session stays gapless.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_refused_halfway_is_rolled_back_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rein.db");
    let store = Arc::new(SqliteStore::open(&path).await.unwrap());
    let leases = leased(&store, 10).await;
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER refuse_poison BEFORE INSERT ON turns WHEN NEW.prompt = 'poison' \
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;",
        )
        .unwrap();
    let mut tasks = Vec::new();
    for round in 0..5 {
        for (n, lease) in leases.iter().enumerate() {
            let (store, lease) = (store.clone(), lease.clone());
            let poisoned = n % 3 == 0 && round == 2;
            tasks.push(tokio::spawn(async move {
                let events = vec![
                    NewEvent::main(Event::SteerSaid {
                        text: format!("{n}/{round}"),
                    }),
                    NewEvent::main(Event::TurnStarted {
                        turn_id: format!("t-{n}-{round}"),
                        parent: None,
                        prompt: if poisoned { "poison" } else { "fine" }.to_owned(),
                    }),
                ];
                (n, poisoned, store.append(&lease, events).await)
            }));
        }
    }
    let mut appended = vec![0u64; leases.len()];
    for task in tasks {
        let (n, poisoned, result) = task.await.unwrap();
        match result {
            Ok(stored) => {
                assert!(!poisoned, "session {n}: a refused write committed");
                assert_eq!(stored.len(), 2);
                appended[n] += 2;
            }
            Err(err) => assert!(poisoned, "session {n}: {err}"),
        }
    }
    for (n, lease) in leases.iter().enumerate() {
        let events = store.read(&lease.session_id, 1, 100).await.unwrap();
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(
            seqs,
            (1..=1 + appended[n]).collect::<Vec<_>>(),
            "session {n}"
        );
        assert_eq!(appended[n], if n % 3 == 0 { 8 } else { 10 }, "session {n}");
        assert!(
            !events.iter().any(
                |e| matches!(&e.event, Event::TurnStarted { prompt, .. } if prompt == "poison")
            ),
            "session {n} kept part of a refused write"
        );
        let head = store.session(&lease.session_id).await.unwrap().head_seq;
        assert_eq!(head, 1 + appended[n], "session {n}");
    }
}
