//! [`PgStore`]: the store on PostgreSQL, for many processes and machines
//! over one database.
//!
//! The same semantics as the SQLite store, kept by the database instead
//! of one writer thread: every append commits in a transaction that locks
//! its session's row first (`SELECT … FOR UPDATE`), so writers in different
//! processes number a session's events without gaps, and a lock taken
//! over waits for an append in flight (both lock the same row, in the same
//! order). A process's appends waiting at once share one transaction
//! (group commit, `batch`). The projections (head turn, turns, control
//! record) change in that transaction. Each commit sends `NOTIFY`, and every process's
//! subscribers are fed from it (`live`), caught up by sequence number.
//!
//! Opening runs the embedded migrations (sqlx takes an advisory lock, so
//! two processes opening at once do not both migrate) after checking,
//! without changing anything, that no newer rein wrote the schema.
//!
//! Not here: the rules of an append (`validate`, `projection`), shared by
//! every store.

use std::time::Duration;

use async_trait::async_trait;
use rein_wire::{AgentError, error::codes};
use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Connection, Row};
use tokio::sync::broadcast;

use crate::artifact::{check_hash, hash_hex, slice_of};
use crate::event::{NewEvent, StoredEvent};
use crate::store::{ArtifactRef, ControlRecord, SessionInfo, SessionLock, Slice, Store, TurnInfo};
use crate::{InboxEntry, InboxItem, Posted};

mod batch;
mod live;
mod queue;
mod write;

use batch::{Append, Writer};
use live::Live;
pub use queue::{Claim, ClaimedTask, MAX_CLAIMED_AT_ONCE, TaskResult, WorkQueue};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations-postgres");

/// Connections a store keeps open, at most.
const MAX_CONNECTIONS: u32 = 16;

/// The [`Store`] on PostgreSQL.
pub struct PgStore {
    pool: PgPool,
    writer: Writer,
    live: Live,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").finish_non_exhaustive()
    }
}

pub(super) fn db_error(err: sqlx::Error) -> AgentError {
    AgentError::new(codes::STORE_UNAVAILABLE, format!("the store failed: {err}"))
}

pub(super) fn not_found(id: &str) -> AgentError {
    AgentError::new(
        codes::SESSION_NOT_FOUND,
        format!("no session has the id `{id}`"),
    )
}

pub(super) fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(super) fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl PgStore {
    /// Connect to the database at `url` (`postgres://…`), preparing its
    /// schema when it has none.
    pub async fn open(url: &str) -> Result<Self, AgentError> {
        let options: PgConnectOptions = url.parse().map_err(|err| {
            AgentError::new(
                codes::INVALID_INPUT,
                format!("`{}` is not a PostgreSQL URL: {err}", redact(url)),
            )
        })?;
        // One connection first: a wrong address or password fails at once
        // instead of after the pool's retries.
        let unreachable = |err: sqlx::Error| {
            AgentError::new(
                codes::STORE_UNAVAILABLE,
                format!("cannot reach the store at {}: {err}", redact(url)),
            )
        };
        let first = sqlx::PgConnection::connect_with(&options)
            .await
            .map_err(unreachable)?;
        let _ = first.close().await;
        let pool = PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options.clone())
            .await
            .map_err(unreachable)?;
        check_schema(&pool).await?;
        MIGRATOR.run(&pool).await.map_err(|err| {
            AgentError::new(
                codes::STORE_UNAVAILABLE,
                format!("cannot prepare the store: {err}"),
            )
        })?;
        let live = Live::start(pool.clone(), options);
        let writer = Writer::start(pool.clone());
        Ok(PgStore { pool, writer, live })
    }

    /// The work shared by the processes on this database (`rein worker`).
    pub fn queue(&self) -> WorkQueue {
        WorkQueue::new(self.pool.clone())
    }

    /// Close the pool (waits for connections to be returned).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// `url` for messages: the password replaced and the query (which may
/// carry one too) left out.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "the given URL".into();
    };
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            let hidden = if userinfo.contains(':') { ":***" } else { "" };
            format!("{scheme}://{user}{hidden}@{host}{path}")
        }
        None => format!("{scheme}://{rest}"),
    }
}

