//! Named agents a conversation may hand a task to (`delegate {agent: NAME,
//! task}`): another rein [`Agent`] — run as a sub-agent by the one
//! inheritance rule — or an [`ExternalAgent`] rein hosts (Claude Code,
//! Codex), whose run is recorded as the child session.
//!
//! A hosted program cannot be held to rein's hooks or policy, so the rule
//! that a child keeps every guard of its parent is kept by refusing: an
//! external helper is offered only to a conversation with no hooks and
//! writes allowed, and a delegate call to it is refused otherwise.
//!
//! Not here: opening a native child (`subagent`), driving a hosted program
//! (`rein-host`), which helpers a product defines (its composition root).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::future::BoxFuture;
use rein_sessions::Store;
use rein_tools::Outcome;
use rein_wire::AgentError;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::Agent;
use crate::delegation::{Child, Spawn, Spawned, Spent};
use crate::guards::Guards;

/// An agent a `delegate` call may name.
#[derive(Clone)]
pub enum Helper {
    /// A rein agent: its words, budgets and checks, the parent's guards.
    Agent(Box<Agent>),
    /// A program rein hosts.
    External(Arc<dyn ExternalAgent>),
}

impl std::fmt::Debug for Helper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Helper::Agent(agent) => write!(f, "Helper::Agent({})", agent.profile.name),
            Helper::External(_) => f.write_str("Helper::External"),
        }
    }
}

/// One task for an external agent.
pub struct ExternalTask {
    /// The store the child session is in.
    pub store: Arc<dyn Store>,
    /// The child session (made when the call was recorded, named in the
    /// parent's `agent.started`): record the run there.
    pub session: String,
    /// What it is asked.
    pub task: String,
    /// Cancelled when the parent's turn is stopped or interrupted.
    pub cancel: CancellationToken,
}

/// A program rein hosts as a helper: it runs the task, records its run in
/// the session it is given, and answers with its final text.
pub trait ExternalAgent: Send + Sync {
    /// Run `task` to its end.
    fn run(&self, task: ExternalTask) -> BoxFuture<'static, Result<ExternalAnswer, AgentError>>;
}

/// What an external helper's run gave back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExternalAnswer {
    /// Its final text.
    pub text: String,
    /// What the run cost in micro-USD, drawn from the parent's cost
    /// budget; `None` when the program did not say (the parent's report
    /// then counts the call as of unknown cost).
    pub cost_micro_usd: Option<u64>,
}

/// Whether a conversation under `guards` may hand work to an external
/// helper (see the module's docs); the reason when not.
pub(crate) fn external_refused(guards: &Guards) -> Option<&'static str> {
    if !guards.hooks.is_empty() {
        return Some("this conversation runs hooks a hosted agent cannot be held to");
    }
    if !guards.policy.writes_allowed {
        return Some(
            "this conversation's policy forbids writes, which a hosted agent cannot be held to",
        );
    }
    None
}

/// Starts an external helper as a `delegate` call's child.
pub(crate) struct ExternalSpawn(pub(crate) Arc<dyn ExternalAgent>);

impl Spawn for ExternalSpawn {
    fn spawn(&self, child: Child) -> Pin<Box<dyn Future<Output = Spawned> + Send>> {
        let helper = self.0.clone();
        Box::pin(async move {
            // A hosted run a restart cut short is not run again: what it
            // did may not be undone, and a write never runs twice.
            if child.reattach {
                return Spawned {
                    outcome: Outcome::failed(
                        rein_wire::error::codes::CALL_INTERRUPTED.as_str(),
                        format!(
                            "the hosted agent's run in session {} was cut short by a restart; it is not run again (check what it did first)",
                            child.session
                        ),
                    ),
                    spent: Spent::default(),
                };
            }
            let task = ExternalTask {
                store: child.store.clone(),
                session: child.session.clone(),
                task: child.task.clone(),
                cancel: child.cancel.clone(),
            };
            let mut spent = Spent::default();
            let outcome = match helper.run(task).await {
                Ok(answer) => {
                    spent.cost = answer.cost_micro_usd.unwrap_or(0);
                    Outcome::ok(json!({
                        "agent": child.agent_path,
                        "session": child.session,
                        "answer": answer.text,
                        "cost_micro_usd": answer.cost_micro_usd,
                    }))
                }
                Err(err) => Outcome::from_error(&err),
            };
            Spawned { outcome, spent }
        })
    }
}
