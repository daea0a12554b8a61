//! A session and its sub-agents' sessions, as a person's surface sees
//! them: the approvals waiting in any of them, each with the agent path
//! that asked, and which session holds a given approval — so a person
//! decides a sub-agent's write from the parent (`rein approve PARENT …`).
//!
//! A sub-agent's session is named in its parent's `agent.started`; the
//! walk follows those links breadth first, bounded (a log is never trusted
//! to be small or acyclic).
//!
//! Not here: deciding (`person`), what a sub-agent is (`rein-runner`).

use rein_sessions::{Event, LogCache, Store};
use rein_wire::AgentError;
use rein_wire::permission::PermissionClass;

/// The most sessions a walk visits.
const MAX_SESSIONS: usize = 256;

/// An approval waiting for a person somewhere in a session's family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The session holding it (the parent's, or a sub-agent's).
    pub session: String,
    /// Which agent asked (`main`, `main/agent-2`, …).
    pub agent_path: String,
    /// The approval.
    pub approval_id: String,
    /// The tool.
    pub tool: String,
    /// Its permission class.
    pub permission: PermissionClass,
    /// The call's arguments as asked (a person sees them before deciding).
    pub arguments: serde_json::Value,
    /// What the person is shown of the change, when the tool made a preview.
    pub preview: Option<rein_wire::Preview>,
}

/// One session of a family, with its log as read once for the walk.
#[derive(Debug, Clone)]
pub struct Member {
    /// The session.
    pub session: String,
    /// Its agent path (`main`, `main/agent-2`, …).
    pub agent_path: String,
    /// Its log.
    pub events: std::sync::Arc<Vec<rein_sessions::StoredEvent>>,
}

/// `session` and its sub-agents' sessions (theirs too), each with its
/// agent path, parents first; at most 256 of them.
pub async fn family(store: &dyn Store, session: &str) -> Result<Vec<(String, String)>, AgentError> {
    Ok(family_read(store, session)
        .await?
        .into_iter()
        .map(|m| (m.session, m.agent_path))
        .collect())
}

/// [`family`] with each member's log, each read once: what a surface shows
/// of a conversation (its report, what waits) is made from these without
/// reading any log again.
pub async fn family_read(store: &dyn Store, session: &str) -> Result<Vec<Member>, AgentError> {
    family_read_in(store, None, session).await
}

/// [`family_read`] through `cache`: each log read only from where the
/// cache's copy ends (`rein_sessions::LogCache`).
pub async fn family_read_cached(
    store: &dyn Store,
    cache: &LogCache,
    session: &str,
) -> Result<Vec<Member>, AgentError> {
    family_read_in(store, Some(cache), session).await
}

async fn family_read_in(
    store: &dyn Store,
    cache: Option<&LogCache>,
    session: &str,
) -> Result<Vec<Member>, AgentError> {
    let mut found = vec![Member {
        session: session.to_owned(),
        agent_path: "main".to_owned(),
        events: std::sync::Arc::default(),
    }];
    let mut next = 0;
    while next < found.len() && found.len() < MAX_SESSIONS {
        let member = &found[next].session;
        let events = match cache {
            Some(cache) => cache.read(store, member).await?,
            None => std::sync::Arc::new(rein_sessions::read_all(store, member).await?),
        };
        for stored in events.iter() {
            if let Event::AgentStarted {
                agent_path,
                session: Some(child),
                ..
            } = &stored.event
                && !found.iter().any(|m| m.session == *child)
                && found.len() < MAX_SESSIONS
            {
                found.push(Member {
                    session: child.clone(),
                    agent_path: agent_path.clone(),
                    events: std::sync::Arc::default(),
                });
            }
        }
        found[next].events = events;
        next += 1;
    }
    Ok(found)
}

/// Every approval waiting in `session` or its sub-agents, parents first,
/// oldest first within a session.
pub async fn waiting(store: &dyn Store, session: &str) -> Result<Vec<Waiting>, AgentError> {
    waiting_in(store, &family_read(store, session).await?).await
}

/// [`waiting`] in a family already read.
pub async fn waiting_in(store: &dyn Store, family: &[Member]) -> Result<Vec<Waiting>, AgentError> {
    let mut all = Vec::new();
    for member in family {
        let control = store.control(&member.session).await?;
        // The log was read before the control record: a question asked
        // between the two is read from the log's newer part, so what waits
        // is never shown without what it would run.
        let mut newer: Vec<rein_sessions::StoredEvent> = Vec::new();
        for pending in control.pending {
            let mut asked =
                rein_sessions::recovery::approval_request(&member.events, &pending.approval_id)
                    .cloned();
            if asked.is_none() {
                if newer.is_empty() {
                    let after = member.events.last().map_or(0, |e| e.seq);
                    newer = rein_sessions::read_from(store, &member.session, after + 1).await?;
                }
                asked = rein_sessions::recovery::approval_request(&newer, &pending.approval_id)
                    .cloned();
            }
            let (arguments, preview) = match asked.as_ref().map(|e| &e.event) {
                Some(Event::ApprovalRequested {
                    arguments, preview, ..
                }) => (arguments.clone(), preview.clone()),
                _ => (serde_json::Value::Null, None),
            };
            all.push(Waiting {
                session: member.session.clone(),
                agent_path: member.agent_path.clone(),
                approval_id: pending.approval_id,
                tool: pending.tool,
                permission: pending.permission,
                arguments,
                preview,
            });
        }
    }
    Ok(all)
}

/// The session of `session`'s family where `approval_id` waits, if any.
pub(crate) async fn holder(
    store: &dyn Store,
    session: &str,
    approval_id: &str,
) -> Result<Option<String>, AgentError> {
    Ok(waiting(store, session)
        .await?
        .into_iter()
        .find(|w| w.approval_id == approval_id)
        .map(|w| w.session))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::time::Duration;

    use rein_sessions::{Event, MemoryStore, NewEvent, Store};
    use rein_wire::permission::PermissionClass;
    use serde_json::{Value, json};

    use super::{family_read, waiting_in};

    #[tokio::test]
    async fn a_question_asked_after_the_log_was_read_is_shown_with_what_it_runs() {
        let store = MemoryStore::new();
        let info = store.create_session(Value::Null).await.unwrap();
        let lock = store
            .acquire(&info.id, "test", Duration::from_secs(30))
            .await
            .unwrap();
        store
            .append(
                &lock,
                vec![NewEvent::main(Event::RunStarted {
                    run_id: "r".into(),
                    turn_id: "t".into(),
                    budgets: Value::Null,
                    profile: Value::Null,
                })],
            )
            .await
            .unwrap();
        // The family's logs read, then the question asked before the
        // control record is read (as a surface listing what waits can).
        let family = family_read(&store, &info.id).await.unwrap();
        store
            .append(
                &lock,
                vec![NewEvent::main(Event::ApprovalRequested {
                    approval_id: "a1".into(),
                    call_id: "c1".into(),
                    tool: "write_file".into(),
                    arguments: json!({"path": "notes.md", "content": "x\n"}),
                    permission: PermissionClass::SourceFileWrite,
                    preview: None,
                    bound_to: None,
                })],
            )
            .await
            .unwrap();
        let waiting = waiting_in(&store, &family).await.unwrap();
        assert_eq!(waiting.len(), 1, "{waiting:?}");
        assert_eq!(waiting[0].arguments["path"], "notes.md");
    }
}
