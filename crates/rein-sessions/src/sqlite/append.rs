//! One write inside the writer's open transaction: the lease checked, the
//! events checked, numbered and inserted, the turn tree and the control
//! record projected — all on the writer's connection, so a batch sees its
//! own earlier writes and sequence numbers stay gapless. The writer owns
//! the transaction and its commit.

use std::collections::HashMap;

use rein_wire::{AgentError, error::codes};
use rusqlite::{Connection, OptionalExtension, params};

use super::{not_found, to_i64, to_u64};
use crate::event::{Event, NewEvent, StoredEvent};
use crate::projection::{Numbered, TurnChange, number, turn_refs};
use crate::store::{ControlRecord, SessionLock};
use crate::validate::{check_append, lock_lost, now_ms};

use super::failed::sql_error;

/// What the writer is asked to commit.
#[derive(Debug)]
pub(super) enum Write {
    /// A new session and its `session.created` event.
    Create {
        /// Its id.
        id: String,
        /// Its metadata.
        metadata: serde_json::Value,
    },
    /// Events appended by the lease holder; with `take_inbox`, the inbox
    /// items up to that id are marked taken in the same commit.
    Append {
        /// The holder's lease.
        lease: SessionLock,
        /// The events.
        events: Vec<NewEvent>,
        /// Each event's data as JSON text, encoded by the caller
        /// ([`encode`]) so that the one writer thread only writes.
        texts: Vec<String>,
        /// Inbox items taken with them.
        take_inbox: Option<u64>,
    },
    /// A session copied whole from another store.
    Import {
        /// Its info there.
        info: crate::store::SessionInfo,
        /// Its whole log.
        events: Vec<StoredEvent>,
    },
    /// Take a session's lease.
    Acquire {
        /// The session.
        session: String,
        /// Who takes it.
        holder: String,
        /// For how long.
        ttl: std::time::Duration,
    },
    /// Extend a lease.
    Renew {
        /// The lease.
        lease: SessionLock,
        /// By how long, from now.
        ttl: std::time::Duration,
    },
    /// Give a lease back.
    Release {
        /// The lease.
        lease: SessionLock,
    },
}

/// What a write produced.
#[derive(Debug)]
pub(super) enum Done {
    /// The events appended.
    Events(Vec<StoredEvent>),
    /// The lease taken or renewed.
    SessionLock(SessionLock),
    /// Nothing to return.
    Nothing,
}

impl Done {
    pub(super) fn events(self) -> Vec<StoredEvent> {
        match self {
            Done::Events(events) => events,
            _ => Vec::new(),
        }
    }

    pub(super) fn lease(self) -> Result<SessionLock, AgentError> {
        match self {
            Done::SessionLock(lease) => Ok(lease),
            _ => Err(AgentError::new(
                codes::INTERNAL,
                "the store's writer answered a lease request with something else",
            )),
        }
    }
}

/// Apply one write inside the writer's transaction. A write it refuses
/// changed nothing unless [`Connection::total_changes`] moved (the
/// writer's test for rolling back).
pub(super) fn apply_write(conn: &Connection, write: &Write) -> Result<Done, AgentError> {
    match write {
        Write::Acquire {
            session,
            holder,
            ttl,
        } => super::leases::acquire(conn, session, holder, *ttl).map(Done::SessionLock),
        Write::Renew { lease, ttl } => {
            super::leases::renew(conn, lease, *ttl).map(Done::SessionLock)
        }
        Write::Release { lease } => super::leases::release(conn, lease).map(|()| Done::Nothing),
        Write::Import { info, events } => import(conn, info, events).map(|()| Done::Nothing),
        Write::Create { id, metadata } => {
            let text = serde_json::to_string(metadata).map_err(|err| {
                AgentError::new(codes::INVALID_INPUT, format!("metadata is not JSON: {err}"))
            })?;
            conn.prepare_cached(
                "INSERT INTO sessions (id, created_ms, metadata, key) \
                 VALUES (?, ?, ?, (SELECT COALESCE(MAX(key), 0) + 1 FROM sessions))",
            )
            .and_then(|mut s| s.execute(params![id, now_ms(), text]))
            .map_err(sql_error)?;
            append_in(
                conn,
                id,
                None,
                vec![NewEvent::main(Event::SessionCreated {
                    metadata: metadata.clone(),
                })],
                None,
            )
            .map(Done::Events)
        }
        Write::Append {
            lease,
            events,
            texts,
            take_inbox,
        } => {
            let stored = append_in(
                conn,
                &lease.session_id,
                Some(lease),
                events.clone(),
                Some(texts),
            )?;
            if let Some(upto) = take_inbox {
                conn.prepare_cached(
                    "UPDATE inbox SET taken = 1 WHERE session_id = ? AND id <= ? AND taken = 0",
                )
                .and_then(|mut s| s.execute(params![lease.session_id, to_i64(*upto)]))
                .map_err(sql_error)?;
            }
            Ok(Done::Events(stored))
        }
    }
}

