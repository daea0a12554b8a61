//! A backend narrowed to some of its tools: what a child agent gets when
//! it names fewer tools than its parent has (tools only narrow; a name the
//! parent lacks is not offered, and a call to it is `tool_not_found`).
//!
//! Not here: which names (`Agent::child`).

use std::sync::Arc;

use async_trait::async_trait;
use rein_approvals::{PermissionClass, Policy};
use rein_tools::{Outcome, ToolBackend, ToolContext, ToolSummary};
use rein_wire::{AgentError, ToolSpec, error::codes};
use serde_json::Value;

/// The parent's tools narrowed to the names a `delegate` call gave.
pub(crate) struct Narrowed {
    pub(crate) inner: Arc<dyn ToolBackend>,
    pub(crate) names: Vec<String>,
}

impl Narrowed {
    fn has(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }
}

#[async_trait]
impl ToolBackend for Narrowed {
    fn catalog(&self, policy: &Policy) -> Vec<ToolSummary> {
        let mut tools = self.inner.catalog(policy);
        tools.retain(|t| self.has(&t.name));
        tools
    }

    fn definition(&self, name: &str) -> Option<ToolSpec> {
        self.inner.definition(name).filter(|_| self.has(name))
    }

    fn prepare(&self, name: &str, args: Value) -> Result<Value, AgentError> {
        self.inner.prepare(name, args)
    }

    fn permission(&self, name: &str, args: &Value) -> Result<PermissionClass, AgentError> {
        if !self.has(name) {
            return Err(AgentError::new(
                codes::TOOL_NOT_FOUND,
                format!("`{name}` is not one of the tools this sub-agent was given"),
            ));
        }
        self.inner.permission(name, args)
    }

    async fn invoke(&self, name: &str, args: Value, ctx: &ToolContext) -> Outcome {
        if !self.has(name) {
            return Outcome::failed(
                codes::TOOL_NOT_FOUND,
                format!("`{name}` is not one of the tools this sub-agent was given"),
            );
        }
        self.inner.invoke(name, args, ctx).await
    }

    async fn undo(&self, operation_id: &str) -> Option<Result<String, AgentError>> {
        self.inner.undo(operation_id).await
    }

    fn cacheable(&self, name: &str) -> bool {
        self.inner.cacheable(name)
    }

    fn revision(&self) -> String {
        self.inner.revision()
    }

    fn purpose(&self, name: &str) -> Option<String> {
        self.inner.purpose(name)
    }

    fn preview(&self, name: &str, args: &Value) -> Option<rein_wire::Preview> {
        self.inner.preview(name, args)
    }

    fn changes(&self, name: &str, args: &Value) -> Option<rein_wire::Revision> {
        self.inner.changes(name, args)
    }

    fn read_first(&self, name: &str, args: &Value) -> Option<(String, Value)> {
        self.inner.read_first(name, args)
    }

    fn revision_guard(&self) -> Option<rein_tools::RevisionGuard> {
        self.inner.revision_guard()
    }

    fn skills(&self) -> Vec<ToolSummary> {
        self.inner.skills()
    }

    fn read_skill(&self, name: &str) -> Option<String> {
        self.inner.read_skill(name)
    }
}
