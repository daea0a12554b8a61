//! Rows read back into rein's types, written once for every sqlx store
//! (SQLite's reads and PostgreSQL's): a session, an event, a turn, an
//! artifact. Each store's SQL names the columns as these expect.
//!
//! Not here: the SQL itself (each store's), writes.

use rein_wire::{AgentError, error::codes};
use serde_json::Value;
use sqlx::{ColumnIndex, Decode, Row, Type};

use crate::event::{Event, StoredEvent};
use crate::store::{ArtifactRef, SessionInfo, TurnInfo};

fn db_error(err: sqlx::Error) -> AgentError {
    AgentError::new(codes::STORE_UNAVAILABLE, format!("the store failed: {err}"))
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// Column `name` of `row`, decoded.
fn col<'r, R, T>(row: &'r R, name: &str) -> Result<T, AgentError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    T: Decode<'r, R::Database> + Type<R::Database>,
{
    row.try_get(name).map_err(db_error)
}

/// A session: `id, created_ms, metadata, head_seq, head_turn`.
pub(crate) fn session<'r, R: Row>(row: &'r R) -> Result<SessionInfo, AgentError>
where
    for<'a> &'a str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let metadata: String = col(row, "metadata")?;
    Ok(SessionInfo {
        id: col(row, "id")?,
        created_ms: col(row, "created_ms")?,
        metadata: serde_json::from_str(&metadata).unwrap_or(Value::Null),
        head_seq: to_u64(col(row, "head_seq")?),
        head_turn: col(row, "head_turn")?,
    })
}

/// An event: `session_id, seq, at_ms, agent_path, kind, version, data`.
pub(crate) fn event<'r, R: Row>(row: &'r R) -> Result<StoredEvent, AgentError>
where
    for<'a> &'a str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let kind: String = col(row, "kind")?;
    let version: i64 = col(row, "version")?;
    let data: String = col(row, "data")?;
    let data: Value = serde_json::from_str(&data).unwrap_or(Value::String(data));
    Ok(StoredEvent {
        session_id: col(row, "session_id")?,
        seq: to_u64(col(row, "seq")?),
        at_ms: col(row, "at_ms")?,
        agent_path: col(row, "agent_path")?,
        event: Event::from_parts(&kind, u32::try_from(version).unwrap_or(u32::MAX), data),
    })
}

/// A turn: `id, parent, prompt, started_seq, finished_seq, outcome`.
pub(crate) fn turn<'r, R: Row>(row: &'r R) -> Result<TurnInfo, AgentError>
where
    for<'a> &'a str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(TurnInfo {
        id: col(row, "id")?,
        parent: col(row, "parent")?,
        prompt: col(row, "prompt")?,
        started_seq: to_u64(col(row, "started_seq")?),
        finished_seq: col::<_, Option<i64>>(row, "finished_seq")?.map(to_u64),
        outcome: col::<_, Option<String>>(row, "outcome")?
            .and_then(|word| rein_wire::Ending::named(&word)),
    })
}

/// An artifact's reference: `hash, size, media_type`.
pub(crate) fn artifact<'r, R: Row>(row: &'r R) -> Result<ArtifactRef, AgentError>
where
    for<'a> &'a str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(ArtifactRef {
        hash: col(row, "hash")?,
        size: to_u64(col(row, "size")?),
        media_type: col(row, "media_type")?,
    })
}

/// The inbox items of `rows` (`id, at_ms, item`) this rein can read; an
/// item it cannot (a newer rein's) is left for a newer one.
pub(crate) fn inbox<'r, R: Row>(rows: &'r [R]) -> Result<Vec<crate::InboxEntry>, AgentError>
where
    for<'a> &'a str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let mut entries = Vec::with_capacity(rows.len());
    for row in rows {
        let text: String = col(row, "item")?;
        let Ok(item) = serde_json::from_str::<crate::InboxItem>(&text) else {
            continue;
        };
        entries.push(crate::InboxEntry {
            id: to_u64(col(row, "id")?),
            at_ms: col(row, "at_ms")?,
            item,
        });
    }
    Ok(entries)
}