/// The session's row as an append reads it, and whether the lease holds it.
struct Head {
    rowid: i64,
    seq: u64,
    turn: Option<String>,
    control: String,
    key: i64,
    held: bool,
}

/// The session's head in one statement: `session_not_found` for no
/// session, `lock_lost` when `lease` (if any) no longer holds it.
fn head(
    conn: &Connection,
    session_id: &str,
    lease: Option<&SessionLock>,
) -> Result<Head, AgentError> {
    let head = conn
        .prepare_cached(
            "SELECT s.rowid, s.head_seq, s.head_turn, s.control, s.key, EXISTS (SELECT 1 \
             FROM session_locks l WHERE l.session_id = s.id AND l.token = ? AND l.expires_ms > ?) \
             FROM sessions s WHERE s.id = ?",
        )
        .and_then(|mut s| {
            s.query_row(
                params![lease.map(|l| l.token.as_str()), now_ms(), session_id],
                |r| {
                    Ok(Head {
                        rowid: r.get(0)?,
                        seq: to_u64(r.get(1)?),
                        turn: r.get(2)?,
                        control: r.get(3)?,
                        key: r.get(4)?,
                        held: r.get(5)?,
                    })
                },
            )
            .optional()
        })
        .map_err(sql_error)?
        .ok_or_else(|| not_found(session_id))?;
    if lease.is_some() && !head.held {
        return Err(lock_lost(session_id));
    }
    Ok(head)
}

/// Check, number and insert `events`, projecting the turn tree and the
/// control record.
fn append_in(
    conn: &Connection,
    session_id: &str,
    lease: Option<&SessionLock>,
    events: Vec<NewEvent>,
    texts: Option<&[String]>,
) -> Result<Vec<StoredEvent>, AgentError> {
    let Head {
        rowid,
        seq: head_seq,
        turn: head_turn,
        control: control_text,
        key,
        held: _,
    } = head(conn, session_id, lease)?;
    let before: ControlRecord = serde_json::from_str(&control_text).unwrap_or_default();
    let control = before.clone();

    // Which session each referenced turn belongs to.
    let mut owners: HashMap<String, String> = HashMap::new();
    for turn in turn_refs(&events) {
        let owner: Option<String> = conn
            .prepare_cached("SELECT session_id FROM turns WHERE id = ?")
            .and_then(|mut s| s.query_row([turn], |r| r.get(0)).optional())
            .map_err(sql_error)?;
        if let Some(owner) = owner {
            owners.insert(turn.to_owned(), owner);
        }
    }
    check_append(session_id, &events, &|turn| owners.get(turn).cloned())?;

    let Numbered {
        stored,
        changes,
        head_turn,
        control,
    } = number(session_id, head_seq, head_turn, control, events, now_ms());
    insert_events(conn, key, &stored, texts)?;
    for change in changes {
        match change {
            TurnChange::Started(turn) => {
                conn.prepare_cached(
                    "INSERT INTO turns (id, session_id, parent, prompt, started_seq) VALUES (?, ?, ?, ?, ?)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        turn.id,
                        session_id,
                        turn.parent,
                        turn.prompt,
                        to_i64(turn.started_seq)
                    ])
                })
                .map_err(sql_error)?;
            }
            TurnChange::Finished { id, seq, outcome } => {
                conn.prepare_cached(
                    "UPDATE turns SET finished_seq = ?, outcome = ? WHERE id = ? AND session_id = ?",
                )
                .and_then(|mut s| s.execute(params![to_i64(seq), outcome.as_str(), id, session_id]))
                .map_err(sql_error)?;
            }
        }
    }
    let head = to_i64(head_seq + stored.len() as u64);
    // The control record is written only when it changed: most appends
    // leave it as it was.
    let updated = if control == before {
        conn.prepare_cached("UPDATE sessions SET head_seq = ?, head_turn = ? WHERE rowid = ?")
            .and_then(|mut s| s.execute(params![head, head_turn, rowid]))
    } else {
        let control = text(&control)?;
        conn.prepare_cached(
            "UPDATE sessions SET head_seq = ?, head_turn = ?, control = ? WHERE rowid = ?",
        )
        .and_then(|mut s| s.execute(params![head, head_turn, control, rowid]))
    };
    updated.map_err(sql_error)?;
    Ok(stored)
}

