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
use rein_wire::AgentError;
use tokio::sync::{mpsc, oneshot};

use crate::child::Ended;
use crate::heard::Decided;
use crate::person::{Person, Question, Verdict};
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

/// Put `question`, recorded as `approval`, to `person`, and wait for a
/// person's decision in the session's inbox (see the module's docs).
/// Returns when one came, or a stop; the caller bounds the wait (the run's
/// limit, its stop) and closes the approval when it gives up. Words said
/// meanwhile are recorded and added to `words`, for the program to hear.
pub(crate) async fn decide(
    recorder: &mut Recorder,
    person: &Arc<dyn Person>,
    approval: &str,
    mut question: Question,
    words: &mut Vec<String>,
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
        let taken = crate::heard::take(recorder, Some(&approval)).await?;
        words.extend(taken.words);
        if let Some(decided) = taken.decided {
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

/// A run's bounds while it waits on a person: its limit and its stop.
pub(crate) type Bounds<'a> = (
    std::pin::Pin<&'a mut tokio::time::Sleep>,
    &'a tokio_util::sync::CancellationToken,
);

/// Have a program's question decided — recorded, put to `person`, taken
/// from the inbox — within the run's `bounds`: what the program is told,
/// and the run's end when its limit or a stop came first. Nobody to ask:
/// refused. Nowhere to record it: the person's own answer stands (no
/// other surface can reach the question). Words said meanwhile go to
/// `words`.
pub(crate) async fn answer(
    question: Question,
    person: Option<Arc<dyn Person>>,
    recorder: Option<&mut Recorder>,
    bounds: Bounds<'_>,
    words: &mut Vec<String>,
) -> Result<(Verdict, Option<Ended>), AgentError> {
    let Some(person) = person else {
        return Ok((Verdict::Deny, None));
    };
    let (decided, over) = match recorder {
        Some(r) => ask(r, &person, question, bounds, words).await?,
        None => unrecorded(&person, question, bounds).await,
    };
    Ok(match (decided, over) {
        (_, Some(over)) => (Verdict::Cancel, Some(over)),
        (Decided::Stopped, None) => (Verdict::Cancel, Some(Ended::Stopped)),
        (Decided::Allowed, None) => (Verdict::Allow, None),
        (Decided::Denied, None) => (Verdict::Deny, None),
    })
}

/// `question` put to `person` alone, within the run's bounds.
async fn unrecorded(
    person: &Arc<dyn Person>,
    question: Question,
    (deadline, stop): Bounds<'_>,
) -> (Decided, Option<Ended>) {
    tokio::select! {
        said = person.ask(question) => match said {
            Some(answer) if answer.allow => (Decided::Allowed, None),
            _ => (Decided::Denied, None),
        },
        () = deadline => (Decided::Denied, Some(Ended::Timeout)),
        () = stop.cancelled() => (Decided::Denied, Some(Ended::Stopped)),
    }
}

/// Record `question` and have it decided before the run's limit or its
/// stop; a question nobody decided in time is closed so (`expired`) and
/// refused, and the run ends as the limit or the stop says.
async fn ask(
    recorder: &mut Recorder,
    person: &Arc<dyn Person>,
    question: Question,
    (deadline, stop): Bounds<'_>,
    words: &mut Vec<String>,
) -> Result<(Decided, Option<Ended>), AgentError> {
    let approval = recorder.approval_requested(&question).await?;
    let (decided, ended) = tokio::select! {
        decided = decide(recorder, person, &approval, question, words) => (Some(decided?), None),
        () = deadline => (None, Some(Ended::Timeout)),
        () = stop.cancelled() => (None, Some(Ended::Stopped)),
    };
    match decided {
        Some(decided) => Ok((decided, ended)),
        None => {
            recorder.approval_expired(&approval).await?;
            Ok((Decided::Denied, ended))
        }
    }
}
