//! Items' vectors in the memory file (feature `embeddings`) and the blend
//! of a search: the full-text results and the vectors nearest the query's
//! (cosine, at least [`MIN_SIMILARITY`], within the scope and the
//! embedder's model), fused by reciprocal rank — an item found both ways
//! ranks above one found only one way, and neither list's raw scores need
//! to be comparable.
//!
//! Not here: asking for vectors (`embed.rs`), the items (`sqlite.rs`).

use std::collections::HashMap;

use rein_wire::AgentError;
use sqlx::Row;
use sqlx::sqlite::SqlitePool;

use crate::opening::db_error;
use crate::rows::{item_at, sql_limit};
use crate::{Found, Scope};

/// The least cosine similarity a vector-only match needs to be kept.
pub const MIN_SIMILARITY: f32 = 0.35;

/// Reciprocal-rank fusion's constant (the usual 60).
const FUSION_K: f64 = 60.0;

/// Keep item `seq`'s `vector` of `model`, in `tx`.
pub(crate) async fn keep(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    seq: i64,
    model: &str,
    vector: &[f32],
) -> Result<(), AgentError> {
    let bytes: Vec<u8> = vector.iter().flat_map(|f| f.to_le_bytes()).collect();
    sqlx::query("INSERT OR REPLACE INTO memory_vectors (seq, model, vector) VALUES (?1, ?2, ?3)")
        .bind(seq)
        .bind(model)
        .bind(bytes)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
    Ok(())
}

/// The scope's items nearest `query` by `model`'s vectors, best first, at
/// most `limit`, each at least [`MIN_SIMILARITY`]: `(seq, similarity)`.
pub(crate) async fn nearest(
    pool: &SqlitePool,
    scope: &str,
    model: &str,
    query: &[f32],
    limit: usize,
) -> Result<Vec<(i64, f32)>, AgentError> {
    let rows = sqlx::query(
        "SELECT v.seq, v.vector FROM memory_items m CROSS JOIN memory_vectors v ON v.seq = m.seq
         WHERE m.scope = ?1 AND v.model = ?2",
    )
    .bind(scope)
    .bind(model)
    .fetch_all(pool)
    .await
    .map_err(db_error)?;
    let mut near: Vec<(i64, f32)> = rows
        .iter()
        .filter_map(|row| {
            let seq: i64 = row.try_get("seq").ok()?;
            let bytes: Vec<u8> = row.try_get("vector").ok()?;
            let vector: Vec<f32> = bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            let similarity = cosine(query, &vector)?;
            (similarity >= MIN_SIMILARITY).then_some((seq, similarity))
        })
        .collect();
    near.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    near.truncate(usize::try_from(sql_limit(limit)).unwrap_or(limit));
    Ok(near)
}

/// The cosine of two vectors of the same length (`None` otherwise, or
/// for a zero vector).
fn cosine(a: &[f32], b: &[f32]) -> Option<f32> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let (mut dot, mut aa, mut bb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        aa += x * x;
        bb += y * y;
    }
    let norm = aa.sqrt() * bb.sqrt();
    (norm > 0.0).then(|| dot / norm)
}

/// The two rankings fused: each item's score is the sum of `1 / (60 +
/// rank)` over the lists it is in; best first, at most `limit`.
pub(crate) fn fuse(words: &[i64], near: &[(i64, f32)], limit: usize) -> Vec<(i64, f64)> {
    let mut scores: HashMap<i64, f64> = HashMap::new();
    for (rank, seq) in words.iter().enumerate() {
        *scores.entry(*seq).or_default() += 1.0 / (FUSION_K + rank as f64 + 1.0);
    }
    for (rank, (seq, _)) in near.iter().enumerate() {
        *scores.entry(*seq).or_default() += 1.0 / (FUSION_K + rank as f64 + 1.0);
    }
    let mut fused: Vec<(i64, f64)> = scores.into_iter().collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    fused.truncate(limit);
    fused
}

/// A search's vector: the model that made it, the numbers, how many
/// results.
pub(crate) struct Query<'a> {
    pub(crate) model: &'a str,
    pub(crate) vector: &'a [f32],
    pub(crate) limit: usize,
}

/// `by_words` (each with its row's seq) fused with the scope's items
/// nearest the query's vector.
pub(crate) async fn blend(
    pool: &SqlitePool,
    scope: &Scope,
    by_words: Vec<(i64, Found)>,
    query: Query<'_>,
) -> Result<Vec<Found>, AgentError> {
    let near = nearest(pool, scope.as_str(), query.model, query.vector, query.limit).await?;
    let words: Vec<i64> = by_words.iter().map(|(seq, _)| *seq).collect();
    let mut known: HashMap<i64, Found> = by_words.into_iter().collect();
    let mut found = Vec::new();
    for (seq, score) in fuse(&words, &near, query.limit) {
        let item = match known.remove(&seq) {
            Some(hit) => hit.item,
            None => match item_at(pool, seq, scope).await? {
                Some(item) => item,
                None => continue,
            },
        };
        found.push(Found { item, rank: score });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_found_both_ways_ranks_first() {
        let fused = fuse(&[1, 2], &[(3, 0.9), (2, 0.8)], 10);
        assert_eq!(fused[0].0, 2);
        assert_eq!(fused.len(), 3);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), Some(0.0));
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), None);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), None);
    }
}
