//! [`SqliteMemory`]: memory in a SQLite file, found by FTS5 full text
//! ranked by bm25 (an external-content index over the items, kept by
//! triggers). The file is the owner's alone (0600); a forgotten item's
//! text is overwritten on disk (`secure_delete`, the index's own
//! `secure-delete`, the write-ahead log emptied), not only unlinked. One
//! connection: a scope's count and the insert that respects it are one
//! transaction, and memory is written at a person's pace.
//!
//! With the `embeddings` feature and an embedder, each item's vector is
//! kept beside it and a search blends the nearest items in (`vectors.rs`).
//!
//! Not here: making the file and its schema (`opening`), the contract both
//! stores keep (`lib.rs`, the crate's tests).

use std::path::Path;

use async_trait::async_trait;
use rein_wire::AgentError;
use rein_wire::error::codes;
use sqlx::Row;
use sqlx::sqlite::{SqlitePool, SqliteRow};

use crate::opening::db_error;
use crate::rows::{columns, item_of, items_of, sql_limit};
use crate::terms::{fts_query, terms};
use crate::{
    Change, ChangeKind, Found, Limits, MAX_HISTORY, MemoryBank, MemoryItem, NewMemory, Scope,
    Source, not_found,
};

/// A vector and the model that made it.
type Vectored = (String, Vec<f32>);

/// Memory in a SQLite file.
#[derive(Clone)]
pub struct SqliteMemory {
    pool: SqlitePool,
    limits: Limits,
    /// Vectors kept and blended into searches, when given.
    #[cfg(feature = "embeddings")]
    embedder: Option<std::sync::Arc<dyn crate::embed::Embedder>>,
}

impl std::fmt::Debug for SqliteMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteMemory")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl SqliteMemory {
    /// Open (or create) the memory file at `path` with the default bounds.
    pub async fn open(path: impl AsRef<Path>) -> Result<SqliteMemory, AgentError> {
        SqliteMemory::open_with(path, Limits::default()).await
    }

    /// Open (or create) the memory file at `path` with these bounds.
    pub async fn open_with(
        path: impl AsRef<Path>,
        limits: Limits,
    ) -> Result<SqliteMemory, AgentError> {
        let path = path.as_ref();
        let pool = crate::opening::pool(path).await?;
        Ok(SqliteMemory {
            pool,
            limits,
            #[cfg(feature = "embeddings")]
            embedder: None,
        })
    }

    /// The same memory keeping each new item's vector by `embedder` and
    /// blending the nearest items into every search (feature
    /// `embeddings`). An item remembered while the embedder fails is kept
    /// without a vector (its words still find it); a search whose query
    /// cannot be embedded is by words alone.
    #[cfg(feature = "embeddings")]
    pub fn with_embedder(mut self, embedder: std::sync::Arc<dyn crate::embed::Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// The vector of each of `texts`, with its model (`None` each without
    /// an embedder, or where it failed); asked 64 texts at a time.
    async fn vectors_of(&self, texts: &[String]) -> Vec<Option<Vectored>> {
        #[cfg(feature = "embeddings")]
        if let Some(embedder) = &self.embedder {
            let mut out: Vec<Option<Vectored>> = vec![None; texts.len()];
            for (at, chunk) in texts.chunks(64).enumerate() {
                if let Ok(vectors) = embedder.embed(chunk).await {
                    for (i, vector) in vectors.into_iter().enumerate() {
                        out[at * 64 + i] = Some((embedder.model().to_owned(), vector));
                    }
                }
            }
            return out;
        }
        vec![None; texts.len()]
    }
}

impl SqliteMemory {
    /// Keep every item of `items` in `scope` in one transaction: all of
    /// them, or none (an import, a benchmark's fill). The same bounds as
    /// [`MemoryBank::remember`], the scope's count checked once for all.
    pub async fn remember_many(
        &self,
        scope: &Scope,
        items: Vec<NewMemory>,
    ) -> Result<Vec<MemoryItem>, AgentError> {
        for new in &items {
            self.limits.check(new)?;
        }
        let texts: Vec<String> = items.iter().map(|n| n.text.clone()).collect();
        let vectors = self.vectors_of(&texts).await;
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        let held: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM memory_items WHERE scope = ?1")
            .bind(scope.as_str())
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;
        let held = usize::try_from(held).unwrap_or(usize::MAX);
        if !items.is_empty() {
            self.limits.full(scope, held + items.len() - 1)?;
        }
        let mut kept = Vec::with_capacity(items.len());
        for (new, vector) in items.into_iter().zip(vectors) {
            let item = MemoryItem::new(scope, new);
            insert(&mut tx, &item, vector.as_ref()).await?;
            record(
                &mut tx,
                scope,
                &item.id,
                ChangeKind::Remembered,
                &item.source,
            )
            .await?;
            kept.push(item);
        }
        prune(&mut tx, scope).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(kept)
    }
}

