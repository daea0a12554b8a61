//! rein's own tools beside the product's: `read_result` (pages an
//! offloaded result), `load_tool` / `call_tool` (deferred loading),
//! `read_skill`, `server_info` (the harness's own facts); their specs, permission checks and handlers, and
//! [`WithBuiltins`], the one backend the loop calls: the product's backend
//! with these beside it, so the loop does not match on tool names.
//!
//! Not here: `delegate` (`crate::delegation`, `crate::subagent`): it opens
//! a sub-agent with events of its own, so the read batch runs it.

use async_trait::async_trait;
use rein_tools::ToolSummary;
use std::sync::Arc;

use rein_approvals::{PermissionClass, Policy};
use rein_sessions::Store;
use rein_tools::{Outcome, ToolBackend, ToolContext};
use rein_wire::{AgentError, error::codes};
use serde_json::{Value, json};

/// The product's backend with rein's own tools beside it. Its catalog and
/// definitions are the product's alone (the built-ins' definitions are
/// added to the prefix by the request builder, as before), so the prefix's
/// bytes do not change with it.
pub(super) struct WithBuiltins {
    /// The product's backend.
    pub(super) product: Arc<dyn ToolBackend>,
    /// Where offloaded results are paged from.
    pub(super) store: Arc<dyn Store>,
}

#[async_trait]
impl ToolBackend for WithBuiltins {
    fn catalog(&self, policy: &Policy) -> Vec<ToolSummary> {
        self.product.catalog(policy)
    }

    fn definition(&self, name: &str) -> Option<rein_wire::ToolSpec> {
        self.product.definition(name)
    }

    fn prepare(&self, name: &str, args: Value) -> Result<Value, AgentError> {
        self.product.prepare(name, args)
    }

    fn permission(&self, name: &str, args: &Value) -> Result<PermissionClass, AgentError> {
        builtin_permission(name, args).unwrap_or_else(|| self.product.permission(name, args))
    }

    async fn invoke(&self, name: &str, args: Value, ctx: &ToolContext) -> Outcome {
        match name {
            READ_RESULT => read_result(self.store.as_ref(), &args).await,
            LOAD_TOOL => load_tool(self.product.as_ref(), &args),
            READ_SKILL => {
                let skill = args.get("name").and_then(Value::as_str).unwrap_or_default();
                match self.product.read_skill(skill) {
                    Some(text) => Outcome::ok(json!({"skill": skill, "text": text})),
                    None => Outcome::failed(
                        codes::SKILL_NOT_FOUND,
                        format!("there is no skill `{skill}`"),
                    ),
                }
            }
            _ => self.product.invoke(name, args, ctx).await,
        }
    }

    async fn undo(&self, operation_id: &str) -> Option<Result<String, AgentError>> {
        self.product.undo(operation_id).await
    }

    fn cacheable(&self, name: &str) -> bool {
        !matches!(name, READ_RESULT | LOAD_TOOL | READ_SKILL | SERVER_INFO)
            && self.product.cacheable(name)
    }

    fn revision(&self) -> String {
        self.product.revision()
    }

    fn purpose(&self, name: &str) -> Option<String> {
        self.product.purpose(name)
    }

    fn preview(&self, name: &str, args: &Value) -> Option<rein_wire::Preview> {
        self.product.preview(name, args)
    }

    fn changes(&self, name: &str, args: &Value) -> Option<rein_wire::Revision> {
        self.product.changes(name, args)
    }

    fn read_first(&self, name: &str, args: &Value) -> Option<(String, Value)> {
        self.product.read_first(name, args)
    }

    fn revision_guard(&self) -> Option<rein_tools::RevisionGuard> {
        self.product.revision_guard()
    }

    fn skills(&self) -> Vec<ToolSummary> {
        self.product.skills()
    }

    fn read_skill(&self, name: &str) -> Option<String> {
        self.product.read_skill(name)
    }

    fn turn_boundary(&self) -> Vec<String> {
        self.product.turn_boundary()
    }
}

