//! The PostgreSQL store's writes other than appends, each one transaction:
//! a session created, a lock taken or renewed, an inbox item posted, a
//! session imported.
//!
//! Lock order, the same in every write that needs two: the session's row
//! (`FOR UPDATE`) first, then its lock row. An append and a takeover of
//! the same session therefore run one after the other, never interleaved
//! and never deadlocked; appends to different sessions run side by side.
//!
//! Not here: appends (`batch`, committed together), reads (`super`), the
//! feed of committed events (`live`).

use std::time::Duration;

use rein_wire::{AgentError, error::codes};
use serde_json::Value;
use sqlx::postgres::PgPool;
use sqlx::{Postgres, Row, Transaction};

use super::batch::{Append, append_all, insert_events};
use super::{db_error, not_found, to_i64, to_u64};
use crate::event::{Event, NewEvent, StoredEvent};
use crate::store::SessionLock;
use crate::validate::{
    already_decided, lock_lost, locked, may_take_over, new_lease, now_ms, ttl_ms,
};
use crate::{InboxItem, ProcessMark};

/// The channel each inbox post is announced on (the session's id): this,
/// then the `channel_key`.
pub(super) const INBOX_CHANNEL: &str = "rein_inbox_";

/// Announce `$2` on the channel `$1` names with the database's key.
const NOTIFY: &str = "SELECT pg_notify($1 || (SELECT key FROM channel_key), $2)";

async fn begin(pool: &PgPool) -> Result<Transaction<'static, Postgres>, AgentError> {
    pool.begin().await.map_err(db_error)
}

async fn commit(tx: Transaction<'static, Postgres>) -> Result<(), AgentError> {
    tx.commit().await.map_err(db_error)
}

/// A new session and its `session.created` event.
pub(super) async fn create(
    pool: &PgPool,
    id: &str,
    metadata: Value,
) -> Result<Vec<StoredEvent>, AgentError> {
    let text = serde_json::to_string(&metadata).map_err(|err| {
        AgentError::new(codes::INVALID_INPUT, format!("metadata is not JSON: {err}"))
    })?;
    let mut tx = begin(pool).await?;
    sqlx::query("INSERT INTO sessions (id, created_ms, metadata) VALUES ($1, $2, $3)")
        .bind(id)
        .bind(now_ms())
        .bind(text)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
    let created = Append {
        session: id.to_owned(),
        token: None,
        events: vec![NewEvent::main(Event::SessionCreated { metadata })],
        take_inbox: None,
    };
    let stored = append_all(&mut tx, vec![created])
        .await?
        .pop()
        .unwrap_or_else(|| Err(not_found(id)))?;
    commit(tx).await?;
    Ok(stored)
}

/// Lock `session`'s row for this transaction (`session_not_found` for
/// none).
async fn lock_session(
    tx: &mut Transaction<'static, Postgres>,
    session: &str,
) -> Result<(), AgentError> {
    sqlx::query_scalar::<_, i32>("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE")
        .bind(session)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_error)?
        .ok_or_else(|| not_found(session))?;
    Ok(())
}

/// Take `session`'s lease for `holder` (`session_locked` while another
/// holds it and is not provably gone).
pub(super) async fn acquire(
    pool: &PgPool,
    session: &str,
    holder: &str,
    ttl: Duration,
) -> Result<SessionLock, AgentError> {
    let mut tx = begin(pool).await?;
    lock_session(&mut tx, session).await?;
    let now = now_ms();
    let current = sqlx::query(
        "SELECT holder, token, acquired_ms, expires_ms, process FROM session_locks WHERE session_id = $1",
    )
    .bind(session)
    .fetch_optional(&mut *tx)
    .await
    .map_err(db_error)?;
    if let Some(row) = current {
        let process: Option<String> = row.try_get("process").map_err(db_error)?;
        let current = SessionLock {
            session_id: session.to_owned(),
            holder: row.try_get("holder").map_err(db_error)?,
            token: row.try_get("token").map_err(db_error)?,
            acquired_ms: row.try_get("acquired_ms").map_err(db_error)?,
            expires_ms: row.try_get("expires_ms").map_err(db_error)?,
            // A mark this rein cannot read proves nothing: wait for expiry.
            process: process.and_then(|json| serde_json::from_str::<ProcessMark>(&json).ok()),
        };
        if !may_take_over(&current, now) {
            return Err(locked(&current));
        }
        tracing::info!(session, previous = %current.holder, "taking over a lapsed session lease (expired, or its holder is provably dead)");
    }
    let lease = new_lease(session, holder, ttl, now);
    let process = lease
        .process
        .as_ref()
        .and_then(|mark| serde_json::to_string(mark).ok());
    sqlx::query(
        "INSERT INTO session_locks (session_id, holder, token, acquired_ms, expires_ms, process) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (session_id) DO UPDATE SET \
         holder = excluded.holder, token = excluded.token, acquired_ms = excluded.acquired_ms, \
         expires_ms = excluded.expires_ms, process = excluded.process",
    )
    .bind(session)
    .bind(&lease.holder)
    .bind(&lease.token)
    .bind(lease.acquired_ms)
    .bind(lease.expires_ms)
    .bind(process)
    .execute(&mut *tx)
    .await
    .map_err(db_error)?;
    commit(tx).await?;
    Ok(lease)
}

