//! What only the PostgreSQL store has to keep: several stores (as several
//! processes hold them, each with its own connections) over one database.
//! Gapless numbering under racing writers and takeovers, live events and
//! inbox posts across stores, missed notifications caught up (`feed`),
//! and a newer schema refused untouched. The rest of its behaviour is the
//! shared contract (`contract.rs`).

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::sync::Arc;
use std::time::Duration;

use rein_sessions::{Event, InboxItem, NewEvent, PgStore, Store, read_all};
use rein_wire::error::codes;
use serde_json::json;

#[path = "postgres/feed.rs"]
mod feed;

fn note(n: usize) -> NewEvent {
    NewEvent::main(Event::Unknown {
        kind: "test.note".into(),
        version: 1,
        data: json!({ "n": n }),
    })
}

/// A fresh database and `n` stores over it, or `None` (said loudly) where
/// the machine has no PostgreSQL.
async fn stores(n: usize) -> Option<(String, Vec<Arc<PgStore>>)> {
    let server = rein_testing::postgres::server()?;
    let url = server.database();
    let mut stores = Vec::new();
    for _ in 0..n {
        stores.push(Arc::new(PgStore::open(&url).await.unwrap()));
    }
    Some((url, stores))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_writers_on_many_stores_number_one_session_without_gaps() {
    let Some((_, stores)) = stores(4).await else {
        return;
    };
    let session = stores[0].create_session(json!({})).await.unwrap().id;
    // Each writer takes the lease for a short while, appends, lets go;
    // the others wait their turn or take it over when it lapses.
    let mut writers = Vec::new();
    for (w, store) in stores.iter().enumerate() {
        let store = store.clone();
        let session = session.clone();
        writers.push(tokio::spawn(async move {
            let mut appended = 0;
            while appended < 10 {
                let lease = match store
                    .acquire(&session, &format!("writer {w}"), Duration::from_millis(300))
                    .await
                {
                    Ok(lease) => lease,
                    Err(err) if err.code == codes::SESSION_LOCKED => {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        continue;
                    }
                    Err(err) => panic!("{err}"),
                };
                match store
                    .append(
                        &lease,
                        vec![note(w * 100 + appended), note(w * 100 + appended)],
                    )
                    .await
                {
                    Ok(_) => appended += 1,
                    Err(err) if err.code == codes::LOCK_LOST => {}
                    Err(err) => panic!("{err}"),
                }
                store.release(&lease).await.unwrap();
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    let log = read_all(stores[1].as_ref(), &session).await.unwrap();
    assert_eq!(log.len(), 1 + 4 * 10 * 2);
    for (i, event) in log.iter().enumerate() {
        assert_eq!(event.seq, i as u64 + 1);
    }
    // Each batch landed whole: its two events are next to each other.
    for pair in log[1..].chunks(2) {
        assert_eq!(pair[0].event, pair[1].event);
    }
    assert_eq!(stores[2].session(&session).await.unwrap().head_seq, 81);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_to_one_store_wakes_a_waiter_on_another() {
    let Some((_, stores)) = stores(2).await else {
        return;
    };
    let session = stores[0].create_session(json!({})).await.unwrap().id;
    let mut posted = stores[0].posted(&session);
    assert!(!posted.fresh());
    stores[1]
        .post(
            &session,
            InboxItem::Say {
                text: "and also this".into(),
                by: "alice".into(),
            },
        )
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), posted.wait())
        .await
        .expect("the waiter on the other store wakes");
    assert_eq!(stores[0].inbox(&session).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_database_of_a_newer_schema_is_refused_and_left_as_it_is() {
    let Some((url, stores)) = stores(1).await else {
        return;
    };
    drop(stores);
    let admin = sqlx::PgPool::connect(&url).await.unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (9999, 'from the future', TRUE, '\\x00', 0)",
    )
    .execute(&admin)
    .await
    .unwrap();
    let tables = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'",
        )
        .fetch_one(&admin)
        .await
        .unwrap()
    };
    let before = tables().await;
    let err = PgStore::open(&url).await.unwrap_err();
    assert_eq!(err.code, codes::STORE_SCHEMA_NEWER, "{err}");
    assert_eq!(tables().await, before);
    let versions: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&admin)
        .await
        .unwrap();
    let known = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations-postgres"))
        .unwrap()
        .count();
    assert_eq!(versions, known as i64 + 1, "nothing migrated");
}

#[tokio::test]
async fn a_bad_url_is_a_coded_error_that_shows_no_password() {
    let err = PgStore::open("postgres://me:hunter2@127.0.0.1:1/db?password=hunter2")
        .await
        .unwrap_err();
    assert_eq!(err.code, codes::STORE_UNAVAILABLE, "{err}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
    let err = PgStore::open("not a url").await.unwrap_err();
    assert_eq!(err.code, codes::INVALID_INPUT, "{err}");
}

/// Workers that fill several places at once (`claim_tasks`) still get
/// each task once, each claim its own token: a claim's result is taken
/// with its own token only, never with another of the same batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_taken_in_batches_give_each_task_once_with_a_token_of_its_own() {
    let Some((_, stores)) = stores(4).await else {
        return;
    };
    let graph = stores[0].create_session(json!({})).await.unwrap().id;
    let queue = stores[0].queue();
    for n in 0..60 {
        queue
            .enqueue(&graph, &format!("t{n:02}"), 1, &format!("{{\"n\":{n}}}"))
            .await
            .unwrap();
    }
    assert!(
        queue
            .claim_tasks("none", Duration::from_secs(60), 0)
            .await
            .unwrap()
            .is_empty()
    );
    let mut claiming = Vec::new();
    for (w, store) in stores.iter().enumerate() {
        let queue = store.queue();
        claiming.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let batch = queue
                    .claim_tasks(&format!("w{w}"), Duration::from_secs(60), 7)
                    .await
                    .unwrap();
                if batch.is_empty() {
                    return mine;
                }
                assert!(batch.len() <= 7);
                if let [first, second, ..] = batch.as_slice() {
                    assert_ne!(first.claim.token, second.claim.token);
                    let mut crossed = second.claim.clone();
                    crossed.token.clone_from(&first.claim.token);
                    assert!(!queue.complete(&crossed, true, "not mine").await.unwrap());
                }
                for task in batch {
                    let n = task
                        .claim
                        .task
                        .trim_start_matches('t')
                        .parse::<u32>()
                        .unwrap();
                    assert_eq!(task.payload, format!("{{\"n\":{n}}}"));
                    assert!(queue.complete(&task.claim, true, "ok").await.unwrap());
                    mine.push(task.claim.task);
                }
            }
        }));
    }
    let mut all = Vec::new();
    for worker in claiming {
        all.extend(worker.await.unwrap());
    }
    all.sort();
    assert_eq!(all.len(), 60);
    all.dedup();
    assert_eq!(all.len(), 60, "no task claimed twice");
    // Asking for more than any worker has places is bounded, not an
    // allocation of that many tokens.
    queue.enqueue(&graph, "last", 1, "{}").await.unwrap();
    let greedy = queue
        .claim_tasks("greedy", Duration::from_secs(60), usize::MAX)
        .await
        .unwrap();
    assert_eq!(greedy.len(), 1);
    assert!(queue.complete(&greedy[0].claim, true, "ok").await.unwrap());
    let attempts = queue.attempts(&graph).await.unwrap();
    assert!(
        attempts
            .iter()
            .all(|(_, _, claims, state)| *claims == 1 && state == "done"),
        "{attempts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[expect(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
async fn workers_claim_each_task_once_a_lapsed_claim_is_taken_and_only_its_holder_completes() {
    let Some((_, stores)) = stores(4).await else {
        return;
    };
    let graph = stores[0].create_session(json!({})).await.unwrap().id;
    let queue = stores[0].queue();
    for n in 0..40 {
        queue
            .enqueue(&graph, &format!("t{n:02}"), 1, "{}")
            .await
            .unwrap();
    }
    // Four workers on four stores claim at once: each task goes to one.
    let mut claiming = Vec::new();
    for (w, store) in stores.iter().enumerate() {
        let queue = store.queue();
        claiming.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            while let Some(task) = queue
                .claim_task(&format!("w{w}"), Duration::from_secs(60))
                .await
                .unwrap()
            {
                assert!(queue.complete(&task.claim, true, "ok").await.unwrap());
                mine.push(task.claim.task);
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for worker in claiming {
        all.extend(worker.await.unwrap());
    }
    all.sort();
    assert_eq!(all.len(), 40);
    all.dedup();
    assert_eq!(all.len(), 40, "no task claimed twice");

    // A claim that lapses is taken by the next worker; the first one's
    // renewal and result are refused, the second's taken once.
    queue.enqueue(&graph, "slow", 1, "{\"n\":1}").await.unwrap();
    let first = queue
        .claim_task("dies", Duration::from_millis(200))
        .await
        .unwrap()
        .unwrap();
    assert!(
        queue
            .claim_task("other", Duration::from_secs(60))
            .await
            .unwrap()
            .is_none()
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = stores[1]
        .queue()
        .claim_task("lives", Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((second.claim.task.as_str(), second.claims), ("slow", 2));
    assert_eq!(second.payload, "{\"n\":1}");
    assert!(
        !queue
            .renew_task(&first.claim, Duration::from_secs(60))
            .await
            .unwrap()
    );
    assert!(!queue.complete(&first.claim, true, "late").await.unwrap());
    assert!(queue.complete(&second.claim, true, "kept").await.unwrap());
    assert!(!queue.complete(&second.claim, true, "twice").await.unwrap());
    assert_eq!(
        queue.result(&graph, "slow", 1).await.unwrap(),
        rein_sessions::TaskResult::Done {
            ok: true,
            result: "kept".into()
        }
    );

    // A graph is driven by one process at a time; a lapsed driver's graph
    // is taken over; a finished one is not offered again.
    queue.submit_graph(&graph).await.unwrap();
    let driver = queue
        .claim_graph("a", Duration::from_millis(200))
        .await
        .unwrap()
        .unwrap();
    assert!(
        queue
            .claim_graph("b", Duration::from_secs(60))
            .await
            .unwrap()
            .is_none()
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let taken = queue
        .claim_graph("b", Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    assert!(
        !queue
            .renew_graph(&driver, Duration::from_secs(60))
            .await
            .unwrap()
    );
    queue.finish_graph(&taken).await.unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(
        queue
            .claim_graph("c", Duration::from_secs(60))
            .await
            .unwrap()
            .is_none()
    );
}

/// A role of the cluster with no grant on rein's tables hears nothing of
/// what moves: it cannot read the channels' key, and the names it could
/// guess (`rein_events`, `rein_inbox`, the names without a key) are silent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_without_a_grant_cannot_listen_to_the_store() {
    use sqlx::Connection as _;
    let Some((url, stores)) = stores(2).await else {
        return;
    };
    let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
    sqlx::query("DROP ROLE IF EXISTS stranger")
        .execute(&mut admin)
        .await
        .unwrap();
    sqlx::query("CREATE ROLE stranger LOGIN")
        .execute(&mut admin)
        .await
        .unwrap();
    let theirs = url.replacen("://rein@", "://stranger@", 1);
    let mut stranger = sqlx::PgConnection::connect(&theirs).await.unwrap();
    let key = sqlx::query("SELECT key FROM channel_key")
        .execute(&mut stranger)
        .await
        .unwrap_err()
        .to_string();
    assert!(key.contains("permission denied"), "{key}");
    let mut listener = sqlx::postgres::PgListener::connect(&theirs).await.unwrap();
    listener
        .listen_all(["rein_events", "rein_inbox", "rein_events_", "rein_inbox_"])
        .await
        .unwrap();
    let session = stores[0].create_session(json!({})).await.unwrap().id;
    let lease = stores[0]
        .acquire(&session, "writer", Duration::from_secs(30))
        .await
        .unwrap();
    stores[0].append(&lease, vec![note(1)]).await.unwrap();
    stores[0]
        .post(
            &session,
            InboxItem::Say {
                text: "heard by whom".into(),
                by: "alice".into(),
            },
        )
        .await
        .unwrap();
    let heard = tokio::time::timeout(Duration::from_secs(2), listener.recv()).await;
    assert!(heard.is_err(), "a stranger heard {heard:?}");
    // The store's own processes still hear each other.
    let mut events = stores[1].subscribe(&session);
    stores[0].append(&lease, vec![note(2)]).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .expect("another store hears the append")
        .unwrap();
}

/// How many transactions inserted the `test.note` events (each row's
/// `xmin`).
async fn note_transactions(url: &str) -> i64 {
    let admin = sqlx::PgPool::connect(url).await.unwrap();
    sqlx::query_scalar("SELECT count(DISTINCT xmin::text) FROM events WHERE kind = 'test.note'")
        .fetch_one(&admin)
        .await
        .unwrap()
}

/// Forty conversations of one process append at once, five times each, and
/// one of them has lost its lock and one writes a prompt PostgreSQL cannot
/// store (a NUL byte): every other append lands whole, in order, and the
/// appends share transactions (group commit) — counted by the inserting
/// transaction of each event row.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_process_appends_share_commits_and_one_fault_fails_no_other_append() {
    let Some((url, stores)) = stores(2).await else {
        return;
    };
    let (store, rival) = (stores[0].clone(), stores[1].clone());
    let mut locks = Vec::new();
    for _ in 0..40 {
        let id = store.create_session(json!({})).await.unwrap().id;
        locks.push(
            store
                .acquire(&id, "batch test", Duration::from_secs(60))
                .await
                .unwrap(),
        );
    }
    // Session 0's lock lapses and another process takes the session over.
    let lost = store
        .acquire(
            &store.create_session(json!({})).await.unwrap().id,
            "loses it",
            Duration::from_millis(1),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    rival
        .acquire(&lost.session_id, "rival", Duration::from_secs(60))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for (i, lock) in locks.iter().cloned().enumerate() {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            for round in 0..5 {
                let events = if i == 7 && round == 2 {
                    vec![NewEvent::main(Event::TurnStarted {
                        turn_id: format!("nul-{i}"),
                        parent: None,
                        prompt: "a\0b".into(),
                    })]
                } else {
                    vec![note(i * 10 + round), note(i * 10 + round)]
                };
                answers.push(store.append(&lock, events).await.map(|s| s.len()));
            }
            answers
        }));
    }
    let lost_answer = {
        let store = store.clone();
        tokio::spawn(async move { store.append(&lost, vec![note(999)]).await })
    };
    let mut landed = 0;
    for (i, task) in tasks.into_iter().enumerate() {
        for (round, answer) in task.await.unwrap().into_iter().enumerate() {
            if i == 7 && round == 2 {
                let err = answer.unwrap_err();
                assert_eq!(err.code, codes::STORE_UNAVAILABLE, "{err}");
            } else {
                assert_eq!(answer.unwrap(), 2, "conversation {i}, round {round}");
                landed += 1;
            }
        }
    }
    assert_eq!(
        lost_answer.await.unwrap().unwrap_err().code,
        codes::LOCK_LOST
    );
    for (i, lock) in locks.iter().enumerate() {
        let log = read_all(store.as_ref(), &lock.session_id).await.unwrap();
        let notes: Vec<u64> = log[1..]
            .iter()
            .map(|e| match &e.event {
                Event::Unknown { data, .. } => data["n"].as_u64().unwrap(),
                other => panic!("{other:?}"),
            })
            .collect();
        let rounds: Vec<u64> = (0..5u64)
            .filter(|r| !(i == 7 && *r == 2))
            .flat_map(|r| [i as u64 * 10 + r; 2])
            .collect();
        assert_eq!(
            notes, rounds,
            "conversation {i}: every append whole, in order"
        );
        for (at, event) in log.iter().enumerate() {
            assert_eq!(event.seq, at as u64 + 1);
        }
        let head = store.session(&lock.session_id).await.unwrap().head_seq;
        assert_eq!(head, log.len() as u64);
    }
    let transactions = note_transactions(&url).await;
    assert!(
        transactions * 2 <= landed,
        "{landed} appends in {transactions} transactions: the appends did not share commits"
    );
}
