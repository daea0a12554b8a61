//! The read-before-write rule: a call that changes something that exists
//! runs only on the revision this conversation has seen, and a call a
//! person approved only on the revision they were shown.
//!
//! What was seen is read from the log (each `tool.result` names the
//! resource and revision its call read or left), so the rule holds after a
//! restart and on a branch exactly as before; what this message's own
//! earlier calls left is seen too (two edits of one file in one message).
//! Imported history is evidence, not sight: reads there do not count.
//! The rule is checked just before the call runs (and before anyone is
//! asked); a change made in the instant between that check and the tool's
//! own write is not caught here — the file tools' writes are atomic, so
//! such a race leaves one whole file, never a mixed one.
//!
//! Not here: how a tool names a resource or computes its revision (the
//! backend's `changes` and each outcome's `seen`), or what happens to a
//! refused call (`calls`).

use std::collections::HashSet;

use rein_sessions::{Event, StoredEvent};
use rein_wire::error::codes;
use rein_wire::{AgentError, Revision};

/// What the person's approval of a call was bound to: `None` when the call
/// was not approved by a person (not asked, or covered by a lease).
pub(super) type Approved<'a> = Option<Option<&'a Revision>>;

/// Why a call changing `now` must not run, or `None` when it may: the
/// person approved another revision than there is now; it exists and was
/// never seen; or it was seen at another revision. `seen` is the revision
/// of it the conversation last saw (`last_seen`); `left` holds what this
/// message's own earlier calls left.
pub(super) fn stale(
    seen: Option<&Option<String>>,
    left: &HashSet<Revision>,
    now: &Revision,
    approved: Approved<'_>,
) -> Option<AgentError> {
    let resource = &now.resource;
    if let Some(Some(shown)) = approved {
        if shown.token == now.token {
            return None;
        }
        return Some(AgentError::new(
            codes::CHANGED_SINCE_APPROVAL,
            format!(
                "`{resource}` changed after the person approved this change, so it was not made: what they approved no longer describes it. Read it again and propose the change anew."
            ),
        ));
    }
    if !now.exists() || left.contains(now) {
        return None;
    }
    match seen {
        Some(token) if token.as_ref() == now.token.as_ref() => None,
        Some(_) => Some(AgentError::new(
            codes::CHANGED_SINCE_READ,
            format!(
                "`{resource}` has changed since this conversation last read it, so nothing was changed: read it again, then make the change from what it holds now."
            ),
        )),
        None => Some(AgentError::new(
            codes::NOT_READ,
            format!(
                "`{resource}` exists and this conversation has not read it, so nothing was changed: read it first, then make the change from what it holds (prefer an edit of the part to change over rewriting the whole file)."
            ),
        )),
    }
}

/// The revision of `resource` the conversation last read or left, live
/// history only: `Some(None)` when it saw it absent (a delete). The rule
/// over the whole log; a step asks `Log::last_seen`, kept as events come.
pub(super) fn last_seen<'a>(
    events: &'a [StoredEvent],
    evidence_through: u64,
    resource: &str,
) -> Option<&'a Option<String>> {
    events
        .iter()
        .rev()
        .take_while(|e| e.seq > evidence_through)
        .find_map(|e| match &e.event {
            Event::ToolResult {
                seen: Some(seen), ..
            } if seen.resource == resource => Some(&seen.token),
            _ => None,
        })
}

/// What the approval `approval_id` was bound to when it was asked.
pub(super) fn bound_to<'a>(events: &'a [StoredEvent], approval_id: &str) -> Option<&'a Revision> {
    events.iter().rev().find_map(|e| match &e.event {
        Event::ApprovalRequested {
            approval_id: a,
            bound_to,
            ..
        } if a == approval_id => bound_to.as_ref(),
        _ => None,
    })
}
