//! The [`ToolBackend`] contract.

use async_trait::async_trait;
use rein_wire::permission::{PermissionClass, Policy};
use rein_wire::{AgentError, ErrorCode, Preview, Revision, ToolSpec};
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

/// The product's own context for its tools (a database pool, the signed-in
/// user, a tenant): opaque to rein, typed for the tool that reads it.
#[derive(Clone, Default)]
pub struct AppContext(Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>);

impl AppContext {
    /// Context holding `value`.
    pub fn new<T: std::any::Any + Send + Sync>(value: T) -> Self {
        AppContext(Some(std::sync::Arc::new(value)))
    }

    /// The value, if there is one of type `T`.
    pub fn get<T: std::any::Any + Send + Sync>(&self) -> Option<&T> {
        self.0.as_deref().and_then(|v| v.downcast_ref::<T>())
    }

    /// Whether a product set one.
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }
}

impl std::fmt::Debug for AppContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "AppContext(set)"
        } else {
            "AppContext(none)"
        })
    }
}

/// What a running call knows.
#[derive(Debug, Clone, Default)]
pub struct ToolContext {
    /// The model's call id.
    pub call_id: String,
    /// The session the call is recorded in (empty outside a conversation).
    pub session: String,
    /// Whether a person approved this call (the tool may skip its own
    /// confirmation).
    pub elevated: bool,
    /// Whether a person said yes to this very call (a lease does not
    /// count): what a protected write needs, checked again by the tool on
    /// the path it actually opens.
    pub asked: bool,
    /// The conversation's policy (egress allow-list, writes allowed).
    pub policy: Policy,
    /// Where the call reports how far it got (for the person watching).
    pub progress: crate::Progress,
    /// The product's context (see [`AppContext`]).
    pub app: AppContext,
}

/// A write's move of a revision guard: `scope` went from `before` to `after`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Advanced {
    /// What the revision counts (a project, a table, …).
    pub scope: String,
    /// The revision the write started from.
    pub before: String,
    /// The revision it left.
    pub after: String,
}

