//! The [`ToolBackend`] contract.

use async_trait::async_trait;
use rein_approvals::{PermissionClass, Policy};
use rein_wire::{AgentError, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as the catalog lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSummary {
    /// Its name.
    pub name: String,
    /// One line on what it is for.
    pub purpose: String,
}

/// What a running call knows.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The model's call id.
    pub call_id: String,
    /// Whether a person approved this call (the tool may skip its own
    /// confirmation).
    pub elevated: bool,
    /// The conversation's policy (egress allow-list, writes allowed).
    pub policy: Policy,
}

/// How a call ended. Domain failures are outcomes, not `Err`s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// It worked.
    Ok {
        /// The result, as JSON.
        result: Value,
        /// The backend's id for the operation (for undo and audit).
        operation_id: Option<String>,
        /// Whether it can be undone with that id.
        undo: bool,
        /// Whether it changed what the backend's revision token covers.
        revision_advanced: bool,
    },
    /// It failed.
    Failed {
        /// A stable code.
        code: String,
        /// What went wrong, for the model.
        message: String,
        /// Structured context.
        detail: Option<Value>,
        /// Whether trying again may help.
        retryable: bool,
    },
}

impl Outcome {
    /// A plain success.
    pub fn ok(result: Value) -> Self {
        Outcome::Ok {
            result,
            operation_id: None,
            undo: false,
            revision_advanced: false,
        }
    }

    /// A failure with a code and message.
    pub fn failed(code: &str, message: impl Into<String>) -> Self {
        Outcome::Failed {
            code: code.to_owned(),
            message: message.into(),
            detail: None,
            retryable: false,
        }
    }

    /// A failure from an [`AgentError`].
    pub fn from_error(err: &AgentError) -> Self {
        Outcome::Failed {
            code: err.code.to_string(),
            message: err.message.clone(),
            detail: err.detail.clone(),
            retryable: err.retryable,
        }
    }

    /// Whether it succeeded.
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok { .. })
    }
}

/// A product's tools, as rein sees them.
#[async_trait]
pub trait ToolBackend: Send + Sync {
    /// The tools offered under `policy`, sorted by name.
    fn catalog(&self, policy: &Policy) -> Vec<ToolSummary>;

    /// A tool's full definition (name, description, schema).
    fn definition(&self, name: &str) -> Option<ToolSpec>;

    /// The permission class of this call. Validates the arguments first:
    /// an unknown tool or invalid arguments is an `Err` with a code the
    /// model can read (`tool_not_found`, `tool_arguments_invalid`).
    fn permission(&self, name: &str, args: &Value) -> Result<PermissionClass, AgentError>;

    /// Run a call whose arguments passed [`ToolBackend::permission`].
    async fn invoke(&self, name: &str, args: Value, ctx: &ToolContext) -> Outcome;

    /// Whether results of `name` may be cached per revision.
    fn cacheable(&self, name: &str) -> bool;

    /// A token that changes whenever anything a cacheable read could see changes.
    fn revision(&self) -> String;
}
