//! A watcher's live events from another store when its notifications are
//! lost: after it heard some (caught up by sequence), and before it heard
//! any (read from when it is watched).

use std::time::Duration;

use rein_sessions::{PgStore, Store};
use serde_json::json;

use super::note;

/// A watcher's store connecting as a role that can be kept out for a
/// while (the server's own role, the writer's, is a superuser: nothing
/// keeps it out), and the writer's: (admin pool, watcher, writer).
async fn watcher_and_writer(
    server: &rein_testing::postgres::Server,
) -> (sqlx::PgPool, PgStore, PgStore) {
    let admin_url = server.database();
    let admin = sqlx::PgPool::connect(&admin_url).await.unwrap();
    let database = admin_url.rsplit('/').next().unwrap().to_owned();
    for sql in [
        "CREATE ROLE app LOGIN".to_owned(),
        format!("ALTER DATABASE {database} OWNER TO app"),
    ] {
        // A database name this test made.
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&admin)
            .await
            .unwrap();
    }
    let url = admin_url.replacen("rein@", "app@", 1);
    let watcher = PgStore::open(&url).await.unwrap();
    let writer = PgStore::open(&admin_url).await.unwrap();
    (admin, watcher, writer)
}

/// The watcher's listening connections as the server lists them.
async fn listening(admin: &sqlx::PgPool) -> Vec<String> {
    sqlx::query_scalar::<_, String>(
        "SELECT state || ': ' || query FROM pg_stat_activity \
         WHERE usename = 'app' AND query ILIKE 'LISTEN%'",
    )
    .fetch_all(admin)
    .await
    .unwrap()
}

/// Wait (ten seconds at most) until the watcher listens (`true`) or no
/// longer does.
async fn until_listening(admin: &sqlx::PgPool, wanted: bool) {
    for _ in 0..1_000 {
        if listening(admin).await.is_empty() != wanted {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "the watcher's listening is not {wanted}: {:?}",
        listening(admin).await
    );
}

/// The watcher's listening connection is cut and cannot come back until
/// [`let_in`]: notifications sent meanwhile are lost.
async fn keep_out(admin: &sqlx::PgPool) {
    sqlx::query("ALTER ROLE app NOLOGIN")
        .execute(admin)
        .await
        .unwrap();
    let cut: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE usename = 'app' AND query ILIKE 'LISTEN%'",
    )
    .fetch_all(admin)
    .await
    .unwrap();
    assert!(!cut.is_empty(), "a listening connection was cut");
    // Gone before the writer appends, or it might still hear them.
    until_listening(admin, false).await;
}

async fn let_in(admin: &sqlx::PgPool) {
    sqlx::query("ALTER ROLE app LOGIN")
        .execute(admin)
        .await
        .unwrap();
}

/// A session the writer holds and the watcher watches, the watcher
/// listening.
struct Watched {
    admin: sqlx::PgPool,
    /// Kept open for the test's length.
    _watcher: PgStore,
    writer: PgStore,
    lease: rein_sessions::SessionLock,
    heard: tokio::sync::broadcast::Receiver<rein_sessions::StoredEvent>,
}

async fn watched(server: &rein_testing::postgres::Server) -> Watched {
    let (admin, watcher, writer) = watcher_and_writer(server).await;
    let session = writer.create_session(json!({})).await.unwrap().id;
    let lease = writer
        .acquire(&session, "writer", Duration::from_secs(60))
        .await
        .unwrap();
    let heard = watcher.subscribe(&session);
    until_listening(&admin, true).await;
    Watched {
        admin,
        _watcher: watcher,
        writer,
        lease,
        heard,
    }
}

/// `heard` hears every event up to sequence number `last`, in order, none
/// twice; the session's creation (committed just before it was watched)
/// may be heard too.
async fn heard_all(
    heard: &mut tokio::sync::broadcast::Receiver<rein_sessions::StoredEvent>,
    last: u64,
) {
    let mut seqs = Vec::new();
    while seqs.last() != Some(&last) {
        let event = tokio::time::timeout(Duration::from_secs(20), heard.recv())
            .await
            .expect("the watcher hears every event")
            .unwrap();
        seqs.push(event.seq);
    }
    assert!(seqs[0] <= 2, "{seqs:?}");
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "in order, none twice, none missing: {seqs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_hears_another_stores_appends_in_order_even_after_a_lost_connection() {
    let Some(server) = rein_testing::postgres::server() else {
        return;
    };
    let Watched {
        admin,
        _watcher,
        writer,
        lease,
        mut heard,
    } = watched(server).await;
    writer.append(&lease, vec![note(1), note(2)]).await.unwrap();
    // Only a catch-up by sequence delivers what is appended meanwhile.
    keep_out(&admin).await;
    for n in 3..=5 {
        writer.append(&lease, vec![note(n)]).await.unwrap();
    }
    let_in(&admin).await;
    heard_all(&mut heard, 6).await;
}

/// Nothing of the session was delivered before its notifications were
/// lost: it is read from when it is watched, not left until the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_hears_appends_whose_every_notification_was_lost() {
    let Some(server) = rein_testing::postgres::server() else {
        return;
    };
    let Watched {
        admin,
        _watcher,
        writer,
        lease,
        mut heard,
    } = watched(server).await;
    keep_out(&admin).await;
    writer
        .append(&lease, vec![note(1), note(2), note(3)])
        .await
        .unwrap();
    let_in(&admin).await;
    heard_all(&mut heard, 4).await;
}
