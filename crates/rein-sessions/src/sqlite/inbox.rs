//! The SQLite inbox: posted without a lease; taken with the events that
//! record it in one commit of the writer. One decision per
//! approval is the table's unique index, so two racing posts cannot both
//! win.

use super::*;
use crate::{InboxEntry, InboxItem};

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
            Ok(done) => Ok(to_u64(done.last_insert_rowid())),
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Err(
                crate::validate::already_decided(item.approval_id().unwrap_or_default()),
            ),
            Err(err) => Err(db_error(err)),
        }
    }

    pub(super) async fn open_items(&self, session: &str) -> Result<Vec<InboxEntry>, AgentError> {
        let rows = sqlx::query(
            "SELECT id, at_ms, item FROM inbox WHERE session_id = ? AND taken = 0 ORDER BY id",
        )
        .bind(session)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        crate::rows::inbox(&rows)
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
