//! Rows read back into rein's types, written once for every store that
//! reads with SQL (SQLite's reads through its own connections, PostgreSQL's
//! through sqlx): a session, an event, a turn, an artifact. Each store's SQL
//! names the columns as these expect; each row type says how it gives a
//! column ([`Columns`]).
//!
//! Not here: the SQL itself (each store's), writes.

use rein_wire::{AgentError, error::codes};
use serde_json::Value;

use crate::event::{Event, StoredEvent};
use crate::store::{ArtifactRef, SessionInfo, TurnInfo};

/// A row that gives a column by its name, as an integer, text or bytes; a
/// column that is NULL gives `None`.
pub(crate) trait Columns {
    fn maybe_int(&self, name: &str) -> Result<Option<i64>, AgentError>;
    fn maybe_text(&self, name: &str) -> Result<Option<String>, AgentError>;
    fn maybe_blob(&self, name: &str) -> Result<Option<Vec<u8>>, AgentError>;

    fn int(&self, name: &str) -> Result<i64, AgentError> {
        self.maybe_int(name)?.ok_or_else(|| null(name))
    }

    fn text(&self, name: &str) -> Result<String, AgentError> {
        self.maybe_text(name)?.ok_or_else(|| null(name))
    }

    fn blob(&self, name: &str) -> Result<Vec<u8>, AgentError> {
        self.maybe_blob(name)?.ok_or_else(|| null(name))
    }
}

fn null(name: &str) -> AgentError {
    AgentError::new(
        codes::STORE_UNAVAILABLE,
        format!("the store failed: column `{name}` is NULL"),
    )
}

fn failed(err: impl std::fmt::Display) -> AgentError {
    AgentError::new(codes::STORE_UNAVAILABLE, format!("the store failed: {err}"))
}

#[cfg(feature = "postgres")]
impl Columns for sqlx::postgres::PgRow {
    fn maybe_int(&self, name: &str) -> Result<Option<i64>, AgentError> {
        sqlx::Row::try_get(self, name).map_err(failed)
    }

    fn maybe_text(&self, name: &str) -> Result<Option<String>, AgentError> {
        sqlx::Row::try_get(self, name).map_err(failed)
    }

    fn maybe_blob(&self, name: &str) -> Result<Option<Vec<u8>>, AgentError> {
        sqlx::Row::try_get(self, name).map_err(failed)
    }
}

#[cfg(feature = "sqlite")]
impl Columns for rusqlite::Row<'_> {
    fn maybe_int(&self, name: &str) -> Result<Option<i64>, AgentError> {
        self.get(name).map_err(failed)
    }

    fn maybe_text(&self, name: &str) -> Result<Option<String>, AgentError> {
        self.get(name).map_err(failed)
    }

    fn maybe_blob(&self, name: &str) -> Result<Option<Vec<u8>>, AgentError> {
        self.get(name).map_err(failed)
    }
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// A session: `id, created_ms, metadata, head_seq, head_turn`.
pub(crate) fn session(row: &dyn Columns) -> Result<SessionInfo, AgentError> {
    let metadata = row.text("metadata")?;
    Ok(SessionInfo {
        id: row.text("id")?,
        created_ms: row.int("created_ms")?,
        metadata: serde_json::from_str(&metadata).unwrap_or(Value::Null),
        head_seq: to_u64(row.int("head_seq")?),
        head_turn: row.maybe_text("head_turn")?,
    })
}

/// An event: `session_id, seq, at_ms, agent_path, kind, version, data`.
pub(crate) fn event(row: &dyn Columns) -> Result<StoredEvent, AgentError> {
    let kind = row.text("kind")?;
    let version = row.int("version")?;
    let data = row.text("data")?;
    let data: Value = serde_json::from_str(&data).unwrap_or(Value::String(data));
    Ok(StoredEvent {
        session_id: row.text("session_id")?,
        seq: to_u64(row.int("seq")?),
        at_ms: row.int("at_ms")?,
        agent_path: row.text("agent_path")?,
        event: Event::from_parts(&kind, u32::try_from(version).unwrap_or(u32::MAX), data),
    })
}

/// A turn: `id, parent, prompt, started_seq, finished_seq, outcome`.
pub(crate) fn turn(row: &dyn Columns) -> Result<TurnInfo, AgentError> {
    Ok(TurnInfo {
        id: row.text("id")?,
        parent: row.maybe_text("parent")?,
        prompt: row.text("prompt")?,
        started_seq: to_u64(row.int("started_seq")?),
        finished_seq: row.maybe_int("finished_seq")?.map(to_u64),
        outcome: row
            .maybe_text("outcome")?
            .and_then(|word| rein_wire::Ending::named(&word)),
    })
}

/// An artifact's reference: `hash, size, media_type`.
pub(crate) fn artifact(row: &dyn Columns) -> Result<ArtifactRef, AgentError> {
    Ok(ArtifactRef {
        hash: row.text("hash")?,
        size: to_u64(row.int("size")?),
        media_type: row.text("media_type")?,
    })
}

/// The inbox entry of `row` (`id, at_ms, item`), or `None` for an item
/// this rein cannot read (a newer rein's), left for a newer one.
pub(crate) fn inbox_entry(row: &dyn Columns) -> Result<Option<crate::InboxEntry>, AgentError> {
    let text = row.text("item")?;
    let Ok(item) = serde_json::from_str::<crate::InboxItem>(&text) else {
        return Ok(None);
    };
    Ok(Some(crate::InboxEntry {
        id: to_u64(row.int("id")?),
        at_ms: row.int("at_ms")?,
        item,
    }))
}
