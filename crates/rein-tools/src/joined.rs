//! [`Joined`]: several backends offered as one (a product's tools beside
//! an MCP server's).
//!
//! A call goes to the first backend that defines the tool; the catalog is
//! all of them, sorted, a name offered once (the first backend's). Skills
//! are joined the same way, and every backend hears each turn boundary.
//!
//! Not here: revision guards across backends — a joined backend has none,
//! so a product whose writes carry a guard is not joined.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use rein_wire::permission::{PermissionClass, Policy};
use rein_wire::{AgentError, Preview, ToolSpec, error::codes};
use serde_json::Value;

use crate::{Outcome, ToolBackend, ToolContext, ToolSummary};

/// Several backends as one.
pub struct Joined {
    parts: Vec<Arc<dyn ToolBackend>>,
}

impl Joined {
    /// `parts`, earlier ones first when two define one name.
    pub fn new(parts: Vec<Arc<dyn ToolBackend>>) -> Joined {
        Joined { parts }
    }

    fn owner(&self, name: &str) -> Option<&Arc<dyn ToolBackend>> {
        self.parts.iter().find(|p| p.definition(name).is_some())
    }
}

#[async_trait]
impl ToolBackend for Joined {
    fn catalog(&self, policy: &Policy) -> Vec<ToolSummary> {
        let mut all = BTreeMap::new();
        for part in &self.parts {
            for tool in part.catalog(policy) {
                all.entry(tool.name.clone()).or_insert(tool);
            }
        }
        all.into_values().collect()
    }

    fn definition(&self, name: &str) -> Option<ToolSpec> {
        self.parts.iter().find_map(|p| p.definition(name))
    }

    fn prepare(&self, name: &str, args: Value) -> Result<Value, AgentError> {
        match self.owner(name) {
            Some(part) => part.prepare(name, args),
            None => Ok(args),
        }
    }

    fn permission(&self, name: &str, args: &Value) -> Result<PermissionClass, AgentError> {
        match self.owner(name) {
            Some(part) => part.permission(name, args),
            None => {
                let known: Vec<String> = self
                    .catalog(&Policy::default())
                    .into_iter()
                    .map(|t| t.name)
                    .collect();
                Err(AgentError::new(
                    codes::TOOL_NOT_FOUND,
                    format!(
                        "there is no tool `{name}`; the tools are: {}",
                        known.join(", ")
                    ),
                ))
            }
        }
    }

    async fn invoke(&self, name: &str, args: Value, ctx: &ToolContext) -> Outcome {
        match self.owner(name) {
            Some(part) => part.invoke(name, args, ctx).await,
            None => Outcome::failed(codes::TOOL_NOT_FOUND, format!("there is no tool `{name}`")),
        }
    }

    async fn undo(&self, operation_id: &str) -> Option<Result<String, AgentError>> {
        for part in &self.parts {
            if let Some(undone) = part.undo(operation_id).await {
                return Some(undone);
            }
        }
        None
    }

    fn cacheable(&self, name: &str) -> bool {
        self.owner(name).is_some_and(|p| p.cacheable(name))
    }

    fn revision(&self) -> String {
        let parts: Vec<String> = self.parts.iter().map(|p| p.revision()).collect();
        parts.join("+")
    }

    fn purpose(&self, name: &str) -> Option<String> {
        self.owner(name)?.purpose(name)
    }

    fn preview(&self, name: &str, args: &Value) -> Option<Preview> {
        self.owner(name)?.preview(name, args)
    }

    fn changes(&self, name: &str, args: &Value) -> Option<rein_wire::Revision> {
        self.owner(name)?.changes(name, args)
    }

    fn read_first(&self, name: &str, args: &Value) -> Option<(String, Value)> {
        self.owner(name)?.read_first(name, args)
    }

    fn skills(&self) -> Vec<ToolSummary> {
        let mut all = BTreeMap::new();
        for part in &self.parts {
            for skill in part.skills() {
                all.entry(skill.name.clone()).or_insert(skill);
            }
        }
        all.into_values().collect()
    }

    fn read_skill(&self, name: &str) -> Option<String> {
        self.parts.iter().find_map(|p| p.read_skill(name))
    }

    fn turn_boundary(&self) -> Vec<String> {
        self.parts.iter().flat_map(|p| p.turn_boundary()).collect()
    }
}
