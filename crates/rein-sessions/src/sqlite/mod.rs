//! [`SqliteStore`]: the embedded default store, one SQLite file in WAL mode.
//!
//! Appends go to one writer thread that commits whatever is queued
//! together (group commit: one transaction, one fsync, see `writer`).
//! Every write transaction is `BEGIN IMMEDIATE`, so the write lock is taken
//! up front and two processes never deadlock upgrading a read. The
//! projections (head turn, turns, control record) are updated in the same
//! transaction as the events, so they never disagree with the log, even
//! after a `kill -9` at any point.
//!
//! Opening checks the schema first, read-only: a database written by a
//! newer rein is refused with `store_schema_newer` and left untouched.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use rein_wire::{AgentError, error::codes};
use serde_json::Value;
use sqlx::Connection;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use tokio::sync::broadcast;

use crate::artifact::{check_hash, hash_hex, slice_of};
use crate::event::{NewEvent, StoredEvent};
use crate::rows::Columns;
use crate::store::{ArtifactRef, ControlRecord, SessionInfo, SessionLock, Slice, Store, TurnInfo};
use crate::subscribe::Channels;
use crate::validate::now_ms;

mod append;
mod failed;
mod inbox;
mod leases;
mod reader;
mod writer;

use append::Write;
use reader::Reader;
use rusqlite::params;
use writer::Writer;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// How hard a commit works to survive a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Survives the process dying and the machine losing power
    /// (`synchronous = FULL`). The default.
    #[default]
    Full,
    /// Survives the process dying; the last commits may be lost if the
    /// machine loses power (`synchronous = NORMAL`). Faster.
    Process,
}

/// The embedded SQLite [`Store`].
pub struct SqliteStore {
    pool: SqlitePool,
    reader: std::sync::Arc<Reader>,
    writer: Writer,
    path: PathBuf,
    channels: std::sync::Arc<Channels>,
    own_posts: inbox::OwnPosts,
    /// Conversations opening at once, at most [`OPENING_AT_ONCE`].
    opening: tokio::sync::Semaphore,
}

/// Conversations reading their logs to open on one store at once, at most
/// ([`Store::opening`]): its reads run on the caller's thread.
pub const OPENING_AT_ONCE: usize = 64;

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish()
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

