//! Delegation from the loop's side: the built-in `delegate` tool's name,
//! definition and arguments, and the share of the parent's budget a
//! sub-agent gets.
//!
//! Not here: the settings and the `Spawn` trait a sub-agent is started
//! through (with the definition, in `agent`), opening and driving a child
//! (`subagent`, `helpers`).

use std::time::Duration;

use rein_approvals::Policy;
use rein_tools::ToolBackend;
use rein_wire::{AgentError, error::codes};
use serde_json::{Value, json};

use crate::settings::{Budgets, Spent};

/// The name of the built-in tool.
pub(crate) const DELEGATE: &str = "delegate";

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

    use super::share;
    use crate::agent::Delegation;
    use crate::settings::Budgets;
    use crate::settings::Spent;

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
