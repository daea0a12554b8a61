//! The blackboard as tools: a graph task's conversation reads a key
//! (`blackboard_read`) and writes one against the revision it read
//! (`blackboard_write`), beside the product's own tools. A write against
//! another revision fails with `blackboard_conflict` and the key's current
//! revision and value in the detail, so the model can read, merge and try
//! again — it never overwrites what it did not see.
//!
//! The blackboard is the graph's scratch state, not the person's: its
//! writes are `reversible_write` (they run without asking under the default
//! policy, and a policy that refuses writes refuses them too).
//!
//! Not here: the blackboard's rules (`rein-orchestrator`), its record
//! (`graph_record.rs`).

use std::sync::Arc;

use async_trait::async_trait;
use rein_approvals::Policy;
use rein_orchestrator::Blackboard;
use rein_tools::{Outcome, ToolBackend, ToolContext, ToolSummary};
use rein_wire::permission::PermissionClass;
use rein_wire::{AgentError, ToolSpec, error::codes};
use serde_json::{Value, json};

/// Read a key.
pub const BLACKBOARD_READ: &str = "blackboard_read";
/// Write a key against the revision read.
pub const BLACKBOARD_WRITE: &str = "blackboard_write";

/// A product's backend with the graph's blackboard beside it.
pub(crate) struct WithBlackboard {
    pub(crate) product: Arc<dyn ToolBackend>,
    pub(crate) board: Blackboard,
    /// The task writing (recorded with each write).
    pub(crate) task: String,
}

fn spec(name: &str) -> Option<ToolSpec> {
    let (description, schema) = match name {
        BLACKBOARD_READ => (
            "Read a key of the blackboard the tasks of this piece of work share: its value and revision (0: not written yet).",
            json!({
                "type": "object",
                "properties": {"key": {"type": "string", "description": "The key."}},
                "required": ["key"],
                "additionalProperties": false
            }),
        ),
        BLACKBOARD_WRITE => (
            "Write a key of the shared blackboard. Give the revision you read (0 for a new key); if someone wrote it since, the write fails with the current revision and value: read them, merge, and write again.",
            json!({
                "type": "object",
                "properties": {
                    "key": {"type": "string", "description": "The key."},
                    "value": {"description": "The new value (any JSON)."},
                    "revision": {"type": "integer", "minimum": 0, "description": "The revision you read."}
                },
                "required": ["key", "value", "revision"],
                "additionalProperties": false
            }),
        ),
        _ => return None,
    };
    Some(ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: schema,
        strict: false,
    })
}

fn key_of(args: &Value) -> &str {
    args.get("key").and_then(Value::as_str).unwrap_or_default()
}

#[async_trait]
impl ToolBackend for WithBlackboard {
    fn catalog(&self, policy: &Policy) -> Vec<ToolSummary> {
        let mut tools = self.product.catalog(policy);
        for name in [BLACKBOARD_READ, BLACKBOARD_WRITE] {
            if let Some(spec) = spec(name) {
                tools.push(ToolSummary {
                    name: spec.name,
                    purpose: spec.description,
                });
            }
        }
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools
    }

    fn definition(&self, name: &str) -> Option<ToolSpec> {
        spec(name).or_else(|| self.product.definition(name))
    }

    fn prepare(&self, name: &str, args: Value) -> Result<Value, AgentError> {
        self.product.prepare(name, args)
    }

    fn permission(&self, name: &str, args: &Value) -> Result<PermissionClass, AgentError> {
        match name {
            BLACKBOARD_READ => Ok(PermissionClass::Read),
            BLACKBOARD_WRITE => Ok(PermissionClass::ReversibleWrite),
            _ => self.product.permission(name, args),
        }
    }

    async fn undo(&self, operation_id: &str) -> Option<Result<String, AgentError>> {
        self.product.undo(operation_id).await
    }

    async fn invoke(&self, name: &str, args: Value, ctx: &ToolContext) -> Outcome {
        match name {
            BLACKBOARD_READ => {
                let key = key_of(&args);
                match self.board.get(key) {
                    Some(entry) => Outcome::ok(
                        json!({"key": key, "value": entry.value, "revision": entry.revision}),
                    ),
                    None => Outcome::ok(json!({"key": key, "value": null, "revision": 0})),
                }
            }
            BLACKBOARD_WRITE => {
                let key = key_of(&args);
                let Some(revision) = args.get("revision").and_then(Value::as_u64) else {
                    return Outcome::failed(
                        codes::TOOL_ARGUMENTS_INVALID,
                        "give the revision you read (0 for a new key)",
                    );
                };
                let value = args.get("value").cloned().unwrap_or(Value::Null);
                match self.board.compare_and_set(key, revision, value, &self.task) {
                    Ok(now) => Outcome::ok(json!({"key": key, "revision": now})),
                    Err(err) => Outcome::from_error(&err),
                }
            }
            _ => self.product.invoke(name, args, ctx).await,
        }
    }

    fn cacheable(&self, name: &str) -> bool {
        !matches!(name, BLACKBOARD_READ | BLACKBOARD_WRITE) && self.product.cacheable(name)
    }

    fn revision(&self) -> String {
        self.product.revision()
    }

    fn purpose(&self, name: &str) -> Option<String> {
        spec(name)
            .map(|s| s.description)
            .or_else(|| self.product.purpose(name))
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
}