/// Insert `item`'s row in `tx` (its index entry is the trigger's).
async fn insert(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    item: &MemoryItem,
    vector: Option<&Vectored>,
) -> Result<(), AgentError> {
    let done = sqlx::query(concat!(
        "INSERT INTO memory_items (",
        columns!(),
        ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
    ))
    .bind(&item.id)
    .bind(item.scope.as_str())
    .bind(&item.text)
    .bind(json(&item.tags))
    .bind(json(&item.source))
    .bind(i64::from(item.pinned))
    .bind(i64::try_from(item.revision).unwrap_or(1))
    .bind(item.created_ms)
    .execute(&mut **tx)
    .await
    .map_err(db_error)?;
    #[cfg(feature = "embeddings")]
    if let Some((model, vector)) = vector {
        let seq = done.last_insert_rowid();
        crate::vectors::keep(tx, seq, model, vector).await?;
    }
    #[cfg(not(feature = "embeddings"))]
    let _ = (vector, done);
    Ok(())
}

#[async_trait]
impl MemoryBank for SqliteMemory {
    async fn remember(&self, scope: &Scope, new: NewMemory) -> Result<MemoryItem, AgentError> {
        self.limits.check(&new)?;
        let item = MemoryItem::new(scope, new);
        let vector = self
            .vectors_of(std::slice::from_ref(&item.text))
            .await
            .pop()
            .flatten();
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        let held: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM memory_items WHERE scope = ?1")
            .bind(scope.as_str())
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;
        self.limits
            .full(scope, usize::try_from(held).unwrap_or(usize::MAX))?;
        insert(&mut tx, &item, vector.as_ref()).await?;
        record(
            &mut tx,
            scope,
            &item.id,
            ChangeKind::Remembered,
            &item.source,
        )
        .await?;
        prune(&mut tx, scope).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(item)
    }