/// A backend's optimistic-concurrency guard: the arguments of a write that
/// name the scope and the revision it expects. Writes a model sends together
/// each name the revision it read before the first ran; the runner carries
/// each one forward past the turn's own earlier writes, and only those.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevisionGuard {
    /// The argument naming the scope (`None`: one scope, `default`).
    pub scope_arg: Option<String>,
    /// The argument carrying the expected revision.
    pub expected_arg: String,
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
        /// The revision guard it moved, if it moved one.
        advanced: Option<Advanced>,
        /// The resource it read or left, at the revision it read or left
        /// it (a file's content hash): what the conversation has seen, for
        /// the read-before-write rule (see [`ToolBackend::changes`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seen: Option<Revision>,
    },
    /// It failed.
    Failed {
        /// A stable code (rein's, or an outside one kept as its text).
        code: ErrorCode,
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
            advanced: None,
            seen: None,
        }
    }

    /// This success, saying it read or left `revision` (a failure is
    /// unchanged: it saw nothing).
    #[must_use]
    pub fn seen(mut self, revision: Revision) -> Self {
        if let Outcome::Ok { seen, .. } = &mut self {
            *seen = Some(revision);
        }
        self
    }

    /// A failure with a code and message.
    pub fn failed(code: impl Into<ErrorCode>, message: impl Into<String>) -> Self {
        Outcome::Failed {
            code: code.into(),
            message: message.into(),
            detail: None,
            retryable: false,
        }
    }

    /// A failure from an [`AgentError`].
    pub fn from_error(err: &AgentError) -> Self {
        Outcome::Failed {
            code: err.code.clone(),
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

    /// Normalise a call's arguments once, before anything else looks at
    /// them (a path made canonical, a default filled in), so the policy,
    /// the person and the execution all see the same input. Must be pure:
    /// the same arguments give the same result (a resumed run prepares
    /// again). An `Err` refuses the call. Default: unchanged.
    fn prepare(&self, _name: &str, args: Value) -> Result<Value, AgentError> {
        Ok(args)
    }

    /// The permission class of this call. Validates the arguments first:
    /// an unknown tool or invalid arguments is an `Err` with a code the
    /// model can read (`tool_not_found`, `tool_arguments_invalid`), and so
    /// is a call that could never run (the tool's own code, e.g.
    /// `outside_root`): the runner refuses it before gating it, so a
    /// person is never asked about it.
    fn permission(&self, name: &str, args: &Value) -> Result<PermissionClass, AgentError>;

    /// Run a call whose arguments passed [`ToolBackend::permission`].
    async fn invoke(&self, name: &str, args: Value, ctx: &ToolContext) -> Outcome;

    /// Undo a change one of its calls made, named by the operation id the
    /// result gave (with `undo` set): `None` when the id is none of its
    /// own; else what was put back, or why not (`changed_since`: it changed
    /// after the call, and nothing is touched). A person's surface asks it
    /// (`Conversation::undo`), never the model. Default: nothing to undo.
    async fn undo(&self, _operation_id: &str) -> Option<Result<String, AgentError>> {
        None
    }

    /// Whether results of `name` may be cached per revision.
    fn cacheable(&self, name: &str) -> bool;

    /// A token that changes whenever anything a cacheable read could see changes.
    fn revision(&self) -> String;

    /// What a tool does, for the person approving a call (default: its
    /// description's first line).
    fn purpose(&self, name: &str) -> Option<String> {
        self.definition(name)
            .map(|d| d.description.lines().next().unwrap_or("").to_owned())
    }

    /// What a person approving this call is shown (see [`Tool::preview`]);
    /// asked only for a call that waits for a person. Default: nothing.
    ///
    /// [`Tool::preview`]: crate::Tool::preview
    fn preview(&self, _name: &str, _args: &Value) -> Option<Preview> {
        None
    }

    /// What this call would change, at the revision it has now (a file's
    /// path and content hash; no token: it does not exist yet). The runner
    /// holds it against what the conversation has seen — the `seen` of
    /// earlier results — and refuses, before anyone is asked, a change to
    /// something that exists and was not seen as it is now (`not_read`,
    /// `changed_since_read`); a person's approval binds to it too
    /// (`changed_since_approval`). Default: nothing (no such rule).
    fn changes(&self, _name: &str, _args: &Value) -> Option<Revision> {
        None
    }

    /// The read call (a tool and its arguments) that shows what this call
    /// would change as it is now — `edit_file`'s is `read_file` of its
    /// path. When a change is refused as not read (`not_read`,
    /// `changed_since_read`), the runner makes that read, where the
    /// person's guards would run it unasked, and answers with what it
    /// found, counted as read: the model's next call can be the change.
    /// Default: none.
    fn read_first(&self, _name: &str, _args: &Value) -> Option<(String, Value)> {
        None
    }

    /// The write guard, if the backend's writes carry one.
    fn revision_guard(&self) -> Option<RevisionGuard> {
        None
    }

    /// The product's runtime skills: named instructions the model may read
    /// when it needs them (listed by name and summary, sorted).
    fn skills(&self) -> Vec<ToolSummary> {
        Vec::new()
    }

    /// A skill's text.
    fn read_skill(&self, _name: &str) -> Option<String> {
        None
    }

    /// A turn is starting. A backend whose catalog can change while it
    /// lives (MCP servers joining late, `tools/list_changed`) takes the
    /// changes in here and only here, so [`ToolBackend::catalog`] and
    /// [`ToolBackend::definition`] stay the same for a whole turn and the
    /// stable prefix of a running turn never changes. Returns what changed,
    /// one line each for the person (empty: nothing changed — the runner
    /// then keeps its frozen prefix). Default: a fixed catalog.
    fn turn_boundary(&self) -> Vec<String> {
        Vec::new()
    }
}