/// JSON text of a value rein wrote.
fn text(value: &impl serde::Serialize) -> Result<String, AgentError> {
    serde_json::to_string(value)
        .map_err(|err| AgentError::new(codes::INTERNAL, format!("cannot write JSON: {err}")))
}

/// Each event's data as the JSON text the log stores.
pub(super) fn encode(events: &[NewEvent]) -> Result<Vec<String>, AgentError> {
    events.iter().map(|e| text(&e.event.data())).collect()
}

/// Insert numbered events of the session whose key is `key`, at the end
/// of the shared log; their data as `texts` says when the caller encoded
/// it ([`encode`]).
fn insert_events(
    conn: &Connection,
    key: i64,
    stored: &[StoredEvent],
    texts: Option<&[String]>,
) -> Result<(), AgentError> {
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO log (session, seq, at_ms, agent_path, kind, version, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .map_err(sql_error)?;
    for (i, event) in stored.iter().enumerate() {
        let encoded;
        let data = match texts.and_then(|t| t.get(i)) {
            Some(text) => text.as_str(),
            None => {
                encoded = text(&event.event.data())?;
                encoded.as_str()
            }
        };
        insert
            .execute(params![
                key,
                to_i64(event.seq),
                event.at_ms,
                event.agent_path,
                event.event.kind(),
                i64::from(event.event.version()),
                data
            ])
            .map_err(sql_error)?;
    }
    Ok(())
}

/// Insert a session copied whole, with its projections (see
/// [`crate::Store::import`]).
fn import(
    conn: &Connection,
    info: &crate::store::SessionInfo,
    events: &[StoredEvent],
) -> Result<(), AgentError> {
    crate::validate::check_import(info, events)?;
    let (head_turn, turns, control) = crate::projection::replay(events);
    let exists: Option<i64> = conn
        .prepare_cached("SELECT 1 FROM sessions WHERE id = ?")
        .and_then(|mut s| s.query_row([&info.id], |r| r.get(0)).optional())
        .map_err(sql_error)?;
    if exists.is_some() {
        return Err(crate::validate::already_there(&info.id));
    }
    conn.prepare_cached(
        "INSERT INTO sessions (id, created_ms, metadata, head_seq, head_turn, control, key) \
         VALUES (?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(key), 0) + 1 FROM sessions))",
    )
    .map_err(sql_error)?
    .execute(params![
        info.id,
        info.created_ms,
        text(&info.metadata)?,
        to_i64(events.len() as u64),
        head_turn,
        text(&control)?
    ])
    .map_err(sql_error)?;
    let key: i64 = conn
        .prepare_cached("SELECT key FROM sessions WHERE id = ?")
        .and_then(|mut s| s.query_row([&info.id], |r| r.get(0)))
        .map_err(sql_error)?;
    insert_events(conn, key, events, None)?;
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO turns (id, session_id, parent, prompt, started_seq, finished_seq, outcome) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .map_err(sql_error)?;
    for turn in turns {
        insert
            .execute(params![
                turn.id,
                info.id,
                turn.parent,
                turn.prompt,
                to_i64(turn.started_seq),
                turn.finished_seq.map(to_i64),
                turn.outcome.map(|o| o.as_str())
            ])
            .map_err(sql_error)?;
    }
    Ok(())
}
