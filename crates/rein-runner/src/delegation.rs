//! Delegation from the loop's side: the settings ([`Delegation`]), the
//! built-in `delegate` tool's name, definition and arguments, the share of
//! the parent's budget a sub-agent gets, and the [`Spawn`] trait a
//! sub-agent is started through. The loop depends on this module only;
//! `crate::subagent` (which opens and drives the child conversation)
//! provides rein's spawner, so there is no module cycle.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rein_approvals::Policy;
use rein_sessions::Store;
use rein_tools::{Outcome, ToolBackend};
use rein_wire::{AgentError, error::codes};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::outcome::UiEvent;
use crate::settings::Budgets;

/// The name of the built-in tool.
pub(crate) const DELEGATE: &str = "delegate";

/// Whether and how the model may hand tasks to sub-agents.
#[derive(Clone)]
pub struct Delegation {
    /// Sub-agents one turn may start.
    pub max_per_turn: u32,
    /// Model calls a sub-agent may make (its share of the parent's
    /// remaining steps is smaller when that is smaller).
    pub max_steps: u32,
    /// How deep sub-agents may nest: 1 lets only the main agent delegate,
    /// 2 (the default) lets its sub-agents delegate once more.
    pub max_depth: u32,
    /// Whether a sub-agent may write (each write asked of the person
    /// through the parent's surface, as the parent's policy says). Off, a
    /// sub-agent's writes are refused.
    pub writes: bool,
    /// Added to the sub-agent's system prompt, in the product's words.
    pub instructions: String,
    /// Named agents a `delegate` call may hand its task to (`agent: NAME`):
    /// rein agents (kept to this conversation's guards by the one rule) or
    /// programs rein hosts.
    pub helpers: std::collections::BTreeMap<String, crate::helpers::Helper>,
    /// How deep the conversation holding this is (0 for the main agent).
    pub(crate) depth: u32,
    /// What starts a sub-agent (rein's own, from `crate::subagent`).
    pub(crate) spawner: Arc<dyn Spawn>,
}

impl std::fmt::Debug for Delegation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegation")
            .field("max_per_turn", &self.max_per_turn)
            .field("max_steps", &self.max_steps)
            .field("max_depth", &self.max_depth)
            .field("writes", &self.writes)
            .field("instructions", &self.instructions)
            .field("helpers", &self.helpers.keys().collect::<Vec<_>>())
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}

impl Delegation {
    /// The delegation a sub-agent of this conversation gets: one level
    /// deeper, or none at the depth limit.
    pub(crate) fn for_child(&self) -> Option<Delegation> {
        let depth = self.depth + 1;
        (depth < self.max_depth).then(|| Delegation {
            depth,
            ..self.clone()
        })
    }
}

/// Starts one sub-agent on a task: handed to the conversation with its
/// [`Delegation`], so the loop never names the code that opens a child.
pub(crate) trait Spawn: Send + Sync {
    /// Run (or, after a restart, reattach) the sub-agent `child` describes;
    /// its answer, or a typed failure, as the `delegate` call's outcome.
    fn spawn(&self, child: Child) -> Pin<Box<dyn Future<Output = Spawned> + Send>>;
}

/// What a sub-agent's run gave back: the `delegate` call's outcome and
/// what the child spent (drawn from the parent's budget).
pub(crate) struct Spawned {
    pub(crate) outcome: Outcome,
    pub(crate) spent: Spent,
}

/// What a turn has used of its budgets.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Spent {
    pub(crate) steps: u32,
    pub(crate) tokens: u64,
    pub(crate) cost: u64,
}

impl Spent {
    /// What a model's answer used: its tokens, and their cost at `agent`'s
    /// prices (none when the model has no price).
    pub(crate) fn of(agent: &crate::Agent, message: &rein_wire::AssembledMessage) -> Spent {
        let Some(usage) = &message.usage else {
            return Spent::default();
        };
        let model = message.model.as_deref().unwrap_or(&agent.profile.model);
        Spent {
            steps: 0,
            tokens: usage.prompt_total() + usage.output,
            cost: agent.prices.cost_micro_usd(model, usage).unwrap_or(0),
        }
    }

    pub(crate) fn add(&mut self, other: Spent) {
        self.steps = self.steps.saturating_add(other.steps);
        self.tokens = self.tokens.saturating_add(other.tokens);
        self.cost = self.cost.saturating_add(other.cost);
    }
}

/// One sub-agent to run: everything it needs from its parent.
pub(crate) struct Child {
    pub(crate) store: Arc<dyn Store>,
    /// Its definition: the parent's by the one rule (`Agent::child`), with
    /// its share of the budgets and its own delegation.
    pub(crate) agent: crate::Agent,
    pub(crate) agent_path: String,
    /// Its session, made when the call was recorded.
    pub(crate) session: String,
    pub(crate) task: String,
    /// Reattach after a restart: the child's turn is open, go on with it.
    pub(crate) reattach: bool,
    /// The parent's watchers (the child's UI events go there too).
    pub(crate) ui: Option<broadcast::Sender<UiEvent>>,
    /// Cancelled when the parent's turn is stopped or interrupted.
    pub(crate) cancel: CancellationToken,
}