impl SqliteStore {
    /// Open (creating if needed) the store at `path` with full durability.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, AgentError> {
        SqliteStore::open_with(path, Durability::Full).await
    }

    /// Open the store in the home directory (`home/rein.db`), creating the
    /// directory if needed.
    pub async fn open_home(home: &Path) -> Result<Self, AgentError> {
        if home.exists() && !home.is_dir() {
            return Err(AgentError::new(
                codes::STORE_UNAVAILABLE,
                format!(
                    "{} is a file, not a folder: rein's home must be a folder (it keeps {} there)",
                    home.display(),
                    crate::home::DB_FILE
                ),
            ));
        }
        // Owner-only: the store holds the person's transcripts.
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(home)
            .map_err(|err| {
                AgentError::new(
                    codes::STORE_UNAVAILABLE,
                    format!("cannot create {}: {err}", home.display()),
                )
            })?;
        SqliteStore::open(home.join(crate::home::DB_FILE)).await
    }

    /// Open the store at `path` with the given durability.
    pub async fn open_with(
        path: impl AsRef<Path>,
        durability: Durability,
    ) -> Result<Self, AgentError> {
        let path = path.as_ref().to_path_buf();
        owner_only_file(&path)?;
        let making = schema_lock(&path).await?;
        check_schema(&path).await?;
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(match durability {
                Durability::Full => SqliteSynchronous::Full,
                Durability::Process => SqliteSynchronous::Normal,
            })
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(db_error)?;
        MIGRATOR.run(&pool).await.map_err(|err| {
            AgentError::new(
                codes::STORE_UNAVAILABLE,
                format!("cannot prepare the store: {err}"),
            )
        })?;
        drop(making);
        let writer = Writer::start(&path, durability)?;
        let reader = std::sync::Arc::new(Reader::open(&path)?);
        let channels = std::sync::Arc::new(Channels::default());
        let own_posts = inbox::OwnPosts::default();
        inbox::watch_posts(reader.clone(), &channels, own_posts.clone())?;
        tracing::debug!(path = %path.display(), "store open");
        Ok(SqliteStore {
            pool,
            reader,
            writer,
            path,
            channels,
            own_posts,
            opening: tokio::sync::Semaphore::new(OPENING_AT_ONCE),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Close the pool (waits for connections to be returned).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// The database must be a regular file — a FIFO or a device planted there
/// would hang or harm every command — and only its owner reads it (and its
/// `-wal` and `-shm`, which SQLite makes with the file's own mode): it is
/// created `0600`, and an existing one is made so.
fn owner_only_file(path: &Path) -> Result<(), AgentError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let unavailable = |why: String| AgentError::new(codes::STORE_UNAVAILABLE, why);
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => {
            return Err(unavailable(format!(
                "{} is not a regular file, so it is not opened as the store",
                path.display()
            )));
        }
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
            {
                Ok(_) => {}
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(err) => {
                    return Err(unavailable(format!(
                        "cannot create {}: {err}",
                        path.display()
                    )));
                }
            }
        }
        Err(err) => {
            return Err(unavailable(format!(
                "cannot read {}: {err}",
                path.display()
            )));
        }
    }
    for suffix in ["", "-wal", "-shm"] {
        let file = PathBuf::from(format!("{}{suffix}", path.display()));
        if let Ok(meta) = std::fs::metadata(&file)
            && meta.is_file()
            && meta.permissions().mode() & 0o077 != 0
        {
            // Another owner's file stays as it is (and SQLite says so).
            let _ = std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600));
        }
    }
    Ok(())
}

/// Held while one opener checks the schema and brings it up to date, so
/// that two processes opening a new store at once do not both make it
/// (sqlx's migrator takes no lock on SQLite: the second would fail on the
/// first's tables). An exclusive `flock` on the store's folder, not on the
/// file: closing any descriptor of the database file would drop this
/// process's SQLite locks on it (POSIX record locks are per process).
async fn schema_lock(path: &Path) -> Result<std::fs::File, AgentError> {
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let unavailable = |err: std::io::Error| {
        AgentError::new(
            codes::STORE_UNAVAILABLE,
            format!(
                "cannot lock {} to prepare the store: {err}",
                folder.display()
            ),
        )
    };
    let held = std::fs::File::open(&folder).map_err(unavailable)?;
    tokio::task::spawn_blocking(move || held.lock().map(|()| held))
        .await
        .map_err(|err| AgentError::new(codes::INTERNAL, err.to_string()))?
        .map_err(unavailable)
}

/// A process killed mid-transaction while the rollback journal was in use
/// (a new file's first transactions, before WAL is switched on) leaves a
/// hot journal that a read-only connection cannot roll back (SQLite's
/// `READONLY_ROLLBACK`), so the schema check would refuse the store for
/// good. A writable connection's first read rolls it back to the last
/// commit — what any writer opening the file does — before the check.
async fn roll_back_hot_journal(path: &Path) -> Result<(), AgentError> {
    let journal = PathBuf::from(format!("{}-journal", path.display()));
    if !std::fs::metadata(&journal).is_ok_and(|m| m.is_file() && m.len() > 0) {
        return Ok(());
    }
    let options = SqliteConnectOptions::new().filename(path);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .map_err(db_error)?;
    let read = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM sqlite_master")
        .fetch_one(&mut conn)
        .await
        .map_err(db_error);
    let _ = conn.close().await;
    read.map(|_| ())
}

