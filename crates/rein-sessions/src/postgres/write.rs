//! The PostgreSQL store's writes, each one transaction: a session created,
//! events appended (with inbox items taken), a lease taken or renewed, an
//! inbox item posted.
//!
//! Lock order, the same in every write that needs two: the session's row
//! (`FOR UPDATE`) first, then its lock row. An append and a takeover of
//! the same session therefore run one after the other, never interleaved
//! and never deadlocked; appends to different sessions run side by side.
//!
//! Not here: reads (`super`), the feed of committed events (`live`).

use std::collections::HashMap;
use std::time::Duration;

use rein_wire::{AgentError, error::codes};
use serde_json::Value;
use sqlx::postgres::PgPool;
use sqlx::{Postgres, Row, Transaction};

use super::{db_error, not_found, to_i64, to_u64};
use crate::event::{Event, NewEvent, StoredEvent};
use crate::projection::{Numbered, TurnChange, number, turn_refs};
use crate::store::{ControlRecord, SessionLock};
use crate::validate::{
    already_decided, check_append, lock_lost, locked, may_take_over, new_lease, now_ms, ttl_ms,
};
use crate::{InboxItem, ProcessMark};

/// The channel each commit's events are announced on (`SESSION FIRST
/// LAST`): this, then the database's `channel_key`, which only a role that
/// may read rein's tables knows.
pub(super) const EVENTS_CHANNEL: &str = "rein_events_";
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
    let stored = append_in(
        &mut tx,
        id,
        vec![NewEvent::main(Event::SessionCreated { metadata })],
    )
    .await?;
    commit(tx).await?;
    Ok(stored)
}

/// Events appended by `lease`'s holder, and with `take_inbox` the inbox
/// items up to that number marked taken, in one transaction.
pub(super) async fn append(
    pool: &PgPool,
    lease: &SessionLock,
    events: Vec<NewEvent>,
    take_inbox: Option<u64>,
) -> Result<Vec<StoredEvent>, AgentError> {
    let mut tx = begin(pool).await?;
    let head = lock_session(&mut tx, &lease.session_id).await?;
    let held: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM session_locks WHERE session_id = $1 AND token = $2 AND expires_ms > $3",
    )
    .bind(&lease.session_id)
    .bind(&lease.token)
    .bind(now_ms())
    .fetch_optional(&mut *tx)
    .await
    .map_err(db_error)?;
    if held.is_none() {
        return Err(lock_lost(&lease.session_id));
    }
    let stored = append_after(&mut tx, &lease.session_id, head, events).await?;
    if let Some(upto) = take_inbox {
        sqlx::query(
            "UPDATE inbox SET taken = TRUE WHERE session_id = $1 AND id <= $2 AND NOT taken",
        )
        .bind(&lease.session_id)
        .bind(to_i64(upto))
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
    }
    commit(tx).await?;
    Ok(stored)
}

/// A session's head as its locked row holds it.
struct Head {
    seq: u64,
    turn: Option<String>,
    control: ControlRecord,
}

/// Lock `session`'s row for this transaction and read its head
/// (`session_not_found` for none).
async fn lock_session(
    tx: &mut Transaction<'static, Postgres>,
    session: &str,
) -> Result<Head, AgentError> {
    let row =
        sqlx::query("SELECT head_seq, head_turn, control FROM sessions WHERE id = $1 FOR UPDATE")
            .bind(session)
            .fetch_optional(&mut **tx)
            .await
            .map_err(db_error)?
            .ok_or_else(|| not_found(session))?;
    let control: String = row.try_get("control").map_err(db_error)?;
    Ok(Head {
        seq: to_u64(row.try_get("head_seq").map_err(db_error)?),
        turn: row.try_get("head_turn").map_err(db_error)?,
        control: serde_json::from_str(&control).unwrap_or_default(),
    })
}

