//! Sub-agents: the model hands a task to a child conversation with the
//! built-in `delegate` tool.
//!
//! A sub-agent is a conversation of its own — its own session, its log
//! linked to the parent by `agent.started` / `agent.finished` in the
//! parent's log and by `parent_session` in its metadata — run with the same
//! provider and tools, the parent's profile plus the delegation's
//! instructions, and its own step budget. Its events carry the agent path
//! `main/agent-N`. Its answer is the `delegate` call's result.
//!
//! This first form is bounded and read-only: a sub-agent cannot write
//! (writes stay with the main agent, where a person approves them), cannot
//! delegate further (depth 1), and a turn may start at most
//! [`Delegation::max_per_turn`] of them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rein_tools::Outcome;
use serde_json::json;

use crate::conversation::Conversation;
use crate::delegation::{Delegation, Parent, Spawn};
use crate::outcome::TurnOutcome;

/// rein's own spawner: a child [`Conversation`] in a session of its own.
struct SubAgents;

impl Spawn for SubAgents {
    fn spawn(
        &self,
        parent: Parent,
        agent_path: String,
        task: String,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send>> {
        run(parent, agent_path, task)
    }
}

impl Default for Delegation {
    fn default() -> Self {
        Delegation {
            max_per_turn: 4,
            max_steps: 20,
            spawner: Arc::new(SubAgents),
            instructions: "You are a sub-agent working on one task for another agent. You can read but not change anything. Answer with what you found, briefly and concretely.".into(),
        }
    }
}

/// Run one sub-agent on `task` as `agent_path`; its answer (or why there is
/// none) as the call's outcome. Boxed: a sub-agent's turn is a turn.
fn run(
    parent: Parent,
    agent_path: String,
    task: String,
) -> Pin<Box<dyn Future<Output = Outcome> + Send>> {
    Box::pin(async move {
        let mut profile = parent.profile.clone();
        profile.system.push(parent.delegation.instructions.clone());
        let metadata = json!({
            "assistant": profile.name,
            "model": profile.model,
            "parent_session": parent.session_id,
            "agent_path": agent_path,
        });
        let mut child = match Conversation::open_with(
            parent.store,
            parent.provider,
            parent.backend,
            profile,
            None,
            metadata,
        )
        .await
        {
            Ok(child) => child,
            Err(err) => return Outcome::from_error(&err),
        };
        child.set_agent_path(&agent_path);
        child.policy.writes_allowed = false;
        child.budgets.max_steps = parent.delegation.max_steps;
        let outcome = child.turn(&task).await;
        let session = child.session_id().to_owned();
        if let Err(err) = child.close().await {
            tracing::warn!(code = %err.code, "a sub-agent's lease was not released");
        }
        match outcome {
            Ok(TurnOutcome::Finished { reply }) => {
                Outcome::ok(json!({"agent": agent_path, "session": session, "answer": reply}))
            }
            Ok(other) => Outcome::Failed {
                code: rein_wire::error::codes::AGENT_UNFINISHED.to_string(),
                message: format!("the sub-agent ended without an answer ({})", other.name()),
                detail: Some(json!({"agent": agent_path, "session": session})),
                retryable: false,
            },
            Err(err) => Outcome::from_error(&err),
        }
    })
}