/// The `delegate` tool's definition.
pub(crate) fn delegate_spec(writes: bool, helpers: &[String]) -> rein_wire::ToolSpec {
    let can = if writes {
        "can use your tools (its changes are asked of the person, like yours)"
    } else {
        "can read (not change) what you can"
    };
    rein_wire::ToolSpec {
        name: DELEGATE.into(),
        description: format!(
            "Hand a self-contained task to a sub-agent that {can}, and get its answer. Several delegate calls in one message run side by side. Use it for work that would fill your own context."
        ),
        input_schema: {
            let mut schema = json!({
                "type": "object",
                "properties": {
                    "task": {"type": "string", "description": "The task, with everything the sub-agent needs to know."},
                    "tools": {"type": "array", "items": {"type": "string"}, "description": "Names of your tools the sub-agent may use (default: all of them)."}
                },
                "required": ["task"],
                "additionalProperties": false
            });
            if !helpers.is_empty() {
                schema["properties"]["agent"] = json!({"type": "string", "enum": helpers, "description": "A named agent to hand the task to (default: a sub-agent like you)."});
            }
            schema
        },
        strict: false,
    }
}

/// The named agent a `delegate` call hands its task to, if any.
pub(crate) fn agent_of(args: &Value) -> Option<&str> {
    args.get("agent").and_then(Value::as_str)
}

/// The task of a `delegate` call, if its arguments have one.
pub(crate) fn task_of(args: &Value) -> Option<&str> {
    args.get("task")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
}

/// The tools a `delegate` call names for its sub-agent: `None` for all of
/// the parent's; an error for a name the parent does not have (a child
/// never gets more than its parent).
pub(crate) fn tools_of(
    args: &Value,
    parent: &dyn ToolBackend,
    policy: &Policy,
) -> Result<Option<Vec<String>>, AgentError> {
    let Some(named) = args.get("tools") else {
        return Ok(None);
    };
    let Some(list) = named.as_array() else {
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            "`tools` must be a list of tool names",
        ));
    };
    let offered: Vec<String> = parent.catalog(policy).into_iter().map(|s| s.name).collect();
    let mut names = Vec::with_capacity(list.len());
    for name in list {
        let Some(name) = name.as_str() else {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "`tools` must be a list of tool names",
            ));
        };
        if !offered.iter().any(|o| o == name) {
            return Err(AgentError::new(
                codes::TOOL_NOT_FOUND,
                format!("`{name}` is not one of your tools, so a sub-agent cannot have it"),
            ));
        }
        names.push(name.to_owned());
    }
    Ok(Some(names))
}

/// The budget each of `children` sub-agents started together gets: an
/// equal part of what the parent's turn has left (steps at most the
/// delegation's `max_steps`, at least one), the whole of the time left
/// (they run side by side). What a child spends is then drawn from the
/// parent's turn.
pub(crate) fn share(
    parent: &Budgets,
    spent: Spent,
    elapsed: Duration,
    children: u32,
    max_steps: u32,
) -> Budgets {
    let children = children.max(1);
    let steps_left = parent.max_steps.saturating_sub(spent.steps);
    Budgets {
        max_steps: (steps_left / children).clamp(1, max_steps.max(1)),
        max_tokens: parent
            .max_tokens
            .map(|max| max.saturating_sub(spent.tokens) / u64::from(children)),
        max_cost_micro_usd: parent
            .max_cost_micro_usd
            .map(|max| max.saturating_sub(spent.cost) / u64::from(children)),
        // Whole seconds, rounded up: the budget a child records does not
        // depend on how many milliseconds the parent took to delegate.
        max_wall: Duration::from_secs(
            parent.max_wall.saturating_sub(elapsed).as_secs_f64().ceil() as u64
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Delegation, Spent, share};
    use crate::settings::Budgets;

    #[test]
    fn children_share_what_is_left() {
        let parent = Budgets {
            max_steps: 20,
            max_tokens: Some(10_000),
            max_cost_micro_usd: Some(900),
            max_wall: Duration::from_secs(100),
        };
        let spent = Spent {
            steps: 4,
            tokens: 2_000,
            cost: 300,
        };
        let each = share(&parent, spent, Duration::from_secs(40), 2, 50);
        assert_eq!(each.max_steps, 8);
        assert_eq!(each.max_tokens, Some(4_000));
        assert_eq!(each.max_cost_micro_usd, Some(300));
        assert_eq!(each.max_wall, Duration::from_secs(60));
        // Capped by the delegation, and never below one step.
        assert_eq!(share(&parent, spent, Duration::ZERO, 1, 5).max_steps, 5);
        let spent_all = Spent { steps: 20, ..spent };
        assert_eq!(share(&parent, spent_all, Duration::ZERO, 3, 5).max_steps, 1);
    }

    #[test]
    fn depth_is_bounded() {
        let main = Delegation::default();
        assert_eq!(main.max_depth, 2);
        let child = main.for_child().expect("a child may delegate once more");
        assert_eq!(child.depth, 1);
        assert!(child.for_child().is_none(), "a grandchild may not");
    }
}