/// Refuse a database written by a newer schema, without changing it.
async fn check_schema(path: &Path) -> Result<(), AgentError> {
    if !path.exists() {
        return Ok(());
    }
    roll_back_hot_journal(path).await?;
    let url = format!("sqlite://{}", path.display());
    let options = SqliteConnectOptions::from_str(&url)
        .map_err(db_error)?
        .read_only(true);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .map_err(db_error)?;
    let has_table: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
    )
    .fetch_optional(&mut conn)
    .await
    .map_err(db_error)?;
    let newest_known = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
    if has_table.is_some() {
        let newest_applied: Option<i64> =
            sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
                .fetch_one(&mut conn)
                .await
                .map_err(db_error)?;
        if let Some(applied) = newest_applied
            && applied > newest_known
        {
            let _ = conn.close().await;
            return Err(AgentError::new(
                codes::STORE_SCHEMA_NEWER,
                format!(
                    "{} has schema {applied}, newer than this rein's {newest_known}; it was not changed",
                    path.display()
                ),
            )
            .with_field("schema", applied)
            .with_field("known", newest_known));
        }
    }
    let _ = conn.close().await;
    Ok(())
}

#[async_trait]
impl Store for SqliteStore {
    async fn create_session(&self, metadata: Value) -> Result<SessionInfo, AgentError> {
        let id = rein_wire::ids::new_id();
        let stored = self
            .writer
            .commit(Write::Create {
                id: id.clone(),
                metadata,
            })
            .await?
            .events();
        self.channels.publish(&id, &stored);
        self.session(&id).await
    }

    async fn session(&self, id: &str) -> Result<SessionInfo, AgentError> {
        self.reader
            .one(
                "SELECT id, created_ms, metadata, head_seq, head_turn FROM sessions WHERE id = ?",
                params![id],
                crate::rows::session,
            )?
            .ok_or_else(|| not_found(id))
    }

    async fn list_sessions(&self, limit: usize) -> Result<Vec<SessionInfo>, AgentError> {
        self.reader.all(
            "SELECT id, created_ms, metadata, head_seq, head_turn FROM sessions ORDER BY id DESC LIMIT ?",
            params![to_i64(limit as u64)],
            crate::rows::session,
        )
    }

    async fn sessions_where(
        &self,
        key: &str,
        value: &str,
        limit: usize,
    ) -> Result<Vec<SessionInfo>, AgentError> {
        let path = format!("$.\"{}\"", crate::store::metadata_key(key)?);
        self.reader.all(
            "SELECT id, created_ms, metadata, head_seq, head_turn FROM sessions \
             WHERE json_extract(metadata, ?1) = ?2 AND json_type(metadata, ?1) = 'text' \
             ORDER BY id DESC LIMIT ?3",
            params![path, value, to_i64(limit as u64)],
            crate::rows::session,
        )
    }

    async fn append(
        &self,
        lease: &SessionLock,
        events: Vec<NewEvent>,
    ) -> Result<Vec<StoredEvent>, AgentError> {
        let stored = self
            .writer
            .commit(Write::Append {
                lease: lease.clone(),
                texts: append::encode(&events)?,
                events,
                take_inbox: None,
            })
            .await?
            .events();
        self.channels.publish(&lease.session_id, &stored);
        Ok(stored)
    }

