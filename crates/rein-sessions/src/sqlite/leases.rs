//! A session's lease, taken, renewed and given back on the writer's
//! connection: they are writes, and as separate sqlx transactions they
//! contended with the writer for SQLite's write lock (a busy wait that
//! showed as seconds of step latency with a thousand conversations).
//!
//! Not here: when a lease may be taken over (`validate`).

use std::time::Duration;

use rein_wire::AgentError;
use rusqlite::{Connection, OptionalExtension, params};

use super::failed::sql_error;
use super::not_found;
use crate::store::SessionLock;
use crate::validate::{lock_lost, locked, may_take_over, new_lease, now_ms, ttl_ms};

/// Take `session`'s lease for `holder` (`session_locked` while another
/// holds it and is not provably gone).
pub(super) fn acquire(
    conn: &Connection,
    session: &str,
    holder: &str,
    ttl: Duration,
) -> Result<SessionLock, AgentError> {
    let exists: Option<i64> = conn
        .prepare_cached("SELECT 1 FROM sessions WHERE id = ?")
        .and_then(|mut s| s.query_row([session], |r| r.get(0)).optional())
        .map_err(sql_error)?;
    if exists.is_none() {
        return Err(not_found(session));
    }
    let now = now_ms();
    let current = conn
        .prepare_cached(
            "SELECT holder, token, acquired_ms, expires_ms, process FROM session_locks WHERE session_id = ?",
        )
        .and_then(|mut s| {
            s.query_row([session], |r| {
                let process: Option<String> = r.get(4)?;
                Ok(SessionLock {
                    session_id: session.to_owned(),
                    holder: r.get(0)?,
                    token: r.get(1)?,
                    acquired_ms: r.get(2)?,
                    expires_ms: r.get(3)?,
                    // A mark this rein cannot read proves nothing: wait for expiry.
                    process: process.and_then(|json| serde_json::from_str(&json).ok()),
                })
            })
            .optional()
        })
        .map_err(sql_error)?;
    if let Some(current) = current {
        if !may_take_over(&current, now) {
            return Err(locked(&current));
        }
        tracing::info!(session, previous = %current.holder, "taking over a lapsed session lease (expired, or its holder is provably dead)");
    }
    let lease = new_lease(session, holder, ttl, now);
    let process = lease
        .process
        .as_ref()
        .and_then(|mark| serde_json::to_string(mark).ok());
    conn.prepare_cached(
        "INSERT INTO session_locks (session_id, holder, token, acquired_ms, expires_ms, process) VALUES (?, ?, ?, ?, ?, ?) \
         ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, token = excluded.token, \
         acquired_ms = excluded.acquired_ms, expires_ms = excluded.expires_ms, process = excluded.process",
    )
    .and_then(|mut s| {
        s.execute(params![
            session,
            lease.holder,
            lease.token,
            lease.acquired_ms,
            lease.expires_ms,
            process
        ])
    })
    .map_err(sql_error)?;
    Ok(lease)
}

/// Extend `lease` by `ttl` from now (`lock_lost` if it lapsed or was
/// taken).
pub(super) fn renew(
    conn: &Connection,
    lease: &SessionLock,
    ttl: Duration,
) -> Result<SessionLock, AgentError> {
    let now = now_ms();
    let expires = now.saturating_add(ttl_ms(ttl));
    let changed = conn
        .prepare_cached(
            "UPDATE session_locks SET expires_ms = ? WHERE session_id = ? AND token = ? AND expires_ms > ?",
        )
        .and_then(|mut s| s.execute(params![expires, lease.session_id, lease.token, now]))
        .map_err(sql_error)?;
    if changed == 0 {
        return Err(lock_lost(&lease.session_id));
    }
    Ok(SessionLock {
        expires_ms: expires,
        ..lease.clone()
    })
}

/// Give `lease` back (nothing if it is no longer held).
pub(super) fn release(conn: &Connection, lease: &SessionLock) -> Result<(), AgentError> {
    conn.prepare_cached("DELETE FROM session_locks WHERE session_id = ? AND token = ?")
        .and_then(|mut s| s.execute(params![lease.session_id, lease.token]))
        .map_err(sql_error)?;
    Ok(())
}
