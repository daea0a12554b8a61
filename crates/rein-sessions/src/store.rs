//! The [`Store`] trait: the durable record of sessions.
//!
//! A store keeps, per session, an append-only log of [`StoredEvent`]s
//! numbered 1, 2, 3, … without gaps, and — updated in the same transaction
//! as each append — the projections callers ask for often: the turn tree,
//! the control record, the writer's lock. Artifacts (content-addressed
//! blobs) live beside the logs.
//!
//! Semantics every implementation keeps (SQLite today, Postgres later,
//! memory for tests):
//! - An append is all or nothing, and only the lock's holder may append.
//! - Sequence numbers are gapless per session; a read from `seq` returns
//!   events in order.
//! - Subscribers in the same process get every committed event, in order,
//!   without polling.
//! - Nothing rewrites the log: branching, compaction and recovery append.

use std::time::Duration;

use async_trait::async_trait;
use rein_wire::AgentError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::event::{NewEvent, StoredEvent};

/// A session, as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Its id (UUIDv7: sorts by creation).
    pub id: String,
    /// When it was created (ms since the epoch).
    pub created_ms: i64,
    /// The application's metadata.
    pub metadata: Value,
    /// The last sequence number.
    pub head_seq: u64,
    /// The turn the next turn follows.
    pub head_turn: Option<String>,
}

/// A node of the turn tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnInfo {
    /// The turn's id.
    pub id: String,
    /// The turn it follows.
    pub parent: Option<String>,
    /// What the person said.
    pub prompt: String,
    /// The sequence number of its `turn.started`.
    pub started_seq: u64,
    /// The sequence number of its `turn.finished`, once finished.
    pub finished_seq: Option<u64>,
    /// How it ended, once finished.
    pub outcome: Option<rein_wire::Ending>,
}

/// A pending approval, as the control record holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// The approval's id.
    pub approval_id: String,
    /// The call waiting for it.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The permission class.
    pub permission: rein_wire::permission::PermissionClass,
    /// The sequence number of its request.
    pub requested_seq: u64,
}

/// Whether a session may proceed, kept in step with the log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ControlRecord {
    /// Whether it is paused.
    pub paused: bool,
    /// Who or what paused it (`approval`, a person).
    pub paused_by: Option<String>,
    /// Whether it was stopped.
    pub stopped: bool,
    /// Approvals waiting for a person.
    pub pending: Vec<PendingApproval>,
}

/// A writer's hold on a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLock {
    /// The session.
    pub session_id: String,
    /// Who holds it (process and purpose, for the error others see).
    pub holder: String,
    /// A secret token proving this holder.
    pub token: String,
    /// When it was first taken (ms since the epoch).
    pub acquired_ms: i64,
    /// When it lapses unless renewed (ms since the epoch).
    pub expires_ms: i64,
    /// The process that took it, where the store's host can tell: a
    /// holder provably dead on the same host loses the lock at once.
    pub process: Option<crate::ProcessMark>,
}

/// A stored artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRef {
    /// The blake3 hash of its bytes, in hex.
    pub hash: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its media type.
    pub media_type: String,
}

/// A part of an artifact to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slice {
    /// All of it.
    Whole,
    /// `len` bytes from byte `offset` (clamped to the end).
    Bytes {
        /// First byte.
        offset: u64,
        /// How many bytes.
        len: u64,
    },
    /// `count` lines from line `start` (0-based, clamped to the end).
    Lines {
        /// First line.
        start: u64,
        /// How many lines.
        count: u64,
    },
}

/// The durable record of sessions. See the module docs for the semantics.
#[async_trait]
pub trait Store: Send + Sync {
    /// Open a new session with the application's metadata; appends
    /// `session.created`.
    async fn create_session(&self, metadata: Value) -> Result<SessionInfo, AgentError>;

    /// A session by id; `session_not_found` when there is none.
    async fn session(&self, id: &str) -> Result<SessionInfo, AgentError>;

    /// Sessions, newest first.
    async fn list_sessions(&self, limit: usize) -> Result<Vec<SessionInfo>, AgentError>;

    /// Sessions whose metadata holds the string `value` under its
    /// top-level `key`, newest first, at most `limit`. A scan of every
    /// session: for finding a graph's task sessions when it resumes, not
    /// for a hot path. A `key` that is not a plain name (letters, digits,
    /// `_`, `-`; at most 64) is `invalid_input`.
    async fn sessions_where(
        &self,
        key: &str,
        value: &str,
        limit: usize,
    ) -> Result<Vec<SessionInfo>, AgentError>;

    /// Append events in one transaction. Only the holder of `lock` may
    /// append (`lock_lost` otherwise). Returns them with their numbers.
    async fn append(
        &self,
        lock: &SessionLock,
        events: Vec<NewEvent>,
    ) -> Result<Vec<StoredEvent>, AgentError>;