/// Refuse a database written by a newer schema, without changing it.
async fn check_schema(pool: &PgPool) -> Result<(), AgentError> {
    let has_table: Option<bool> =
        sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
            .fetch_optional(pool)
            .await
            .map_err(db_error)?;
    if has_table != Some(true) {
        return Ok(());
    }
    let newest_known = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
    let applied: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_one(pool)
        .await
        .map_err(db_error)?;
    match applied {
        Some(applied) if applied > newest_known => Err(AgentError::new(
            codes::STORE_SCHEMA_NEWER,
            format!(
                "the database has schema {applied}, newer than this rein's {newest_known}; it was not changed"
            ),
        )
        .with_field("schema", applied)
        .with_field("known", newest_known)),
        _ => Ok(()),
    }
}

/// Events of `session` with `seq >= from`, in order, at most `limit`.
pub(super) async fn read_events(
    pool: &PgPool,
    session: &str,
    from: u64,
    limit: usize,
) -> Result<Vec<StoredEvent>, AgentError> {
    let rows = sqlx::query(
        "SELECT session_id, seq, at_ms, agent_path, kind, version, data FROM events \
         WHERE session_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3",
    )
    .bind(session)
    .bind(to_i64(from))
    .bind(to_i64(limit as u64))
    .fetch_all(pool)
    .await
    .map_err(db_error)?;
    rows.iter().map(|row| crate::rows::event(row)).collect()
}

#[async_trait]
impl Store for PgStore {
    async fn create_session(&self, metadata: Value) -> Result<SessionInfo, AgentError> {
        let id = rein_wire::ids::new_id();
        let stored = write::create(&self.pool, &id, metadata).await?;
        self.live.committed(&id, &stored);
        self.session(&id).await
    }

