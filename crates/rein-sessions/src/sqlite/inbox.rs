//! The SQLite inbox: posted without a lease; taken with the events that
//! record it in one commit of the writer. One decision per
//! approval is the table's unique index, so two racing posts cannot both
//! win. A post from any process is told to this process's waiters once:
//! its own at once, another's when the store's one watcher sees the new
//! row (every [`WATCH`]) — one query per store, however many
//! conversations wait. Ids only grow (`AUTOINCREMENT`, one writer at a
//! time), so a row the watcher has not reached is above its mark.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};

use super::*;
use crate::{InboxEntry, InboxItem};

/// How often the store looks for posts from other processes.
const WATCH: Duration = Duration::from_millis(200);
/// Rows read in one look, at most (the rest at the next).
const WATCH_ROWS: i64 = 1_000;

/// Rows this process posted and told of already, for the watcher to pass
/// over (each is removed when the watcher reaches it).
pub(super) type OwnPosts = Arc<Mutex<HashSet<i64>>>;

/// Start the watcher of posts: it tells `channels`' waiters of every row
/// added after now that is not in `own`, and ends with the store.
pub(super) fn watch_posts(
    reader: Arc<Reader>,
    channels: &Arc<Channels>,
    own: OwnPosts,
) -> Result<(), AgentError> {
    let mark = reader
        .one("SELECT COALESCE(MAX(id), 0) AS id FROM inbox", [], |row| {
            row.int("id")
        })?
        .unwrap_or(0);
    tokio::spawn(watch(reader, Arc::downgrade(channels), own, mark));
    Ok(())
}

/// A row posted: its id and its session.
fn posted_row(row: &dyn Columns) -> Result<(i64, String), AgentError> {
    Ok((row.int("id")?, row.text("session_id")?))
}

async fn watch(reader: Arc<Reader>, channels: Weak<Channels>, own: OwnPosts, mut mark: i64) {
    let mut tick = tokio::time::interval(WATCH);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(channels) = channels.upgrade() else {
            return;
        };
        let rows = reader.all(
            "SELECT id, session_id FROM inbox WHERE id > ? ORDER BY id LIMIT ?",
            params![mark, WATCH_ROWS],
            posted_row,
        );
        // A store that cannot be read now is looked at again next tick;
        // its waiters hear of the posts then.
        let Ok(rows) = rows else { continue };
        let mut own = own.lock().unwrap_or_else(|p| p.into_inner());
        for (id, session) in rows {
            mark = mark.max(id);
            if !own.remove(&id) {
                channels.notify_posted(&session);
            }
        }
        // A post seen here before its poster marked it own was told twice
        // (a wake too many, never one lost); its mark goes.
        own.retain(|id| *id > mark);
    }
}

impl SqliteStore {
    pub(super) async fn post_item(
        &self,
        session: &str,
        item: InboxItem,
    ) -> Result<u64, AgentError> {
        self.session(session).await?;
        let text = serde_json::to_string(&item).map_err(|err| {
            AgentError::new(
                codes::INTERNAL,
                format!("cannot write an inbox item: {err}"),
            )
        })?;
        let done = sqlx::query(
            "INSERT INTO inbox (session_id, at_ms, approval_id, item) VALUES (?, ?, ?, ?)",
        )
        .bind(session)
        .bind(now_ms())
        .bind(item.approval_id())
        .bind(text)
        .execute(&self.pool)
        .await;
        match done {
            Ok(done) => {
                let id = done.last_insert_rowid();
                self.own_posts
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(id);
                Ok(to_u64(id))
            }
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Err(
                crate::validate::already_decided(item.approval_id().unwrap_or_default()),
            ),
            Err(err) => Err(db_error(err)),
        }
    }

    pub(super) async fn open_items(&self, session: &str) -> Result<Vec<InboxEntry>, AgentError> {
        let entries = self.reader.all(
            "SELECT id, at_ms, item FROM inbox WHERE session_id = ? AND taken = 0 ORDER BY id",
            params![session],
            crate::rows::inbox_entry,
        )?;
        Ok(entries.into_iter().flatten().collect())
    }

    pub(super) async fn take_items(
        &self,
        lease: &SessionLock,
        upto: u64,
        events: Vec<NewEvent>,
    ) -> Result<Vec<StoredEvent>, AgentError> {
        let stored = self
            .writer
            .commit(Write::Append {
                lease: lease.clone(),
                texts: super::append::encode(&events)?,
                events,
                take_inbox: Some(upto),
            })
            .await?
            .events();
        self.channels.publish(&lease.session_id, &stored);
        Ok(stored)
    }
}