impl WithBuiltins {
    /// A backend's `tool_not_found` lists only the backend's tools; the
    /// model was also offered rein's own (as `agent` offers them), so they
    /// are named too.
    pub(super) fn naming_builtins(&self, agent: &crate::Agent, mut err: AgentError) -> AgentError {
        if err.code != codes::TOOL_NOT_FOUND {
            return err;
        }
        let mut own = vec![READ_RESULT];
        let offered = self.catalog(&agent.guards.policy).len();
        if agent.profile.tools.defers(offered) {
            own.extend([LOAD_TOOL, CALL_TOOL]);
        }
        if agent.delegation.is_some() {
            own.push(crate::delegation::DELEGATE);
        }
        if !self.skills().is_empty() {
            own.push(READ_SKILL);
        }
        if agent.server_info {
            own.push(SERVER_INFO);
        }
        err.message = format!("{}; rein's own: {}", err.message, own.join(", "));
        err
    }
}

/// The built-in tool that pages through an offloaded result.
pub(super) const READ_RESULT: &str = "read_result";

pub(super) fn read_result_spec() -> rein_wire::ToolSpec {
    rein_wire::ToolSpec {
        name: READ_RESULT.into(),
        description: "Read part of a tool result that was too large to show whole: only for a result whose stub names an artifact (a 64-character hash); never for reading a file.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "artifact": {"type": "string", "description": "The artifact hash from the result's stub."},
                "offset": {"type": "integer", "minimum": 0, "description": "First character to read."},
                "length": {"type": "integer", "minimum": 1, "maximum": 8000, "description": "How many characters to read."}
            },
            "required": ["artifact", "offset", "length"],
            "additionalProperties": false
        }),
        strict: false,
    }
}

pub(super) fn check_read_result(args: &Value) -> Result<(String, usize, usize), AgentError> {
    let bad = |why: &str| {
        AgentError::new(
            codes::TOOL_ARGUMENTS_INVALID,
            format!("the arguments for `read_result` are not valid: {why}"),
        )
    };
    let artifact = args
        .get("artifact")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("`artifact` must be a string"))?;
    // A small model invents ids (`calc.py_2`): say what the tool is for.
    if artifact.len() != 64
        || !artifact
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(bad(&format!(
            "`{}` names no stored result: read_result pages only through a result whose stub names an artifact, a 64-character hash; to read a file, use the tool that reads files",
            artifact.chars().take(80).collect::<String>()
        )));
    }
    let offset = args
        .get("offset")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("`offset` must be a non-negative integer"))?;
    let length = args
        .get("length")
        .and_then(Value::as_u64)
        .filter(|l| (1..=8000).contains(l))
        .ok_or_else(|| bad("`length` must be 1 to 8000"))?;
    Ok((
        artifact.to_owned(),
        usize::try_from(offset).unwrap_or(usize::MAX),
        usize::try_from(length).unwrap_or(8000),
    ))
}

pub(super) async fn read_result(store: &dyn Store, args: &Value) -> Outcome {
    let (artifact, offset, length) = match check_read_result(args) {
        Ok(parts) => parts,
        Err(err) => return Outcome::from_error(&err),
    };
    match store
        .read_artifact(&artifact, rein_sessions::Slice::Whole)
        .await
    {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let total = text.chars().count();
            let start = offset.min(total);
            let part: String = text.chars().skip(start).take(length).collect();
            let end = start + part.chars().count();
            Outcome::ok(
                json!({"artifact": artifact, "offset": start, "end": end, "total_chars": total, "text": part}),
            )
        }
        Err(err) => Outcome::from_error(&err),
    }
}

/// The built-in tool that fetches a deferred tool's definition.
pub(super) const LOAD_TOOL: &str = "load_tool";

/// The built-in tool that calls a deferred tool.
pub(super) const CALL_TOOL: &str = "call_tool";

pub(super) fn load_tool_spec() -> rein_wire::ToolSpec {
    rein_wire::ToolSpec {
        name: LOAD_TOOL.into(),
        description: "Get a tool's description and the JSON schema of its arguments.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The tool's name, from the list."}},
            "required": ["name"],
            "additionalProperties": false
        }),
        strict: false,
    }
}

pub(super) fn call_tool_spec() -> rein_wire::ToolSpec {
    rein_wire::ToolSpec {
        name: CALL_TOOL.into(),
        description: "Call a tool by name with arguments that follow its schema (get it with load_tool first).".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name."},
                "arguments": {"type": "object", "description": "Its arguments."}
            },
            "required": ["name", "arguments"],
            "additionalProperties": false
        }),
        strict: false,
    }
}

