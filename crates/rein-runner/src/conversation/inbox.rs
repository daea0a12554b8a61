//! The inbox: what reaches a running conversation from outside its step
//! loop — words and an interrupt from this process ([`Steering`]), and
//! decisions, words and stops other surfaces put in the session's inbox
//! in the store. [`Inbox`] owns both and when the store's was last looked
//! at. A loop waiting on something else (an open stream, a batch of
//! sub-agents, a decision) wakes for this process's words, an interrupt,
//! or a post to the store's inbox ([`Posted`]). The store's inbox is read
//! only when something was posted: every store of `rein-sessions` tells of
//! a post from any process, so ten thousand waiting conversations cost no
//! reads. On a store that cannot tell, the inbox is looked at every
//! [`INBOX_POLL`] as well — the one fallback interval.
//!
//! Not here: acting on a stop (the conversation's `stop_by`), posting
//! from another process (`rein_approvals::decide`, `say`, `stop`).

use std::time::{Duration, Instant};

use rein_sessions::{InboxItem, Posted, TakenDecision};
use rein_wire::AgentError;

use super::journal::Journal;
use crate::steering::Steering;
use rein_wire::UiKind;

/// How often anything waiting on the inbox of a store that cannot tell of
/// posts from another process looks again (the step loop between steps, an
/// open model stream, a batch of sub-agents, a wait for a decision): a
/// store query per step would cost a durable step more than the rest of
/// its bookkeeping, and words from another process need not be heard
/// sooner than this.
pub const INBOX_POLL: Duration = Duration::from_millis(200);

/// What the session's inbox brought.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Heard {
    /// Approvals decided elsewhere.
    pub decided: Vec<TakenDecision>,
    /// Words said to the turn elsewhere (recorded as `steer.said`).
    pub said: usize,
    /// A stop asked for elsewhere, by whom. Already acted on: the turn is
    /// stopped ([`crate::Conversation::stop_by`]) and ended `interrupted`.
    pub stop: Option<String>,
}

impl Heard {
    /// Whether nothing came.
    pub fn is_empty(&self) -> bool {
        self.decided.is_empty() && self.said == 0 && self.stop.is_none()
    }
}

/// What reaches the loop from outside it: this process's steering and the
/// store's inbox.
pub(crate) struct Inbox {
    /// Words and an interrupt from this process.
    steering: Steering,
    /// Told of posts to the store's inbox from this process.
    posted: Posted,
    /// When the store's inbox was last taken.
    taken: Option<Instant>,
}

impl Inbox {
    /// This process's steering: words and an interrupt.
    pub(crate) fn steering(&self) -> &Steering {
        &self.steering
    }

    /// The inbox of a conversation told of posts by `posted`.
    pub(crate) fn new(posted: Posted) -> Self {
        Inbox {
            steering: Steering::default(),
            posted,
            taken: None,
        }
    }

    /// Whether the store must be looked at every [`INBOX_POLL`] for posts
    /// it cannot tell of.
    pub(crate) fn polls(&self) -> bool {
        !self.posted.hears_every_post()
    }

    /// Whether the step loop should look at the store's inbox now: after
    /// a post, the first time, and on a store that cannot tell of posts
    /// every [`INBOX_POLL`] (wait points and `resume` always look).
    pub(crate) fn due(&mut self) -> bool {
        let fresh = self.posted.fresh();
        fresh
            || match self.taken {
                None => true,
                Some(at) => self.polls() && at.elapsed() >= INBOX_POLL,
            }
    }

    /// Until something may have reached the loop: words or an interrupt
    /// from this process, a post to the store's inbox, or — on a store
    /// that cannot tell of posts — [`INBOX_POLL`] past `looked` (when the
    /// store was last looked at). The caller looks at what came; a post
    /// heard here is taken at the next step boundary. Cancel-safe.
    pub(crate) async fn stirred(&mut self, looked: Instant) {
        let polls = self.polls();
        tokio::select! {
            () = self.nudged() => {}
            () = tokio::time::sleep_until((looked + INBOX_POLL).into()), if polls => {}
        }
    }

    /// Until this process's words or interrupt, or a post to the store's
    /// inbox; the caller keeps its own fallback timer where [`Inbox::polls`]
    /// (a loop polled often, as an open stream is, keeps one timer rather
    /// than a new one per wake). Cancel-safe.
    pub(crate) async fn nudged(&mut self) {
        tokio::select! {
            () = self.steering.woken() => {}
            () = self.posted.wait() => self.taken = None,
        }
    }

    /// Look at the store's inbox at the next step boundary, whenever it
    /// was last looked at (a stream or a batch was cut short).
    pub(crate) fn look_next(&mut self) {
        self.taken = None;
    }

    /// Take the store's inbox into the log: a decision for an approval
    /// still pending becomes `approval.decided` (one decided meanwhile is
    /// passed over), words become `steer.said`, all in one transaction with
    /// marking them taken. A stop wins over every decision queued after it
    /// (those are not recorded); a stop posted before the open turn began
    /// is passed over. The caller acts on [`Heard::stop`].
    pub(crate) async fn take(&mut self, journal: &mut Journal) -> Result<Heard, AgentError> {
        self.taken = Some(Instant::now());
        let entries = journal.store().inbox(journal.session_id()).await?;
        let Some(upto) = entries.last().map(|e| e.id) else {
            return Ok(Heard::default());
        };
        let control = journal.control().await?;
        let opened = if entries
            .iter()
            .any(|e| matches!(e.item, InboxItem::Stop { .. }))
        {
            journal.log().await?.open_turn_started()
        } else {
            None
        };
        let folded = rein_sessions::fold(entries, &control, opened);
        let heard = Heard {
            decided: folded.decided,
            said: folded.said.len(),
            stop: folded.stop,
        };
        let events = folded.events;
        journal.append_taking(events, Some(upto)).await?;
        for taken in &heard.decided {
            journal.emit(UiKind::ApprovalDecided {
                approval_id: taken.approval_id.clone(),
                decision: taken.decision,
            });
        }
        Ok(heard)
    }
}
