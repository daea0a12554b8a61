//! The simulated person: a case's scripted answers to approvals, given in
//! the order they are asked — to the conversation's own approvals, to its
//! sub-agents' (heard on the parent's watchers), and to graph tasks' —
//! always through a person's `Surface` (`simulated_person`), never by the
//! runner.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rein_approvals::{Answer, Surface};
use rein_runner::{Conversation, UiEvent, UiKind};
use rein_sessions::Store;

/// The case's scripted answers to approvals, in the order they are asked.
pub(crate) type Answers = Arc<Mutex<VecDeque<String>>>;

/// Decide `approval_id` in `session` with the script's next answer (no,
/// when it has none left), as a simulated person on any surface would.
pub(crate) async fn decide_scripted(
    store: &dyn Store,
    answers: &Answers,
    session: &str,
    approval_id: &str,
) {
    let said = answers
        .lock()
        .ok()
        .and_then(|mut a| a.pop_front())
        .unwrap_or_else(|| "no".to_owned());
    let decided = rein_approvals::decide(
        store,
        session,
        approval_id,
        answer_of(&said),
        &Surface::simulated_person(),
    )
    .await;
    if let Err(err) = decided {
        tracing::warn!(code = %err.code, "a scripted approval was not decided");
    }
}

/// The answer a scripted word stands for.
pub(crate) fn answer_of(said: &str) -> Answer {
    Answer::typed(said)
}

/// Answer sub-agents' approvals from the script as a person at the
/// parent's surface would: each `agent_awaiting` the parent's watchers see
/// is decided in the sub-agent's session through the inbox. With no
/// scripted answer left the person says no (a case that forgets one does
/// not hang).
pub(crate) fn answer_children(
    conv: &Conversation,
    answers: Answers,
) -> tokio::task::JoinHandle<()> {
    let mut ui = conv.subscribe();
    let store = conv.store();
    tokio::spawn(async move {
        loop {
            match ui.recv().await {
                Ok(UiEvent {
                    kind: UiKind::AgentAwaiting { session, request },
                    ..
                }) => {
                    decide_scripted(store.as_ref(), &answers, &session, &request.approval_id).await;
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
    })
}
