//! Opening the memory file: rein's home made when it does not exist yet
//! (owner-only, as the sessions' store makes it), the file created 0600,
//! its schema version checked and the tables made. Schema versions are
//! `PRAGMA user_version` (2 added each scope's history, `memory_changes`:
//! a file of 1 gains it on open); a file made by a newer rein is refused
//! (`store_schema_newer`), never rewritten.
//!
//! Not here: what the store does with the file once open (`sqlite`).

use std::path::Path;
use std::time::Duration;

use rein_wire::AgentError;
use rein_wire::error::codes;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

/// The schema this rein writes (a macro: SQL text is literal).
macro_rules! schema_version {
    () => {
        2
    };
}
const SCHEMA_VERSION: i64 = schema_version!();

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS memory_items (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        scope TEXT NOT NULL,
        text TEXT NOT NULL,
        tags TEXT NOT NULL,
        source TEXT NOT NULL,
        pinned INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        created_ms INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS memory_by_scope ON memory_items(scope, seq)",
    // Schema 2: each scope's history (never an item's text).
    "CREATE TABLE IF NOT EXISTS memory_changes (
        seq INTEGER PRIMARY KEY,
        scope TEXT NOT NULL,
        id TEXT NOT NULL,
        kind TEXT NOT NULL,
        source TEXT NOT NULL,
        at_ms INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS memory_changes_by_scope ON memory_changes(scope, seq)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS memory_text
        USING fts5(text, tags, content='memory_items', content_rowid='seq')",
    // A deleted row's tokens are removed from the index at once, not only
    // marked deleted until a merge.
    "INSERT INTO memory_text(memory_text, rank) VALUES ('secure-delete', 1)",
    "CREATE TRIGGER IF NOT EXISTS memory_added AFTER INSERT ON memory_items BEGIN
        INSERT INTO memory_text(rowid, text, tags) VALUES (new.seq, new.text, new.tags);
    END",
    "CREATE TRIGGER IF NOT EXISTS memory_removed AFTER DELETE ON memory_items BEGIN
        INSERT INTO memory_text(memory_text, rowid, text, tags)
            VALUES ('delete', old.seq, old.text, old.tags);
    END",
];

/// The vectors' table, with the embeddings feature; none without.
#[cfg(feature = "embeddings")]
const VECTOR_SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS memory_vectors (
        seq INTEGER PRIMARY KEY,
        model TEXT NOT NULL,
        vector BLOB NOT NULL)",
    "CREATE TRIGGER IF NOT EXISTS memory_vector_removed AFTER DELETE ON memory_items BEGIN
        DELETE FROM memory_vectors WHERE seq = old.seq;
    END",
];
#[cfg(not(feature = "embeddings"))]
const VECTOR_SCHEMA: &[&str] = &[];

/// The pool of the memory file at `path`, made and brought to this
/// rein's schema.
pub(crate) async fn pool(path: &Path) -> Result<SqlitePool, AgentError> {
    let fresh = !path.exists();
    // A home that does not exist yet is made, owner-only, as the
    // sessions' store makes it: memory may be the first thing kept.
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.exists()
    {
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(parent)
            .map_err(|err| {
                AgentError::new(
                    codes::STORE_UNAVAILABLE,
                    format!("cannot create {}: {err}", parent.display()),
                )
            })?;
    }
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(10))
        .pragma("secure_delete", "ON");
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .map_err(db_error)?;
    if fresh {
        owner_only(path)?;
    }
    let version: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&pool)
        .await
        .map_err(db_error)?;
    if version > SCHEMA_VERSION {
        return Err(AgentError::new(
            codes::STORE_SCHEMA_NEWER,
            format!(
                "the memory file {} has schema {version}; this rein knows {SCHEMA_VERSION}",
                path.display()
            ),
        ));
    }
    for statement in SCHEMA.iter().chain(VECTOR_SCHEMA) {
        sqlx::query(*statement)
            .execute(&pool)
            .await
            .map_err(db_error)?;
    }
    sqlx::query(concat!("PRAGMA user_version = ", schema_version!()))
        .execute(&pool)
        .await
        .map_err(db_error)?;
    Ok(pool)
}

/// The file is its owner's alone.
fn owner_only(path: &Path) -> Result<(), AgentError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| {
        AgentError::new(
            codes::STORE_UNAVAILABLE,
            format!("cannot make {} private: {e}", path.display()),
        )
    })
}

/// A failure of the memory file, as the store reports it.
pub(crate) fn db_error(err: sqlx::Error) -> AgentError {
    AgentError::new(
        codes::STORE_UNAVAILABLE,
        format!("the memory store failed: {err}"),
    )
}
