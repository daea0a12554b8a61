//! Checks and helpers every store shares: what an append may contain, and
//! the lease errors.

use std::time::Duration;

use rein_wire::{AgentError, error::codes};

use crate::event::{Event, NewEvent};
use crate::store::SessionLock;

pub(crate) use rein_wire::clock::now_ms;

pub(crate) fn ttl_ms(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis())
        .unwrap_or(i64::MAX / 2)
        .max(1)
}

pub(crate) fn new_lease(session: &str, holder: &str, ttl: Duration, now: i64) -> SessionLock {
    SessionLock {
        session_id: session.to_owned(),
        holder: holder.to_owned(),
        token: rein_wire::ids::new_id(),
        acquired_ms: now,
        expires_ms: now.saturating_add(ttl_ms(ttl)),
        process: crate::ProcessMark::current(),
    }
}

/// Whether `current` may be taken over at `now`: it has expired, or the
/// process holding it is provably dead on this host.
pub(crate) fn may_take_over(current: &SessionLock, now: i64) -> bool {
    current.expires_ms <= now
        || current
            .process
            .as_ref()
            .is_some_and(crate::ProcessMark::provably_dead)
}

pub(crate) fn locked(current: &SessionLock) -> AgentError {
    AgentError::new(
        codes::SESSION_LOCKED,
        format!(
            "session {} is locked by `{}` since {}; the lease expires at {} (in {}) unless its holder renews it",
            current.session_id,
            current.holder,
            local_time(current.acquired_ms),
            local_time(current.expires_ms),
            until(current.expires_ms, now_ms()),
        ),
    )
    .with_field("holder", current.holder.clone())
    .with_field("since_ms", current.acquired_ms)
    .with_field("expires_ms", current.expires_ms)
}

/// A second decision for an approval that already has one.
pub(crate) fn already_decided(approval: &str) -> AgentError {
    AgentError::new(
        codes::CONFLICT,
        format!("approval `{approval}` was already decided"),
    )
    .with_field("approval_id", approval)
}

pub(crate) fn lock_lost(session: &str) -> AgentError {
    AgentError::new(
        codes::LOCK_LOST,
        format!(
            "this writer no longer holds session {session}: its lease expired or was taken over"
        ),
    )
}

/// Seconds since the epoch with milliseconds, for messages.
/// A moment as a person reads it: local date and time with the zone.
fn local_time(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(at) => at
            .to_zoned(jiff::tz::TimeZone::system())
            .strftime("%Y-%m-%d %H:%M:%S %Z")
            .to_string(),
        Err(_) => format!("{ms} ms after the epoch"),
    }
}

/// How long from `now` until `then`, in whole seconds (`0s` when past).
fn until(then: i64, now: i64) -> String {
    let secs = then.saturating_sub(now).max(0) / 1000;
    match (secs / 3600, secs / 60 % 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s}s"),
        (h, m, _) => format!("{h}h {m}m"),
    }
}

/// Check an append before it is written: the session's own events only
/// (`session.created` is written by the store), and turns that belong to
/// this session. `owner` says which session a turn belongs to.
pub(crate) fn check_append(
    session: &str,
    events: &[NewEvent],
    owner: &dyn Fn(&str) -> Option<String>,
) -> Result<(), AgentError> {
    let mut new_turns: Vec<&str> = Vec::new();
    for new in events {
        if new.agent_path.is_empty() || new.agent_path.len() > 1024 {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "an event's agent path must be 1 to 1024 characters",
            ));
        }
        let turn_ref = match &new.event {
            Event::TurnStarted {
                turn_id, parent, ..
            } => {
                if owner(turn_id).is_some() || new_turns.contains(&turn_id.as_str()) {
                    return Err(AgentError::new(
                        codes::INVALID_INPUT,
                        format!("turn `{turn_id}` already exists"),
                    ));
                }
                new_turns.push(turn_id);
                parent.as_deref()
            }
            Event::BranchCreated { from_turn } => from_turn.as_deref(),
            _ => None,
        };
        if let Some(turn) = turn_ref
            && !new_turns.contains(&turn)
        {
            match owner(turn) {
                Some(s) if s == session => {}
                Some(_) => {
                    return Err(AgentError::new(
                        codes::TURN_NOT_IN_SESSION,
                        format!("turn `{turn}` belongs to another session"),
                    ));
                }
                None => {
                    return Err(AgentError::new(
                        codes::TURN_NOT_FOUND,
                        format!("no turn has the id `{turn}`"),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A session copied whole from another store must be one: its log opens
/// with `session.created`, is numbered 1, 2, 3, … without gaps, and every
/// event is this session's.
pub(crate) fn check_import(
    info: &crate::store::SessionInfo,
    events: &[crate::event::StoredEvent],
) -> Result<(), AgentError> {
    let bad = |why: String| {
        AgentError::new(
            codes::INVALID_INPUT,
            format!("session {} cannot be copied: {why}", info.id),
        )
    };
    match events.first() {
        Some(first) if matches!(first.event, Event::SessionCreated { .. }) => {}
        _ => return Err(bad("its log does not open with session.created".into())),
    }
    for (i, event) in events.iter().enumerate() {
        if event.seq != i as u64 + 1 {
            return Err(bad(format!("event {} is numbered {}", i + 1, event.seq)));
        }
        if event.session_id != info.id {
            return Err(bad(format!(
                "event {} is of session {}",
                event.seq, event.session_id
            )));
        }
    }
    Ok(())
}

/// The session is in the store already.
pub(crate) fn already_there(session: &str) -> AgentError {
    AgentError::new(
        codes::CONFLICT,
        format!("session {session} is in the store already; it was not copied again"),
    )
    .with_field("session_id", session)
}
