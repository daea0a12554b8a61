//! [`KeptLog`]: what a closed conversation keeps for the next open of
//! the same session in this process — the log it read (checked against
//! the store at the open) and the transcript made from it — so a turn
//! posted to a server starts from there instead of reading and projecting
//! the whole history again.
//!
//! Not here: the check and the reading (`journal`), the transcript
//! (`window`).

use super::journal::KeptEvents;
use super::window::Carried;

/// What a closed conversation had read of its log and made of it, for the
/// next open of the same session in this process
/// ([`crate::Conversation::close_keeping`], [`crate::Agent::reopen_kept`]):
/// only what came after it is read from the store. A log only grows, so it
/// is the start of the log still; the open checks its last event against
/// the store and reads the whole log (and projects it anew) when they
/// differ.
#[derive(Debug, Clone)]
pub struct KeptLog {
    pub(super) events: KeptEvents,
    /// The transcript made from `events`, when a request was made.
    pub(super) transcript: Option<Carried>,
}

impl KeptLog {
    /// The session it is the log of.
    pub fn session(&self) -> &str {
        self.events.session()
    }

    /// How many events it holds.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
