//! An item as SQLite keeps it: its columns, a row read back as a
//! [`MemoryItem`], and a bound as SQLite takes it — shared by the store
//! (`sqlite.rs`) and its vectors (`vectors.rs`).
//!
//! Not here: any query of the store's own.

use rein_wire::AgentError;
use rein_wire::error::codes;
use sqlx::Row;
#[cfg(feature = "embeddings")]
use sqlx::sqlite::SqlitePool;
use sqlx::sqlite::SqliteRow;

#[cfg(feature = "embeddings")]
use crate::opening::db_error;
use crate::{MemoryItem, Scope, Source};

/// An item's columns, in `item_of`'s order of names.
macro_rules! columns {
    () => {
        "id, scope, text, tags, source, pinned, revision, created_ms"
    };
}

pub(crate) use columns;

pub(crate) fn item_of(row: &SqliteRow) -> Result<MemoryItem, AgentError> {
    let bad = |e: &dyn std::fmt::Display| {
        AgentError::new(
            codes::STORE_UNAVAILABLE,
            format!("a memory row cannot be read: {e}"),
        )
    };
    let tags: String = row.try_get("tags").map_err(|e| bad(&e))?;
    let source: String = row.try_get("source").map_err(|e| bad(&e))?;
    let scope: String = row.try_get("scope").map_err(|e| bad(&e))?;
    let revision: i64 = row.try_get("revision").map_err(|e| bad(&e))?;
    Ok(MemoryItem {
        id: row.try_get("id").map_err(|e| bad(&e))?,
        scope: Scope::new(&scope)?,
        text: row.try_get("text").map_err(|e| bad(&e))?,
        tags: serde_json::from_str(&tags).map_err(|e| bad(&e))?,
        source: serde_json::from_str::<Source>(&source).map_err(|e| bad(&e))?,
        pinned: row.try_get::<i64, _>("pinned").map_err(|e| bad(&e))? != 0,
        revision: u64::try_from(revision).unwrap_or_default(),
        created_ms: row.try_get("created_ms").map_err(|e| bad(&e))?,
    })
}

pub(crate) fn items_of(rows: &[SqliteRow]) -> Result<Vec<MemoryItem>, AgentError> {
    rows.iter().map(item_of).collect()
}

/// A bound as SQLite takes it.
pub(crate) fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// The item at `seq` if it is in `scope`.
#[cfg(feature = "embeddings")]
pub(crate) async fn item_at(
    pool: &SqlitePool,
    seq: i64,
    scope: &Scope,
) -> Result<Option<MemoryItem>, AgentError> {
    let row = sqlx::query(concat!(
        "SELECT ",
        columns!(),
        " FROM memory_items WHERE seq = ?1 AND scope = ?2"
    ))
    .bind(seq)
    .bind(scope.as_str())
    .fetch_optional(pool)
    .await
    .map_err(db_error)?;
    row.as_ref().map(item_of).transpose()
}
