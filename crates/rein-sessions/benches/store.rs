//! Store benchmarks on real SQLite files: events appended per second (one
//! session; 100 sessions at once; full and process durability), reopening
//! and projecting a session of 100,000 events.
//!
//! Run with `cargo xtask bench store`.

#![expect(
    clippy::unwrap_used,
    reason = "a benchmark harness: a failed set-up should stop it loudly"
)]

use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rein_sessions::recovery::dangling;
use rein_sessions::{Durability, Event, NewEvent, SessionLock, SqliteStore, Store};
use serde_json::json;

fn event(i: usize) -> NewEvent {
    NewEvent::main(Event::ToolResult {
        call_id: format!("call-{i}"),
        status: rein_sessions::ToolStatus::Ok,
        source: rein_sessions::ResultSource::Live,
        content: json!({"text": "a typical small tool result, about a hundred bytes of JSON text in all."}),
        artifact: None,
        operation_id: None,
        undo: false,
        duration_ms: 3,
        seen: None,
    })
}

async fn open_session(store: &SqliteStore) -> SessionLock {
    let s = store.create_session(json!({})).await.unwrap();
    store
        .acquire(&s.id, "bench", Duration::from_secs(3600))
        .await
        .unwrap()
}

fn appends(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("append");
    group.sample_size(10);
    for (name, durability) in [("full", Durability::Full), ("process", Durability::Process)] {
        let store = rt
            .block_on(SqliteStore::open_with(
                dir.path().join(format!("{name}.db")),
                durability,
            ))
            .unwrap();
        let lease = rt.block_on(open_session(&store));
        for batch in [1usize, 10] {
            group.throughput(Throughput::Elements(100 * batch as u64));
            group.bench_function(format!("one_session/{name}/batch_{batch}"), |b| {
                b.iter(|| {
                    rt.block_on(async {
                        for i in 0..100 {
                            store
                                .append(&lease, (0..batch).map(|j| event(i * batch + j)).collect())
                                .await
                                .unwrap();
                        }
                    })
                })
            });
        }
        // 100 sessions appending at once, 10 single-event appends each.
        let store = Arc::new(store);
        let leases: Vec<SessionLock> = rt.block_on(async {
            let mut v = Vec::new();
            for _ in 0..100 {
                v.push(open_session(&store).await);
            }
            v
        });
        group.throughput(Throughput::Elements(100 * 10));
        group.bench_function(format!("hundred_sessions/{name}"), |b| {
            b.iter(|| {
                rt.block_on(async {
                    let mut tasks = Vec::new();
                    for lease in &leases {
                        let store = store.clone();
                        let lease = lease.clone();
                        tasks.push(tokio::spawn(async move {
                            for i in 0..10 {
                                store.append(&lease, vec![event(i)]).await.unwrap();
                            }
                        }));
                    }
                    for t in tasks {
                        t.await.unwrap();
                    }
                })
            })
        });
    }
    group.finish();
}

fn reopen(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.db");
    let id = rt.block_on(async {
        let store = SqliteStore::open_with(&path, Durability::Process)
            .await
            .unwrap();
        let lease = open_session(&store).await;
        for chunk in 0..100 {
            store
                .append(&lease, (0..1000).map(|i| event(chunk * 1000 + i)).collect())
                .await
                .unwrap();
        }
        store.close().await;
        lease.session_id
    });
    let mut group = c.benchmark_group("reopen");
    group.sample_size(10);
    group.throughput(Throughput::Elements(100_001));
    group.bench_function("open_read_project_100k", |b| {
        b.iter_batched(
            || (),
            |()| {
                rt.block_on(async {
                    let store = SqliteStore::open(&path).await.unwrap();
                    let events = store.read(&id, 1, 200_000).await.unwrap();
                    assert_eq!(events.len(), 100_001);
                    let report = dangling(&events);
                    let turns = store.turns(&id).await.unwrap();
                    store.close().await;
                    (report.is_clean(), turns.len())
                })
            },
            BatchSize::PerIteration,
        )
    });
    let events = rt.block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        store.read(&id, 1, 200_000).await.unwrap()
    });
    group.bench_function("export_golden_100k", |b| {
        b.iter(|| rein_trace::golden::export(&events).unwrap().len())
    });
    group.finish();
}

criterion_group!(benches, appends, reopen);
criterion_main!(benches);
