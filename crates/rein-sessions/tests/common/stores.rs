//! The stores every contract test runs against — the in-memory store, a
//! real SQLite file and (with the `postgres` feature) a real PostgreSQL
//! server — and the events and leases the tests make.

#![allow(dead_code, reason = "each test binary uses a part")]

use std::sync::Arc;
use std::time::Duration;

use rein_sessions::{Event, MemoryStore, NewEvent, SessionLock, SqliteStore, Store};
use serde_json::json;

pub const TTL: Duration = Duration::from_secs(60);

pub async fn stores() -> Vec<(&'static str, Arc<dyn Store>, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().expect("the test store");
    let sqlite = SqliteStore::open(dir.path().join("rein.db"))
        .await
        .expect("the test store");
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
            .expect("the test store");
        stores.push(("postgres", Arc::new(pg) as Arc<dyn Store>, None));
    }
    stores
}

pub fn turn(id: &str, parent: Option<&str>) -> NewEvent {
    NewEvent::main(Event::TurnStarted {
        turn_id: id.into(),
        parent: parent.map(str::to_owned),
        prompt: format!("prompt {id}"),
    })
}

pub fn finish(id: &str) -> NewEvent {
    NewEvent::main(Event::TurnFinished {
        turn_id: id.into(),
        outcome: rein_wire::Ending::Finished,
        reply: Some(format!("reply {id}")),
    })
}

pub async fn open(store: &dyn Store) -> (String, SessionLock) {
    let session = store
        .create_session(json!({"app": "test"}))
        .await
        .expect("the test store");
    let lease = store
        .acquire(&session.id, "test-writer", TTL)
        .await
        .expect("the test store");
    (session.id, lease)
}
