//! Hooks: a product's (or a person's) code asked at fixed points of a turn.
//!
//! - `before_call`: may let the call go on, deny it, or edit its
//!   arguments — which are then checked again like the model's (schema,
//!   precheck, class, gate), so an edit cannot slip past the policy.
//! - `after_call`: may annotate the result the model reads.
//! - `before_model_call`: may deny the model call (the turn ends).
//! - `turn_end`: told how the turn ended.
//!
//! A hook is a Rust [`Hook`] in process, or an external command
//! ([`CommandHook`]: JSON on stdin, JSON on stdout, a timeout). A hook that
//! fails, times out, or answers with an effect its point does not take
//! fails closed: the call (or model call) is denied. Every effect is a
//! `hook.ran` event; a call's `before_call` record is read back on resume,
//! so a hook is never asked twice about one call and an approved call's
//! arguments cannot change under the approval.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use rein_wire::HookDid;
pub use rein_wire::HookPoint;

/// What a hook decided.
#[derive(Debug, Clone, PartialEq)]
pub enum HookEffect {
    /// Nothing to change.
    Continue,
    /// Refuse (before a call or a model call), saying why.
    Deny(String),
    /// Use these arguments instead (before a call).
    Edit(Value),
    /// Add this note to the result the model reads (after a call).
    Annotate(String),
}

/// What a hook is told.
#[derive(Debug, Clone)]
pub struct HookInput {
    /// Where it runs.
    pub point: HookPoint,
    /// The tool (calls only).
    pub tool: Option<String>,
    /// The call's arguments (calls only).
    pub arguments: Option<Value>,
    /// The result as recorded so far (`after_call`): `{"ok": …, …}`.
    pub result: Option<Value>,
    /// How the turn ended (`turn_end`).
    pub outcome: Option<rein_wire::Ending>,
    /// The product's context, as every tool call gets it: a product's
    /// hook decides with it (a tenant's rules). Never sent to a command
    /// hook.
    pub app: rein_tools::AppContext,
}

impl HookInput {
    /// As JSON (what a command hook reads on stdin).
    pub fn to_json(&self) -> Value {
        json!({
            "point": self.point.as_str(),
            "tool": self.tool,
            "arguments": self.arguments,
            "result": self.result,
            "outcome": self.outcome,
        })
    }
}

/// A boxed, sendable future.
pub type HookFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<HookEffect, String>> + Send + 'a>>;

/// A hook.
pub trait Hook: Send + Sync {
    /// Its name (in events).
    fn name(&self) -> &str;

    /// Whether it runs at `point`.
    fn hears(&self, point: HookPoint) -> bool;

    /// Decide. `Err` is a failure (which denies where denying is possible).
    fn run<'a>(&'a self, input: &'a HookInput) -> HookFuture<'a>;
}

/// The longest a command hook's answer may be.
const MAX_ANSWER: u64 = 64 * 1024;

/// A hook that is an external command: it reads [`HookInput::to_json`]
/// on stdin and answers one JSON object on stdout —
/// `{"effect": "continue"}`, `{"effect": "deny", "reason": "…"}`,
/// `{"effect": "edit", "arguments": {…}}`, `{"effect": "annotate", "note": "…"}`
/// — within its timeout. Its environment is only `PATH`.
#[derive(Debug, Clone)]
pub struct CommandHook {
    /// Its name.
    pub name: String,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// The points it hears.
    pub points: Vec<HookPoint>,
    /// How long it may take.
    pub timeout: Duration,
    /// Where it runs (rein's own when absent).
    pub cwd: Option<PathBuf>,
}

impl CommandHook {
    async fn ask(&self, input: &HookInput) -> Result<HookEffect, String> {
        let (program, args) = self.command.split_first().ok_or("an empty command")?;
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .env_clear()
            .envs(std::env::var_os("PATH").map(|p| ("PATH", p)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("it could not be started: {e}"))?;
        let asked = async {
            if let Some(mut stdin) = child.stdin.take() {
                let text = input.to_json().to_string();
                let _ = stdin.write_all(text.as_bytes()).await;
            }
            let mut answer = Vec::new();
            if let Some(stdout) = child.stdout.take() {
                stdout
                    .take(MAX_ANSWER)
                    .read_to_end(&mut answer)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            let status = child.wait().await.map_err(|e| e.to_string())?;
            Ok::<_, String>((status, answer))
        };
        let (status, answer) = tokio::time::timeout(self.timeout, asked)
            .await
            .map_err(|_| format!("it did not answer within {} ms", self.timeout.as_millis()))??;
        if !status.success() {
            return Err(format!("it exited with {status}"));
        }
        let value: Value =
            serde_json::from_slice(&answer).map_err(|e| format!("its answer is not JSON: {e}"))?;
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        match value.get("effect").and_then(Value::as_str) {
            Some("continue") => Ok(HookEffect::Continue),
            Some("deny") => Ok(HookEffect::Deny(text("reason"))),
            Some("edit") => value
                .get("arguments")
                .cloned()
                .map(HookEffect::Edit)
                .ok_or_else(|| "an edit without `arguments`".to_owned()),
            Some("annotate") => Ok(HookEffect::Annotate(text("note"))),
            other => Err(format!("an unknown effect {other:?}")),
        }
    }
}

impl Hook for CommandHook {
    fn name(&self) -> &str {
        &self.name
    }

    fn hears(&self, point: HookPoint) -> bool {
        self.points.contains(&point)
    }

    fn run<'a>(&'a self, input: &'a HookInput) -> HookFuture<'a> {
        Box::pin(self.ask(input))
    }
}

/// Whether `effect` is one `point` takes.
pub(crate) fn fits(point: HookPoint, effect: &HookEffect) -> bool {
    matches!(
        (point, effect),
        (_, HookEffect::Continue)
            | (
                HookPoint::BeforeCall,
                HookEffect::Deny(_) | HookEffect::Edit(_)
            )
            | (HookPoint::AfterCall, HookEffect::Annotate(_))
            | (HookPoint::BeforeModelCall, HookEffect::Deny(_))
    )
}

/// An effect's name and detail, as `hook.ran` records them.
pub(crate) fn recorded(effect: &Result<HookEffect, String>) -> (HookDid, Value) {
    match effect {
        Ok(HookEffect::Continue) => (HookDid::Continue, Value::Null),
        Ok(HookEffect::Deny(reason)) => (HookDid::Deny, json!(reason)),
        Ok(HookEffect::Edit(arguments)) => (HookDid::Edit, arguments.clone()),
        Ok(HookEffect::Annotate(note)) => (HookDid::Annotate, json!(note)),
        Err(why) => (HookDid::Failed, json!(why)),
    }
}
