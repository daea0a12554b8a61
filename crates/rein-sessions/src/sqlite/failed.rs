//! A failure of the SQLite file, as the store reports it
//! (`store_unavailable`): one rule for the writer, its appends and its
//! leases.
//!
//! Not here: a write refused for a reason of the log's own (a stale lease,
//! a turn already open), which each write says itself.

use rein_wire::{AgentError, error::codes};

/// `err` as the store reports it.
pub(super) fn sql_error(err: rusqlite::Error) -> AgentError {
    AgentError::new(codes::STORE_UNAVAILABLE, format!("the store failed: {err}"))
}