pub(super) fn load_tool(backend: &dyn ToolBackend, args: &Value) -> Outcome {
    let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
    match backend.definition(name) {
        Some(spec) => Outcome::ok(
            json!({"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}),
        ),
        None => Outcome::failed(codes::TOOL_NOT_FOUND, format!("there is no tool `{name}`")),
    }
}

/// The built-in tool that reads one of the product's skills.
pub(super) const READ_SKILL: &str = "read_skill";

pub(super) fn read_skill_spec() -> rein_wire::ToolSpec {
    rein_wire::ToolSpec {
        name: READ_SKILL.into(),
        description: "Read one of the skills listed in the instructions.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The skill's name."}},
            "required": ["name"],
            "additionalProperties": false
        }),
        strict: false,
    }
}

/// The permission of a built-in tool's call (`None`: not a built-in).
pub(super) fn builtin_permission(
    tool: &str,
    args: &Value,
) -> Option<Result<PermissionClass, AgentError>> {
    let invalid = |why: &str| {
        Err(AgentError::new(
            codes::TOOL_ARGUMENTS_INVALID,
            format!("{tool} needs {why}"),
        ))
    };
    let named = || args.get("name").and_then(Value::as_str).is_some();
    Some(match tool {
        READ_RESULT => check_read_result(args).map(|_| PermissionClass::Read),
        SERVER_INFO => Ok(PermissionClass::Read),
        READ_SKILL if named() => Ok(PermissionClass::Read),
        READ_SKILL => invalid("the `name` of a skill"),
        LOAD_TOOL if named() => Ok(PermissionClass::Read),
        LOAD_TOOL => invalid("the `name` of a tool"),
        CALL_TOOL => invalid("the `name` of a tool and its `arguments`"),
        crate::delegation::DELEGATE if crate::delegation::task_of(args).is_some() => {
            Ok(PermissionClass::Read)
        }
        crate::delegation::DELEGATE => invalid("a `task`"),
        _ => return None,
    })
}

/// The built-in tool that tells the model the harness's own facts.
pub(super) const SERVER_INFO: &str = "server_info";

/// Names a `server_info` answer lists of one kind, at most.
const INFO_NAMES: usize = 100;

pub(super) fn server_info_spec() -> rein_wire::ToolSpec {
    rein_wire::ToolSpec {
        name: SERVER_INFO.into(),
        description: "rein's own facts about this conversation: its version, the model, the policy in force, the tools and skills you have, and what is left of this turn's budgets.".into(),
        input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        strict: false,
    }
}

/// What `server_info` answers: facts of the definition and the turn's
/// spending, bounded (at most [`INFO_NAMES`] names of each kind) and free
/// of secrets (names and numbers only; the recorder masks the rest as for
/// any result).
pub(super) fn server_info(
    agent: &crate::Agent,
    tools: &dyn ToolBackend,
    spent: crate::settings::Spent,
    elapsed: std::time::Duration,
) -> Outcome {
    let names = |mut all: Vec<String>| {
        all.sort();
        let more = all.len().saturating_sub(INFO_NAMES);
        all.truncate(INFO_NAMES);
        json!({"names": all, "more": more})
    };
    let budgets = &agent.budgets;
    let left = |limit: Option<u64>, used: u64| limit.map(|l| l.saturating_sub(used));
    let hooks: Vec<&str> = agent.guards.hooks.iter().map(|h| h.name()).collect();
    Outcome::ok(json!({
        "harness": "rein",
        "version": env!("CARGO_PKG_VERSION"),
        "agent": agent.profile.name,
        "model": agent.profile.model,
        "context_window": agent.context.window,
        "policy": {
            "writes_allowed": agent.guards.policy.writes_allowed,
            "writes_wait_for_a_person": true,
            "hooks": hooks,
            "delegation": agent.delegation.as_ref().map(|d| json!({"max_per_turn": d.max_per_turn, "writes": d.writes})),
        },
        "tools": names(tools.catalog(&agent.guards.policy).into_iter().map(|t| t.name).collect()),
        "skills": names(tools.skills().into_iter().map(|t| t.name).collect()),
        "budgets": {
            "steps": {"limit": budgets.max_steps, "used": spent.steps, "left": budgets.max_steps.saturating_sub(spent.steps)},
            "tokens": {"limit": budgets.max_tokens, "used": spent.tokens, "left": left(budgets.max_tokens, spent.tokens)},
            "cost_micro_usd": {"limit": budgets.max_cost_micro_usd, "used": spent.cost, "left": left(budgets.max_cost_micro_usd, spent.cost)},
            "wall_secs": {"limit": budgets.max_wall.as_secs(), "used": elapsed.as_secs(), "left": budgets.max_wall.saturating_sub(elapsed).as_secs()},
        },
    }))
}
