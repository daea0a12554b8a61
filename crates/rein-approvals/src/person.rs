//! A person's input from any surface: decide a pending approval, say
//! something to the running turn, stop it — whether or not this surface
//! drives the conversation.
//!
//! When nobody holds the session's lease the input is recorded in the log
//! at once (the driver-to-be reads it on resume). When a driver holds it —
//! a chat waiting at its prompt in another terminal, a server's running
//! turn — the input goes to the session's inbox, and the driver records it
//! at its next wait point or step boundary. Either way only a [`Surface`]
//! can send it, an approval is decided once (`conflict` for a second
//! decision), and an unknown approval is `invalid_input`.
//!
//! Not here: what the driver does with it (`rein-runner`).

use std::time::Duration;

use rein_sessions::{ControlRecord, Event, InboxItem, NewEvent, Store};
use rein_wire::{AgentError, error::codes};

use crate::{Answer, Surface};

/// The most bytes one steer carries.
pub const MAX_SAID_BYTES: usize = 64 * 1024;

/// The most items a session's inbox holds untaken, and the most bytes of
/// words among them.
pub const MAX_QUEUED: usize = 64;

/// See [`MAX_QUEUED`].
pub const MAX_QUEUED_BYTES: usize = 256 * 1024;

/// Where a person's input went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Recorded in the log now (nobody was driving the session).
    Recorded,
    /// Queued in the inbox for the driver, which records it at its next
    /// wait point or step boundary.
    Queued,
}

/// Decide a pending approval of `session` — or of one of its sub-agents'
/// sessions — from a person's `surface`. Errors: `invalid_input` for an approval the session never asked for,
/// `conflict` for one already decided (here or from another surface).
pub async fn decide(
    store: &dyn Store,
    session: &str,
    approval_id: &str,
    answer: Answer,
    surface: &Surface,
) -> Result<Delivery, AgentError> {
    let control = store.control(session).await?;
    if !control.pending.iter().any(|p| p.approval_id == approval_id) {
        // A sub-agent's approval is decided from its parent as well.
        return match crate::family::holder(store, session, approval_id).await? {
            Some(child) if child != session => {
                Box::pin(decide(store, &child, approval_id, answer, surface)).await
            }
            _ => Err(not_pending_in_family(store, session, approval_id).await),
        };
    }
    let (decision, lease) = answer.stored();
    let queued = store.inbox(session).await?;
    let opened = rein_sessions::open_turn_started(store, session).await?;
    if let Some(stop) = queued.iter().find(|e| e.stops_turn_opened_at(opened)) {
        // A stop wins over any decision queued after it.
        let by = match &stop.item {
            InboxItem::Stop { by } => by.as_str(),
            _ => "a person",
        };
        return Err(AgentError::new(
            codes::CONFLICT,
            format!(
                "the turn is being stopped (asked by {by}): approval `{approval_id}` is refused with it"
            ),
        ));
    }
    if queued
        .iter()
        .any(|e| e.item.approval_id() == Some(approval_id))
    {
        return Err(AgentError::new(
            codes::CONFLICT,
            format!("approval `{approval_id}` was already decided"),
        ));
    }
    let held = match store
        .acquire(session, surface.name(), Duration::from_secs(30))
        .await
    {
        Ok(lease) => lease,
        Err(err) if err.code == codes::SESSION_LOCKED => {
            store
                .post(
                    session,
                    InboxItem::Decision {
                        approval_id: approval_id.to_owned(),
                        decision,
                        lease,
                        by: surface.name().to_owned(),
                    },
                )
                .await?;
            return Ok(Delivery::Queued);
        }
        Err(err) => return Err(err),
    };
    let result = async {
        // Checked again under the lease: someone may have decided since.
        let control = store.control(session).await?;
        let Some(event) = decided(&control, approval_id, answer, surface) else {
            return Err(not_pending(store, session, approval_id).await);
        };
        store
            .append(&held, vec![NewEvent::main(event)])
            .await
            .map(|_| Delivery::Recorded)
    }
    .await;
    store.release(&held).await?;
    result
}

