//! Delegation from the loop's side: the settings ([`Delegation`]), the
//! built-in `delegate` tool's name and definition, and the [`Spawn`] trait
//! a sub-agent is started through. The loop depends on this module only;
//! `crate::subagent` (which opens the child conversation) provides rein's
//! spawner, so there is no module cycle.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rein_gateway::Provider;
use rein_sessions::Store;
use rein_tools::{Outcome, ToolBackend};
use serde_json::{Value, json};

use crate::settings::Profile;

/// The name of the built-in tool.
pub(crate) const DELEGATE: &str = "delegate";

/// Whether and how the model may hand tasks to sub-agents.
#[derive(Clone)]
pub struct Delegation {
    /// Sub-agents one turn may start.
    pub max_per_turn: u32,
    /// Model calls a sub-agent may make.
    pub max_steps: u32,
    /// Added to the sub-agent's system prompt, in the product's words.
    pub instructions: String,
    /// What starts a sub-agent (rein's own, from `crate::subagent`).
    pub(crate) spawner: Arc<dyn Spawn>,
}

impl std::fmt::Debug for Delegation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegation")
            .field("max_per_turn", &self.max_per_turn)
            .field("max_steps", &self.max_steps)
            .field("instructions", &self.instructions)
            .finish_non_exhaustive()
    }
}

/// Starts one sub-agent on a task: handed to the conversation with its
/// [`Delegation`], so the loop never names the code that opens a child.
pub(crate) trait Spawn: Send + Sync {
    /// Run a sub-agent for `parent` as `agent_path` on `task`; its answer
    /// (or why there is none) as the `delegate` call's outcome.
    fn spawn(
        &self,
        parent: Parent,
        agent_path: String,
        task: String,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send>>;
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

/// The task of a `delegate` call, if its arguments have one.
pub(crate) fn task_of(args: &Value) -> Option<&str> {
    args.get("task")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
}
