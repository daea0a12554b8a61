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

use rein_gateway::Provider;
use rein_sessions::Store;
use rein_tools::{Outcome, ToolBackend};
use serde_json::{Value, json};

use crate::conversation::{Conversation, Profile};
use crate::outcome::TurnOutcome;

/// The name of the built-in tool.
pub(crate) const DELEGATE: &str = "delegate";

/// Whether and how the model may hand tasks to sub-agents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegation {
    /// Sub-agents one turn may start.
    pub max_per_turn: u32,
    /// Model calls a sub-agent may make.
    pub max_steps: u32,
    /// Added to the sub-agent's system prompt, in the product's words.
    pub instructions: String,
}

impl Default for Delegation {
    fn default() -> Self {
        Delegation {
            max_per_turn: 4,
            max_steps: 20,
            instructions: "You are a sub-agent working on one task for another agent. You can read but not change anything. Answer with what you found, briefly and concretely.".into(),
        }
    }
}

/// The `delegate` tool's definition.
pub(crate) fn delegate_spec() -> rein_wire::ToolSpec {
    rein_wire::ToolSpec {
        name: DELEGATE.into(),
        description: "Hand a self-contained task to a sub-agent that can read (not change) what you can, and get its answer. Use it for research that would fill your own context.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"task": {"type": "string", "description": "The task, with everything the sub-agent needs to know."}},
            "required": ["task"],
            "additionalProperties": false
        }),
        strict: false,
    }
}

/// What a sub-agent needs from its parent.
pub(crate) struct Parent {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) backend: Arc<dyn ToolBackend>,
    pub(crate) profile: Profile,
    pub(crate) session_id: String,
    pub(crate) delegation: Delegation,
}

/// Run one sub-agent on `task` as `agent_path`; its answer (or why there is
/// none) as the call's outcome. Boxed: a sub-agent's turn is a turn.
pub(crate) fn run(
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
                code: "agent_unfinished".into(),
                message: format!("the sub-agent ended without an answer ({})", other.name()),
                detail: Some(json!({"agent": agent_path, "session": session})),
                retryable: false,
            },
            Err(err) => Outcome::from_error(&err),
        }
    })
}

/// The task of a `delegate` call, if its arguments have one.
pub(crate) fn task_of(args: &Value) -> Option<&str> {
    args.get("task")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
}