    async fn session(&self, id: &str) -> Result<SessionInfo, AgentError> {
        let row = sqlx::query(
            "SELECT id, created_ms, metadata, head_seq, head_turn FROM sessions WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?
        .ok_or_else(|| not_found(id))?;
        crate::rows::session(&row)
    }

    async fn list_sessions(&self, limit: usize) -> Result<Vec<SessionInfo>, AgentError> {
        let rows = sqlx::query(
            "SELECT id, created_ms, metadata, head_seq, head_turn FROM sessions ORDER BY id DESC LIMIT $1",
        )
        .bind(to_i64(limit as u64))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter().map(|row| crate::rows::session(row)).collect()
    }

    async fn sessions_where(
        &self,
        key: &str,
        value: &str,
        limit: usize,
    ) -> Result<Vec<SessionInfo>, AgentError> {
        let key = crate::store::metadata_key(key)?;
        let rows = sqlx::query(
            "SELECT id, created_ms, metadata, head_seq, head_turn FROM sessions \
             WHERE jsonb_typeof(metadata::jsonb -> $1) = 'string' AND metadata::jsonb ->> $1 = $2 \
             ORDER BY id DESC LIMIT $3",
        )
        .bind(key)
        .bind(value)
        .bind(to_i64(limit as u64))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter().map(|row| crate::rows::session(row)).collect()
    }

    async fn append(
        &self,
        lease: &SessionLock,
        events: Vec<NewEvent>,
    ) -> Result<Vec<StoredEvent>, AgentError> {
        let stored = self.writer.append(Append::by(lease, events, None)).await?;
        self.live.committed(&lease.session_id, &stored);
        Ok(stored)
    }

    async fn read(
        &self,
        session: &str,
        from: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, AgentError> {
        let events = read_events(&self.pool, session, from, limit).await?;
        if events.is_empty() {
            self.session(session).await?;
        }
        Ok(events)
    }

    fn subscribe(&self, session: &str) -> broadcast::Receiver<StoredEvent> {
        self.live.subscribe(session)
    }

    async fn turns(&self, session: &str) -> Result<Vec<TurnInfo>, AgentError> {
        self.session(session).await?;
        let rows = sqlx::query(
            "SELECT id, parent, prompt, started_seq, finished_seq, outcome FROM turns \
             WHERE session_id = $1 ORDER BY started_seq",
        )
        .bind(session)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter().map(|row| crate::rows::turn(row)).collect()
    }

    async fn control(&self, session: &str) -> Result<ControlRecord, AgentError> {
        let text: String = sqlx::query_scalar("SELECT control FROM sessions WHERE id = $1")
            .bind(session)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?
            .ok_or_else(|| not_found(session))?;
        Ok(serde_json::from_str(&text).unwrap_or_default())
    }

    async fn acquire(
        &self,
        session: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<SessionLock, AgentError> {
        write::acquire(&self.pool, session, holder, ttl).await
    }

    async fn renew(&self, lease: &SessionLock, ttl: Duration) -> Result<SessionLock, AgentError> {
        write::renew(&self.pool, lease, ttl).await
    }

    async fn release(&self, lease: &SessionLock) -> Result<(), AgentError> {
        sqlx::query("DELETE FROM session_locks WHERE session_id = $1 AND token = $2")
            .bind(&lease.session_id)
            .bind(&lease.token)
            .execute(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(())
    }

    async fn post(&self, session: &str, item: InboxItem) -> Result<u64, AgentError> {
        let posted = write::post(&self.pool, session, item).await?;
        self.live.posted_here(session);
        Ok(posted)
    }

    fn posted(&self, session: &str) -> Posted {
        self.live.posted(session)
    }

    async fn inbox(&self, session: &str) -> Result<Vec<InboxEntry>, AgentError> {
        let rows = sqlx::query(
            "SELECT id, at_ms, item FROM inbox WHERE session_id = $1 AND NOT taken ORDER BY id",
        )
        .bind(session)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter()
            .filter_map(|row| crate::rows::inbox_entry(row).transpose())
            .collect()
    }

    async fn take_inbox(
        &self,
        lease: &SessionLock,
        upto: u64,
        events: Vec<NewEvent>,
    ) -> Result<Vec<StoredEvent>, AgentError> {
        let stored = self
            .writer
            .append(Append::by(lease, events, Some(upto)))
            .await?;
        self.live.committed(&lease.session_id, &stored);
        Ok(stored)
    }

    async fn put_artifact(
        &self,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<ArtifactRef, AgentError> {
        let hash = hash_hex(bytes);
        sqlx::query(
            "INSERT INTO artifacts (hash, size, media_type, bytes) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (hash) DO NOTHING",
        )
        .bind(&hash)
        .bind(to_i64(bytes.len() as u64))
        .bind(media_type)
        .bind(bytes)
        .execute(&self.pool)
        .await
        .map_err(db_error)?;
        let row = sqlx::query("SELECT size, media_type FROM artifacts WHERE hash = $1")
            .bind(&hash)
            .fetch_one(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(ArtifactRef {
            hash,
            size: to_u64(row.try_get("size").map_err(db_error)?),
            media_type: row.try_get("media_type").map_err(db_error)?,
        })
    }

    async fn read_artifact(&self, hash: &str, slice: Slice) -> Result<Vec<u8>, AgentError> {
        check_hash(hash)?;
        let bytes: Option<Vec<u8>> = match slice {
            // Byte ranges are cut by the database, without sending the
            // whole value.
            Slice::Bytes { offset, len } => sqlx::query_scalar(
                "SELECT substring(bytes FROM $1 FOR $2) FROM artifacts WHERE hash = $3",
            )
            .bind(i32::try_from(offset.saturating_add(1)).unwrap_or(i32::MAX))
            .bind(i32::try_from(len).unwrap_or(i32::MAX))
            .bind(hash)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?,
            _ => sqlx::query_scalar("SELECT bytes FROM artifacts WHERE hash = $1")
                .bind(hash)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_error)?
                .map(|b: Vec<u8>| slice_of(&b, slice)),
        };
        bytes.ok_or_else(|| {
            AgentError::new(
                codes::ARTIFACT_NOT_FOUND,
                format!("no artifact has the hash {hash}"),
            )
        })
    }

    async fn artifacts(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ArtifactRef>, AgentError> {
        let rows = sqlx::query(
            "SELECT hash, size, media_type FROM artifacts WHERE hash COLLATE \"C\" > $1 ORDER BY hash COLLATE \"C\" LIMIT $2",
        )
        .bind(after.unwrap_or_default())
        .bind(to_i64(limit as u64))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter().map(|row| crate::rows::artifact(row)).collect()
    }

    async fn import(&self, info: &SessionInfo, events: Vec<StoredEvent>) -> Result<(), AgentError> {
        write::import(&self.pool, info, &events).await
    }
}
