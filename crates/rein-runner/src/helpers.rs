//! Starting the named agents a conversation may hand a task to (`delegate
//! {agent: NAME, task}`) that rein hosts: an [`ExternalAgent`] (Claude
//! Code, Codex), whose run is recorded as the child session. (The
//! [`crate::Helper`] types are the definition's, in `agent`; a rein agent
//! helper runs as a sub-agent by the one inheritance rule, `subagent`.)
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

use rein_tools::Outcome;
use serde_json::json;

use crate::agent::{Child, ExternalAgent, ExternalTask, Spawn, Spawned};
use crate::guards::Guards;
use crate::settings::Spent;

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
                        rein_wire::error::codes::CALL_INTERRUPTED,
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
                agent_path: child.agent_path.clone(),
                ui: child.ui.clone(),
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
