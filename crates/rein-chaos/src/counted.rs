//! rein's own file tools, with every execution counted on disk.
//!
//! Before a call reaches the file tools, one line (`call_id`, tool) is
//! appended to the executions file and synced, so a process killed at any
//! point leaves a count that is never short: a call that ran is always
//! listed (a listed call may have been killed before its effect). The check
//! holds the count against the log: no change ran twice.
//!
//! Not here: the tools themselves (`rein-files`), the check (`check`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_tools::{Outcome, Registry, ToolBackend, ToolContext, ToolSummary};
use rein_wire::permission::{PermissionClass, Policy};
use rein_wire::{AgentError, Preview, Revision, ToolSpec};
use serde_json::Value;

/// The file the executions are counted in, inside a trial's folder.
pub const EXECUTIONS: &str = "executions.tsv";

/// The file tools over a root, counted.
pub struct Counted {
    inner: Arc<Registry>,
    log: PathBuf,
}

impl Counted {
    /// rein's file tools over `root`, counted in `dir`'s executions file.
    pub fn new(inner: Arc<Registry>, dir: &Path) -> Self {
        Counted {
            inner,
            log: dir.join(EXECUTIONS),
        }
    }

    fn count(&self, call_id: &str, tool: &str) -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        file.write_all(format!("{call_id}\t{tool}\n").as_bytes())?;
        file.sync_data()
    }
}

/// The executions counted in `dir`: (call id, tool), in order.
pub fn executions(dir: &Path) -> std::io::Result<Vec<(String, String)>> {
    let text = match std::fs::read_to_string(dir.join(EXECUTIONS)) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(err),
    };
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(c, t)| (c.to_owned(), t.to_owned()))
        .collect())
}

#[async_trait::async_trait]
impl ToolBackend for Counted {
    fn catalog(&self, policy: &Policy) -> Vec<ToolSummary> {
        self.inner.catalog(policy)
    }
    fn definition(&self, name: &str) -> Option<ToolSpec> {
        self.inner.definition(name)
    }
    fn prepare(&self, name: &str, args: Value) -> Result<Value, AgentError> {
        self.inner.prepare(name, args)
    }
    fn permission(&self, name: &str, args: &Value) -> Result<PermissionClass, AgentError> {
        self.inner.permission(name, args)
    }
    async fn invoke(&self, name: &str, args: Value, ctx: &ToolContext) -> Outcome {
        if let Err(err) = self.count(&ctx.call_id, name) {
            return Outcome::failed(
                "io_error",
                format!("the executions could not be counted: {err}"),
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
    fn preview(&self, name: &str, args: &Value) -> Option<Preview> {
        self.inner.preview(name, args)
    }
    fn changes(&self, name: &str, args: &Value) -> Option<Revision> {
        self.inner.changes(name, args)
    }

    fn read_first(&self, name: &str, args: &Value) -> Option<(String, Value)> {
        self.inner.read_first(name, args)
    }
    fn revision_guard(&self) -> Option<rein_tools::RevisionGuard> {
        self.inner.revision_guard()
    }
}