    async fn read(
        &self,
        session: &str,
        from: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, AgentError> {
        let events = self.reader.all(
            "SELECT s.id AS session_id, l.seq, l.at_ms, l.agent_path, l.kind, l.version, l.data \
             FROM log l JOIN sessions s ON s.key = l.session \
             WHERE s.id = ? AND l.seq >= ? ORDER BY l.seq LIMIT ?",
            params![session, to_i64(from), to_i64(limit as u64)],
            crate::rows::event,
        )?;
        if events.is_empty() {
            self.session(session).await?;
        }
        Ok(events)
    }

    fn subscribe(&self, session: &str) -> broadcast::Receiver<StoredEvent> {
        self.channels.subscribe(session)
    }

    async fn turns(&self, session: &str) -> Result<Vec<TurnInfo>, AgentError> {
        self.session(session).await?;
        self.reader.all(
            "SELECT id, parent, prompt, started_seq, finished_seq, outcome FROM turns \
             WHERE session_id = ? ORDER BY started_seq",
            params![session],
            crate::rows::turn,
        )
    }

    async fn control(&self, session: &str) -> Result<ControlRecord, AgentError> {
        let text = self
            .reader
            .one(
                "SELECT control FROM sessions WHERE id = ?",
                params![session],
                |row| row.text("control"),
            )?
            .ok_or_else(|| not_found(session))?;
        Ok(serde_json::from_str(&text).unwrap_or_default())
    }

    async fn acquire(
        &self,
        session: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<SessionLock, AgentError> {
        self.writer
            .commit(Write::Acquire {
                session: session.to_owned(),
                holder: holder.to_owned(),
                ttl,
            })
            .await?
            .lease()
    }

    async fn renew(&self, lease: &SessionLock, ttl: Duration) -> Result<SessionLock, AgentError> {
        self.writer
            .commit(Write::Renew {
                lease: lease.clone(),
                ttl,
            })
            .await?
            .lease()
    }

    async fn release(&self, lease: &SessionLock) -> Result<(), AgentError> {
        self.writer
            .commit(Write::Release {
                lease: lease.clone(),
            })
            .await?;
        Ok(())
    }

    async fn post(&self, session: &str, item: crate::InboxItem) -> Result<u64, AgentError> {
        let posted = self.post_item(session, item).await?;
        self.channels.notify_posted(session);
        Ok(posted)
    }

    fn posted(&self, session: &str) -> crate::Posted {
        self.channels.posted(session)
    }

    fn opening(&self) -> Option<&tokio::sync::Semaphore> {
        Some(&self.opening)
    }

    async fn inbox(&self, session: &str) -> Result<Vec<crate::InboxEntry>, AgentError> {
        self.open_items(session).await
    }

    async fn take_inbox(
        &self,
        lease: &SessionLock,
        upto: u64,
        events: Vec<NewEvent>,
    ) -> Result<Vec<StoredEvent>, AgentError> {
        self.take_items(lease, upto, events).await
    }

    async fn put_artifact(
        &self,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<ArtifactRef, AgentError> {
        let hash = hash_hex(bytes);
        sqlx::query("INSERT INTO artifacts (hash, size, media_type, bytes) VALUES (?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING")
            .bind(&hash)
            .bind(to_i64(bytes.len() as u64))
            .bind(media_type)
            .bind(bytes)
            .execute(&self.pool)
            .await
            .map_err(db_error)?;
        self.reader
            .one(
                "SELECT hash, size, media_type FROM artifacts WHERE hash = ?",
                params![hash],
                crate::rows::artifact,
            )?
            .ok_or_else(|| {
                AgentError::new(
                    codes::STORE_UNAVAILABLE,
                    format!("the artifact {hash} was put and is not there"),
                )
            })
    }

    async fn read_artifact(&self, hash: &str, slice: Slice) -> Result<Vec<u8>, AgentError> {
        check_hash(hash)?;
        let bytes: Option<Vec<u8>> = match slice {
            // Byte ranges are cut by SQLite, without loading the whole blob.
            Slice::Bytes { offset, len } => self.reader.one(
                "SELECT substr(bytes, ?, ?) AS bytes FROM artifacts WHERE hash = ?",
                params![to_i64(offset.saturating_add(1)), to_i64(len), hash],
                reader::bytes,
            )?,
            _ => self
                .reader
                .one(
                    "SELECT bytes FROM artifacts WHERE hash = ?",
                    params![hash],
                    reader::bytes,
                )?
                .map(|b| slice_of(&b, slice)),
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
        self.reader.all(
            "SELECT hash, size, media_type FROM artifacts WHERE hash > ? ORDER BY hash LIMIT ?",
            params![after.unwrap_or_default(), to_i64(limit as u64)],
            crate::rows::artifact,
        )
    }

    async fn import(&self, info: &SessionInfo, events: Vec<StoredEvent>) -> Result<(), AgentError> {
        self.writer
            .commit(Write::Import {
                info: info.clone(),
                events,
            })
            .await
            .map(|_| ())
    }
}