async fn append_in(
    tx: &mut Transaction<'static, Postgres>,
    session_id: &str,
    events: Vec<NewEvent>,
) -> Result<Vec<StoredEvent>, AgentError> {
    let head = lock_session(tx, session_id).await?;
    append_after(tx, session_id, head, events).await
}

/// Check, number and insert `events` after `head`, project the turn tree
/// and the control record, and announce the commit.
async fn append_after(
    tx: &mut Transaction<'static, Postgres>,
    session_id: &str,
    head: Head,
    events: Vec<NewEvent>,
) -> Result<Vec<StoredEvent>, AgentError> {
    let mut owners: HashMap<String, String> = HashMap::new();
    for turn in turn_refs(&events) {
        let owner: Option<String> =
            sqlx::query_scalar("SELECT session_id FROM turns WHERE id = $1")
                .bind(turn)
                .fetch_optional(&mut **tx)
                .await
                .map_err(db_error)?;
        if let Some(owner) = owner {
            owners.insert(turn.to_owned(), owner);
        }
    }
    check_append(session_id, &events, &|turn| owners.get(turn).cloned())?;
    let Numbered {
        stored,
        changes,
        head_turn,
        control,
    } = number(
        session_id,
        head.seq,
        head.turn,
        head.control,
        events,
        now_ms(),
    );
    insert_events(tx, &stored).await?;
    for change in changes {
        match change {
            TurnChange::Started(turn) => sqlx::query(
                "INSERT INTO turns (id, session_id, parent, prompt, started_seq) VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(turn.id)
            .bind(session_id)
            .bind(turn.parent)
            .bind(turn.prompt)
            .bind(to_i64(turn.started_seq)),
            TurnChange::Finished { id, seq, outcome } => sqlx::query(
                "UPDATE turns SET finished_seq = $1, outcome = $2 WHERE id = $3 AND session_id = $4",
            )
            .bind(to_i64(seq))
            .bind(outcome.as_str())
            .bind(id)
            .bind(session_id),
        }
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
    }
    let control_text = serde_json::to_string(&control).map_err(|err| {
        AgentError::new(
            codes::INTERNAL,
            format!("cannot write the control record: {err}"),
        )
    })?;
    let last = head.seq + stored.len() as u64;
    sqlx::query("UPDATE sessions SET head_seq = $1, head_turn = $2, control = $3 WHERE id = $4")
        .bind(to_i64(last))
        .bind(head_turn)
        .bind(control_text)
        .bind(session_id)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
    if !stored.is_empty() {
        // Delivered to every listening process when (and only if) the
        // transaction commits.
        sqlx::query(NOTIFY)
            .bind(EVENTS_CHANNEL)
            .bind(format!("{session_id} {} {last}", head.seq + 1))
            .execute(&mut **tx)
            .await
            .map_err(db_error)?;
    }
    Ok(stored)
}

/// Insert the numbered events in one statement.
async fn insert_events(
    tx: &mut Transaction<'static, Postgres>,
    stored: &[StoredEvent],
) -> Result<(), AgentError> {
    if stored.is_empty() {
        return Ok(());
    }
    let mut insert = sqlx::QueryBuilder::<Postgres>::new(
        "INSERT INTO events (session_id, seq, at_ms, agent_path, kind, version, data) ",
    );
    let mut rows = Vec::with_capacity(stored.len());
    for event in stored {
        let data = serde_json::to_string(&event.event.data()).map_err(|err| {
            AgentError::new(codes::INTERNAL, format!("cannot write an event: {err}"))
        })?;
        rows.push((event, data));
    }
    insert.push_values(rows, |mut row, (event, data)| {
        row.push_bind(event.session_id.clone())
            .push_bind(to_i64(event.seq))
            .push_bind(event.at_ms)
            .push_bind(event.agent_path.clone())
            .push_bind(event.event.kind().to_owned())
            .push_bind(i64::from(event.event.version()))
            .push_bind(data);
    });
    insert.build().execute(&mut **tx).await.map_err(db_error)?;
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