    async fn get(&self, scope: &Scope, id: &str) -> Result<MemoryItem, AgentError> {
        let row = sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM memory_items WHERE scope = ?1 AND id = ?2"
        ))
        .bind(scope.as_str())
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
        match row {
            Some(row) => item_of(&row),
            None => Err(not_found(scope, id)),
        }
    }

    async fn list(&self, scope: &Scope, limit: usize) -> Result<Vec<MemoryItem>, AgentError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM memory_items WHERE scope = ?1 ORDER BY seq DESC LIMIT ?2"
        ))
        .bind(scope.as_str())
        .bind(sql_limit(self.limits.results(limit)))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        items_of(&rows)
    }

    async fn all(&self, scope: &Scope) -> Result<Vec<MemoryItem>, AgentError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM memory_items WHERE scope = ?1 ORDER BY seq LIMIT ?2"
        ))
        .bind(scope.as_str())
        .bind(sql_limit(self.limits.max_items))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        items_of(&rows)
    }

    async fn pinned(&self, scope: &Scope, limit: usize) -> Result<Vec<MemoryItem>, AgentError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM memory_items WHERE scope = ?1 AND pinned = 1 ORDER BY seq LIMIT ?2"
        ))
        .bind(scope.as_str())
        .bind(sql_limit(self.limits.results(limit)))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        items_of(&rows)
    }

    async fn search(
        &self,
        scope: &Scope,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Found>, AgentError> {
        let words = terms(query);
        if words.is_empty() {
            return Ok(Vec::new());
        }
        // The index is the outer loop (`CROSS JOIN` keeps SQLite from
        // walking the scope's rows and testing each against the index).
        let rows = sqlx::query(
            "SELECT m.seq, m.id, m.scope, m.text, m.tags, m.source, m.pinned, m.revision, m.created_ms,
                    -bm25(memory_text) AS rank
             FROM memory_text CROSS JOIN memory_items m ON m.seq = memory_text.rowid
             WHERE memory_text MATCH ?1 AND m.scope = ?2
             ORDER BY rank DESC, m.seq DESC LIMIT ?3",
        )
        .bind(fts_query(&words))
        .bind(scope.as_str())
        .bind(sql_limit(self.limits.results(limit)))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        let by_words = rows
            .iter()
            .map(|row| {
                let seq: i64 = row.try_get("seq").map_err(db_error)?;
                let found = Found {
                    item: item_of(row)?,
                    rank: row.try_get("rank").unwrap_or_default(),
                };
                Ok((seq, found))
            })
            .collect::<Result<Vec<_>, AgentError>>()?;
        #[cfg(feature = "embeddings")]
        if let Some(Some((model, vector))) = self.vectors_of(&[query.to_owned()]).await.pop() {
            let limit = self.limits.results(limit);
            let query = crate::vectors::Query {
                model: &model,
                vector: &vector,
                limit,
            };
            return crate::vectors::blend(&self.pool, scope, by_words, query).await;
        }
        Ok(by_words.into_iter().map(|(_, found)| found).collect())
    }

    async fn forget(&self, scope: &Scope, id: &str, source: &Source) -> Result<(), AgentError> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        let done = sqlx::query("DELETE FROM memory_items WHERE scope = ?1 AND id = ?2")
            .bind(scope.as_str())
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        if done.rows_affected() == 0 {
            return Err(not_found(scope, id));
        }
        record(&mut tx, scope, id, ChangeKind::Forgotten, source).await?;
        prune(&mut tx, scope).await?;
        tx.commit().await.map_err(db_error)?;
        // The write-ahead log still holds the pages the text was on: move
        // them into the file (where `secure_delete` zeroed it) and empty
        // the log.
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(())
    }

    async fn history(&self, scope: &Scope, limit: usize) -> Result<Vec<Change>, AgentError> {
        let rows = sqlx::query(
            "SELECT id, kind, source, at_ms FROM memory_changes
             WHERE scope = ?1 ORDER BY seq DESC LIMIT ?2",
        )
        .bind(scope.as_str())
        .bind(sql_limit(self.limits.results(limit)))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter().map(change_of).collect()
    }
}

/// Add a change to `scope`'s history in `tx`.
async fn record(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    scope: &Scope,
    id: &str,
    kind: ChangeKind,
    source: &Source,
) -> Result<(), AgentError> {
    sqlx::query(
        "INSERT INTO memory_changes (scope, id, kind, source, at_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .bind(scope.as_str())
    .bind(id)
    .bind(json(&kind).trim_matches('"').to_owned())
    .bind(json(source))
    .bind(rein_wire::clock::now_ms())
    .execute(&mut **tx)
    .await
    .map_err(db_error)?;
    Ok(())
}

/// Keep only `scope`'s newest [`MAX_HISTORY`] changes, in `tx` (once per
/// transaction, after its changes).
async fn prune(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    scope: &Scope,
) -> Result<(), AgentError> {
    sqlx::query(
        "DELETE FROM memory_changes WHERE scope = ?1 AND seq <= (
            SELECT seq FROM memory_changes WHERE scope = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2)",
    )
    .bind(scope.as_str())
    .bind(sql_limit(MAX_HISTORY))
    .execute(&mut **tx)
    .await
    .map_err(db_error)?;
    Ok(())
}

fn change_of(row: &SqliteRow) -> Result<Change, AgentError> {
    let bad = |e: &dyn std::fmt::Display| {
        AgentError::new(
            codes::STORE_UNAVAILABLE,
            format!("a memory change cannot be read: {e}"),
        )
    };
    let kind: String = row.try_get("kind").map_err(|e| bad(&e))?;
    let source: String = row.try_get("source").map_err(|e| bad(&e))?;
    Ok(Change {
        at_ms: row.try_get("at_ms").map_err(|e| bad(&e))?,
        id: row.try_get("id").map_err(|e| bad(&e))?,
        kind: serde_json::from_value(serde_json::Value::String(kind)).map_err(|e| bad(&e))?,
        source: serde_json::from_str(&source).map_err(|e| bad(&e))?,
    })
}

/// A value stored as JSON text.
fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}