/// Extend `lease` by `ttl` from now (`lock_lost` if it lapsed or was
/// taken).
pub(super) async fn renew(
    pool: &PgPool,
    lease: &SessionLock,
    ttl: Duration,
) -> Result<SessionLock, AgentError> {
    let now = now_ms();
    let expires = now.saturating_add(ttl_ms(ttl));
    let changed = sqlx::query(
        "UPDATE session_locks SET expires_ms = $1 WHERE session_id = $2 AND token = $3 AND expires_ms > $4",
    )
    .bind(expires)
    .bind(&lease.session_id)
    .bind(&lease.token)
    .bind(now)
    .execute(pool)
    .await
    .map_err(db_error)?
    .rows_affected();
    if changed == 0 {
        return Err(lock_lost(&lease.session_id));
    }
    Ok(SessionLock {
        expires_ms: expires,
        ..lease.clone()
    })
}

/// Post `item` to `session`'s inbox and announce it; a second decision
/// for one approval is refused by the table's unique index.
pub(super) async fn post(pool: &PgPool, session: &str, item: InboxItem) -> Result<u64, AgentError> {
    let text = serde_json::to_string(&item).map_err(|err| {
        AgentError::new(
            codes::INTERNAL,
            format!("cannot write an inbox item: {err}"),
        )
    })?;
    let mut tx = begin(pool).await?;
    let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM sessions WHERE id = $1")
        .bind(session)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
    if exists.is_none() {
        return Err(not_found(session));
    }
    let id: Result<i64, sqlx::Error> = sqlx::query_scalar(
        "INSERT INTO inbox (session_id, at_ms, approval_id, item) VALUES ($1, $2, $3, $4) RETURNING id",
    )
    .bind(session)
    .bind(now_ms())
    .bind(item.approval_id())
    .bind(text)
    .fetch_one(&mut *tx)
    .await;
    let id = match id {
        Ok(id) => id,
        Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
            return Err(already_decided(item.approval_id().unwrap_or_default()));
        }
        Err(err) => return Err(db_error(err)),
    };
    sqlx::query(NOTIFY)
        .bind(INBOX_CHANNEL)
        .bind(session)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
    commit(tx).await?;
    Ok(to_u64(id))
}

/// A session copied whole, with its projections, in one transaction (see
/// [`crate::Store::import`]).
pub(super) async fn import(
    pool: &PgPool,
    info: &crate::store::SessionInfo,
    events: &[StoredEvent],
) -> Result<(), AgentError> {
    crate::validate::check_import(info, events)?;
    let (head_turn, turns, control) = crate::projection::replay(events);
    let metadata = to_text(&info.metadata)?;
    let control = to_text(&control)?;
    let mut tx = begin(pool).await?;
    let inserted = sqlx::query(
        "INSERT INTO sessions (id, created_ms, metadata, head_seq, head_turn, control) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
    )
    .bind(&info.id)
    .bind(info.created_ms)
    .bind(metadata)
    .bind(to_i64(events.len() as u64))
    .bind(head_turn)
    .bind(control)
    .execute(&mut *tx)
    .await
    .map_err(db_error)?
    .rows_affected();
    if inserted == 0 {
        return Err(crate::validate::already_there(&info.id));
    }
    let events: Vec<&StoredEvent> = events.iter().collect();
    for page in events.chunks(1_000) {
        insert_events(&mut tx, page).await?;
    }
    for turn in turns {
        sqlx::query(
            "INSERT INTO turns (id, session_id, parent, prompt, started_seq, finished_seq, outcome) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(turn.id)
        .bind(&info.id)
        .bind(turn.parent)
        .bind(turn.prompt)
        .bind(to_i64(turn.started_seq))
        .bind(turn.finished_seq.map(to_i64))
        .bind(turn.outcome.map(|o| o.as_str()))
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
    }
    commit(tx).await
}

/// JSON text of a value rein wrote.
fn to_text(value: &impl serde::Serialize) -> Result<String, AgentError> {
    serde_json::to_string(value)
        .map_err(|err| AgentError::new(codes::INTERNAL, format!("cannot write JSON: {err}")))
}
