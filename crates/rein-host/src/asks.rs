//! A hosted program's permission questions as rein approvals. The program
//! asks through its own channel (Claude Code: the MCP tool of
//! `claude::permission`); each question arrives here as an [`Asked`]. It
//! is recorded (`approval.requested`, pending in the session's control
//! record) before anyone is asked, put to the run's [`Person`] — whose
//! answer is posted to the session's inbox like any surface's — and
//! decided by whichever person's surface answers first: that person, `rein
//! approve`, the page, or a parent conversation's person. The decision is
//! taken from the inbox into the log (`approval.decided`) and only then
//! goes back to the program. A stop posted meanwhile wins over every
//! decision queued after it; with nobody deciding before the run's limit
//! or its stop, the call is refused.
//!
//! Not here: what the program's channel looks like (`claude::permission`),
//! the terminal's prompt (the CLI's `Person`).

use std::sync::Arc;

use rein_approvals::{Answer as Decision, LeaseScope};
use rein_sessions::{Event, InboxItem};
use rein_wire::AgentError;
use tokio::sync::{mpsc, oneshot};

use crate::acp::{Person, Question};
use crate::record::Recorder;

/// The questions one run may have waiting at once; a program asks one at
/// a time, so more is a misbehaving channel.
pub const MAX_WAITING: usize = 16;

/// One permission question from a hosted program.
#[derive(Debug)]
pub struct Asked {
    /// What it asks about: its tool, the call's id, the one detail shown.
    pub question: Question,
    /// Where its answer goes: `true` to run the call.
    pub reply: oneshot::Sender<bool>,
}

/// The questions of one run, and the person they are put to.
pub struct Asks {
    /// The questions, as the program's channel receives them.
    pub questions: mpsc::Receiver<Asked>,
    /// The person at the run's own surface (the terminal that started it).
    pub person: Arc<dyn Person>,
}

impl Asks {
    /// A channel for questions and the person they go to: the sender is
    /// the program's channel's.
    pub fn new(person: Arc<dyn Person>) -> (mpsc::Sender<Asked>, Asks) {
        let (sender, questions) = mpsc::channel(MAX_WAITING);
        (sender, Asks { questions, person })
    }
}

/// How a question ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// A person said yes (once).
    Allowed,
    /// A person said no.
    Denied,
    /// A stop was posted: the run ends.
    Stopped,
}

/// Put `question`, recorded as `approval`, to `person`, and wait for a
/// person's decision in the session's inbox (see the module's docs).
/// Returns when one came, or a stop; the caller bounds the wait (the run's
/// limit, its stop) and closes the approval when it gives up.
pub(crate) async fn decide(
    recorder: &mut Recorder,
    person: &Arc<dyn Person>,
    approval: &str,
    mut question: Question,
) -> Result<Decided, AgentError> {
    let approval = approval.to_owned();
    question.approval_id.clone_from(&approval);
    let store = recorder.store();
    let session = recorder.session().to_owned();
    let mut posted = store.posted(&session);
    let asking = {
        let (person, store, session, approval) = (
            person.clone(),
            store.clone(),
            session.clone(),
            approval.clone(),
        );
        async move {
            if let Some(answer) = person.ask(question).await {
                let decision = if answer.allow {
                    Decision::Approve(LeaseScope::Once)
                } else {
                    Decision::Deny
                };
                // Decided elsewhere first: that decision stands.
                let _ = rein_approvals::decide(
                    store.as_ref(),
                    &session,
                    &approval,
                    decision,
                    &answer.surface,
                )
                .await;
            }
            // The inbox says what was decided, whoever decided it.
            std::future::pending::<()>().await;
        }
    };
    tokio::pin!(asking);
    loop {
        if let Some(decided) = take(recorder, &approval).await? {
            return Ok(decided);
        }
        tokio::select! {
            () = &mut asking => {}
            () = posted.wait() => {}
            // A decision from another process: the runner's one interval.
            () = tokio::time::sleep(rein_runner::INBOX_POLL) => {}
        }
    }
}

/// Take the session's inbox into the log: the decision for `approval`
/// (others' are passed over: a run asks one question at a time), a stop,
/// words (recorded as said; a program asked with `-p` cannot hear them
/// mid-run). `None` while nothing decides the question.
async fn take(recorder: &mut Recorder, approval: &str) -> Result<Option<Decided>, AgentError> {
    let store = recorder.store();
    let entries = store.inbox(recorder.session()).await?;
    let Some(upto) = entries.last().map(|e| e.id) else {
        return Ok(None);
    };
    let mut decided = None;
    let mut events = Vec::new();
    for entry in entries {
        match entry.item {
            // A stop wins over any decision queued after it, and closes
            // the question.
            InboxItem::Stop { by } if decided.is_none() => {
                events.push(Event::ApprovalDecided {
                    approval_id: approval.to_owned(),
                    decision: rein_approvals::Decision::Stopped,
                    by: by.clone(),
                    lease: None,
                });
                events.push(Event::Stopped { by });
                decided = Some(Decided::Stopped);
            }
            InboxItem::Decision {
                approval_id,
                decision,
                lease,
                by,
            } if approval_id == approval && decided.is_none() => {
                decided = Some(if decision == rein_approvals::Decision::Approved {
                    Decided::Allowed
                } else {
                    Decided::Denied
                });
                events.push(Event::ApprovalDecided {
                    approval_id,
                    decision,
                    by,
                    lease,
                });
            }
            InboxItem::Say { text, .. } => events.push(Event::SteerSaid { text }),
            InboxItem::Stop { .. } | InboxItem::Decision { .. } => {}
        }
    }
    recorder.take_inbox(upto, events).await?;
    Ok(decided)
}