    /// Events with `seq >= from`, in order, at most `limit`.
    async fn read(
        &self,
        session: &str,
        from: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, AgentError>;

    /// New events of `session` as they are committed in this process.
    fn subscribe(&self, session: &str) -> broadcast::Receiver<StoredEvent>;

    /// The turns of a session, in the order they started.
    async fn turns(&self, session: &str) -> Result<Vec<TurnInfo>, AgentError>;

    /// The control record.
    async fn control(&self, session: &str) -> Result<ControlRecord, AgentError>;

    /// Take the session's lock for `ttl`. Another live holder means
    /// `session_locked`, naming it and since when; an expired lock is
    /// taken over.
    async fn acquire(
        &self,
        session: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<SessionLock, AgentError>;

    /// Extend the lock by its time to live (the heartbeat).
    async fn renew(&self, lock: &SessionLock, ttl: Duration) -> Result<SessionLock, AgentError>;

    /// Give the lock up.
    async fn release(&self, lock: &SessionLock) -> Result<(), AgentError>;

    /// Post `item` to the session's inbox; no lock is needed (only a
    /// person's surface calls this, through `rein-approvals`). A second
    /// decision for the same approval is `conflict`. Returns its number.
    async fn post(&self, session: &str, item: crate::InboxItem) -> Result<u64, AgentError>;

    /// Told when an item is posted to `session`'s inbox: a waiter wakes
    /// when told instead of looking at the store every bounded interval.
    /// Every store of this crate tells of posts from any process
    /// ([`crate::Posted::hears_every_post`]); the default is never told, and
    /// a waiter on such a store looks every interval of its own.
    fn posted(&self, session: &str) -> crate::Posted {
        let _ = session;
        crate::Posted::never()
    }

    /// The queue a conversation's open waits in on this store, if it keeps
    /// one. A store whose reads run on the caller's thread (SQLite) bounds
    /// how many conversations read their logs to open at once, so a burst
    /// of opens (a server restarting with thousands of conversations) waits
    /// its turn instead of queueing ahead of steps already running. Each
    /// store keeps its own: one store's slow opens never hold another's.
    fn opening(&self) -> Option<&tokio::sync::Semaphore> {
        None
    }

    /// The inbox items not yet taken, oldest first.
    async fn inbox(&self, session: &str) -> Result<Vec<crate::InboxEntry>, AgentError>;

    /// Append `events` and mark the inbox items up to number `upto` taken,
    /// in one transaction, as the holder of `lock` (`lock_lost`
    /// otherwise). The events record what the items asked.
    async fn take_inbox(
        &self,
        lock: &SessionLock,
        upto: u64,
        events: Vec<NewEvent>,
    ) -> Result<Vec<StoredEvent>, AgentError>;

    /// Store bytes; the same bytes are stored once.
    async fn put_artifact(&self, bytes: &[u8], media_type: &str)
    -> Result<ArtifactRef, AgentError>;

    /// Read an artifact, whole or a slice.
    async fn read_artifact(&self, hash: &str, slice: Slice) -> Result<Vec<u8>, AgentError>;

    /// The artifacts stored, by hash, at most `limit` after `after` (a
    /// copy of the store pages through them).
    async fn artifacts(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ArtifactRef>, AgentError>;

    /// Put a session copied whole from another store: its info and its
    /// log with the numbers and times it has there, the projections made
    /// as its appends made them, in one transaction. `conflict` when the
    /// session is here already; `invalid_input` for a log that is not one
    /// session's from `session.created` on without gaps. Its inbox and
    /// lock are not copied.
    async fn import(&self, info: &SessionInfo, events: Vec<StoredEvent>) -> Result<(), AgentError>;
}

/// A session's whole log, read page by page; `session_not_found` for a
/// session that does not exist.
pub async fn read_all(store: &dyn Store, session: &str) -> Result<Vec<StoredEvent>, AgentError> {
    let events = read_from(store, session, 1).await?;
    if events.is_empty() {
        store.session(session).await?;
    }
    Ok(events)
}

/// Every event of `session` from sequence number `from` on, read a page
/// at a time (none when the session has no such event, or is not there).
pub async fn read_from(
    store: &dyn Store,
    session: &str,
    from: u64,
) -> Result<Vec<StoredEvent>, AgentError> {
    let mut events = Vec::new();
    loop {
        let page = store
            .read(session, from + events.len() as u64, 10_000)
            .await?;
        if page.is_empty() {
            break;
        }
        events.extend(page);
    }
    Ok(events)
}

/// Whether a log of `session` kept in memory, ending with `last`, is still
/// the start of the store's: the store has the same event at the same
/// place (its time aside: a staged event's is stamped again when
/// written). Not when the session was made again under the same id, or
/// the kept log came from another store.
pub async fn still_begins(
    store: &dyn Store,
    session: &str,
    last: &StoredEvent,
) -> Result<bool, AgentError> {
    let now = store.read(session, last.seq, 1).await?;
    Ok(now.first().is_some_and(|now| {
        (now.seq, &now.agent_path, &now.event) == (last.seq, &last.agent_path, &last.event)
    }))
}

/// `key` checked as [`Store::sessions_where`] takes it.
pub(crate) fn metadata_key(key: &str) -> Result<&str, AgentError> {
    let plain = !key.is_empty()
        && key.len() <= 64
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if plain {
        Ok(key)
    } else {
        Err(AgentError::new(
            rein_wire::error::codes::INVALID_INPUT,
            format!(
                "`{}` is not a metadata key rein looks sessions up by",
                key.escape_debug()
            ),
        ))
    }
}

/// [`crate::recovery::open_turn_started`] read from the store's turn tree
/// (one event read, not the whole log).
pub async fn open_turn_started(
    store: &dyn Store,
    session: &str,
) -> Result<Option<i64>, AgentError> {
    let turns = store.turns(session).await?;
    let Some(open) = turns
        .iter()
        .filter(|t| t.finished_seq.is_none())
        .min_by_key(|t| t.started_seq)
    else {
        return Ok(None);
    };
    let started = store.read(session, open.started_seq, 1).await?;
    Ok(started.first().map(|e| e.at_ms))
}