/// The record of a person's `answer` to `approval_id`, given at `surface`,
/// while `control` still has it pending (`None` otherwise): the one rule
/// both ways of deciding share — [`decide`] from any surface, and a
/// conversation deciding in its own process (`Conversation::decide`).
pub fn decided(
    control: &ControlRecord,
    approval_id: &str,
    answer: Answer,
    surface: &Surface,
) -> Option<Event> {
    if !control.pending.iter().any(|p| p.approval_id == approval_id) {
        return None;
    }
    let (decision, lease) = answer.stored();
    Some(Event::ApprovalDecided {
        approval_id: approval_id.to_owned(),
        decision,
        by: surface.name().to_owned(),
        lease,
    })
}

/// Say `text` to the session's running turn (a steer), from `surface`.
/// It is queued for the driver; with no turn running it is heard at the
/// next turn's first step.
pub async fn say(
    store: &dyn Store,
    session: &str,
    text: &str,
    surface: &Surface,
) -> Result<Delivery, AgentError> {
    if text.trim().is_empty() {
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            "there is nothing to say",
        ));
    }
    if text.len() > MAX_SAID_BYTES {
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            format!(
                "{} bytes is more than one steer takes ({MAX_SAID_BYTES})",
                text.len()
            ),
        ));
    }
    // What waits for the turn is bounded: words pile up only as fast as
    // the turn takes them.
    let queued = store.inbox(session).await?;
    let waiting: usize = queued
        .iter()
        .map(|e| match &e.item {
            InboxItem::Say { text, .. } => text.len(),
            _ => 0,
        })
        .sum();
    if queued.len() >= MAX_QUEUED || waiting + text.len() > MAX_QUEUED_BYTES {
        return Err(AgentError::new(
            codes::INBOX_FULL,
            format!(
                "session {session} has {} items ({waiting} bytes) waiting for its turn already",
                queued.len()
            ),
        ));
    }
    store
        .post(
            session,
            InboxItem::Say {
                text: text.to_owned(),
                by: surface.name().to_owned(),
            },
        )
        .await?;
    Ok(Delivery::Queued)
}

/// Stop the session's open turn from `surface`: its pending approvals are
/// decided `stopped`, an open model stream is cut, and the turn ends
/// `interrupted`, by the driver. With no turn open it is `no_open_turn`
/// and nothing is kept: a stop never ends a turn begun after it.
pub async fn stop(
    store: &dyn Store,
    session: &str,
    surface: &Surface,
) -> Result<Delivery, AgentError> {
    if rein_sessions::open_turn_started(store, session)
        .await?
        .is_none()
    {
        return Err(AgentError::new(
            codes::NO_OPEN_TURN,
            format!("session {session} has no open turn: there is nothing to stop"),
        ));
    }
    store
        .post(
            session,
            InboxItem::Stop {
                by: surface.name().to_owned(),
            },
        )
        .await?;
    Ok(Delivery::Queued)
}

/// [`not_pending`] for `session` and its sub-agents: `conflict` when any
/// of them decided it already.
async fn not_pending_in_family(store: &dyn Store, session: &str, approval_id: &str) -> AgentError {
    if let Ok(family) = crate::family::family(store, session).await {
        for (member, _) in family.iter().skip(1) {
            let err = not_pending(store, member, approval_id).await;
            if err.code == codes::CONFLICT {
                return err;
            }
        }
    }
    not_pending(store, session, approval_id).await
}

/// Why `approval_id` cannot be decided: it was decided already
/// (`conflict`), or the session never asked for it (`invalid_input`).
async fn not_pending(store: &dyn Store, session: &str, approval_id: &str) -> AgentError {
    let mut from = 1;
    loop {
        let Ok(page) = store.read(session, from, 10_000).await else {
            break;
        };
        if page.is_empty() {
            break;
        }
        from += page.len() as u64;
        if page.iter().any(|e| {
            matches!(&e.event, Event::ApprovalDecided { approval_id: a, .. } if a == approval_id)
        }) {
            return AgentError::new(
                codes::CONFLICT,
                format!("approval `{approval_id}` was already decided in session {session}"),
            );
        }
    }
    AgentError::new(
        codes::INVALID_INPUT,
        format!("approval `{approval_id}` is not pending in session {session}"),
    )
}
