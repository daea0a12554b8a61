//! A fork: a new session whose history is a session's up to the end of a
//! finished turn, with its metadata and `forked_from` naming where it came
//! from — to try another way from that point without touching the first.
//!
//! The copy is history, so it is evidence, never authority, as an import
//! is: its ids are new, no "always" it holds is acted on, a run it left
//! open is accepted by a person first and its approvals are asked again
//! (`rein_sessions::recovery::imported_through`).
//!
//! Not here: a branch inside one session (`branch.created`, the runner's).

use rein_sessions::{Event, Store, read_all};
use rein_wire::{AgentError, error::codes};
use serde_json::{Map, json};

/// What a fork made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forked {
    /// The new session.
    pub session: String,
    /// The turn its history ends with (`None`: the session had none).
    pub turn: Option<String>,
    /// Events copied.
    pub events: u64,
}

/// Fork `session` after `turn` (`None`: its last finished turn; what an
/// unfinished turn after it recorded is left out).
pub async fn fork(
    store: &dyn Store,
    session: &str,
    turn: Option<&str>,
) -> Result<Forked, AgentError> {
    let events = read_all(store, session).await?;
    if events.is_empty() {
        return Err(AgentError::new(
            codes::SESSION_NOT_FOUND,
            format!("no session has the id `{session}`"),
        ));
    }
    let finished = |id: &str| {
        events
            .iter()
            .position(|e| ended(&e.event).is_some_and(|turn| turn == id))
    };
    let (turn, end) = match turn {
        Some(id) => {
            let started = events
                .iter()
                .any(|e| matches!(&e.event, Event::TurnStarted { turn_id, .. } if turn_id == id));
            if !started {
                return Err(AgentError::new(
                    codes::TURN_NOT_FOUND,
                    format!("session {session} has no turn `{id}`"),
                ));
            }
            let end = finished(id).ok_or_else(|| {
                AgentError::new(
                    codes::INVALID_INPUT,
                    format!("turn `{id}` has not finished: fork at a turn that has"),
                )
            })?;
            (Some(id.to_owned()), end)
        }
        None => last_finished(&events),
    };
    // What follows the turn's end up to the next turn belongs to that
    // point (the run's end, a compaction); the next turn does not.
    let cut = events[end..]
        .iter()
        .position(|e| {
            matches!(
                e.event,
                Event::TurnStarted { .. } | Event::BranchCreated { .. }
            )
        })
        .map_or(events.len(), |at| end + at);
    let text = crate::golden::export(&events[..cut])?;
    let origin = json!({"session": session, "turn": turn});
    let more = Map::from_iter([("forked_from".to_owned(), origin.clone())]);
    let new = crate::golden::import_from(store, &text, json!({"fork": origin}), more).await?;
    Ok(Forked {
        session: new,
        turn,
        events: cut as u64,
    })
}

/// The last finished turn and where its `turn.finished` stands; with none,
/// the session's first event.
fn last_finished(events: &[rein_sessions::StoredEvent]) -> (Option<String>, usize) {
    events
        .iter()
        .enumerate()
        .rev()
        .find_map(|(at, e)| ended(&e.event).map(|turn| (Some(turn.to_owned()), at)))
        .unwrap_or((None, 0))
}

/// The turn an event ends, if it ends one (a turn paused for a person has
/// not ended).
fn ended(event: &Event) -> Option<&str> {
    match event {
        Event::TurnFinished {
            turn_id, outcome, ..
        } if *outcome != rein_wire::Ending::AwaitingApproval => Some(turn_id),
        _ => None,
    }
}
