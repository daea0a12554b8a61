//! Undo for the file tools: before a write, edit or delete changes a file,
//! what it held is kept in the session's store (an artifact) — before, so
//! a crash during the change leaves it undoable — and the result names an
//! operation a person can undo (`/undo`). Undo restores
//! that content — or removes a file the change created — only when the
//! file is still exactly what the change left; otherwise it refuses with
//! `changed_since` and touches nothing.
//!
//! Not here: which operation is next to undo (`rein_sessions::recovery::
//! last_undoable`, a fold over the log) or how the model is told (the
//! runner's `Conversation::record_undone`, called by the surface).

use std::sync::Arc;

use rein_sessions::{Slice, Store, hash_hex};
use rein_tools::Outcome;
use rein_wire::{AgentError, error::codes};
use serde_json::{Value, json};

use super::Root;

/// The prefix of the file tools' operation ids.
const FILE_OP: &str = "file:";

/// What a file held before a change, as far as it could be read.
pub enum Before {
    /// These bytes, with these permission bits.
    Bytes(Vec<u8>, Option<u32>),
    /// A symbolic link to this (a delete removes the link itself).
    Link(std::path::PathBuf),
    /// Nothing: the file did not exist.
    Absent,
    /// It could not be read (too large, refused): the change is not undoable.
    Unknown,
}

impl Before {
    /// What `path` holds now.
    pub fn of(root: &Root, path: &str) -> Self {
        Before::keepable(root, path).unwrap_or(Before::Unknown)
    }

    /// What `path` holds now, or why it could not be kept for undo (too
    /// large, unreadable): a change the person could not undo is refused
    /// with that reason, before anyone is asked and again before it runs.
    pub fn keepable(root: &Root, path: &str) -> Result<Self, AgentError> {
        match root.read(path) {
            Ok(bytes) => Ok(Before::Bytes(bytes, root.mode(path))),
            Err(refused) if refused.code == codes::FILE_NOT_FOUND => Ok(Before::Absent),
            Err(refused) => Err(AgentError::new(
                refused.code,
                format!(
                    "{}; rein keeps what a change replaces so that it can be undone, and cannot keep this, so it is left as it is",
                    refused.message
                ),
            )),
        }
    }
}

/// Where the file tools keep what a change replaced: the session's store.
#[derive(Clone)]
pub struct Stash(pub Arc<dyn Store>);

impl Stash {
    /// The undo a file tool keeping its changes here offers: `None` for an
    /// operation the file tools did not make.
    pub(crate) async fn undo_in(
        &self,
        root: &Root,
        op: &str,
    ) -> Option<Result<String, AgentError>> {
        if !op.starts_with(FILE_OP) {
            return None;
        }
        Some(undo(root, self.0.as_ref(), op).await)
    }

    /// Keep what `path` holds (`before`) and what the change will leave
    /// (`after`; `None`: it removes it) in the store, before the change
    /// runs, so a crash after it still leaves it undoable: the id of the
    /// operation that undoes it, or `None` when it cannot be undone (what
    /// was there is unknown, or the store refused).
    pub async fn keep(&self, path: &str, before: &Before, after: Option<&[u8]>) -> Option<String> {
        let record = match before {
            Before::Unknown => return None,
            Before::Link(target) => {
                json!({"path": path, "link": target.to_string_lossy(), "after": Value::Null})
            }
            Before::Absent => {
                json!({"path": path, "before": Value::Null, "mode": Value::Null, "after": after.map(hash_hex)})
            }
            Before::Bytes(bytes, mode) => {
                let kept = self
                    .0
                    .put_artifact(bytes, "application/octet-stream")
                    .await
                    .ok()?;
                json!({"path": path, "before": kept.hash, "mode": mode, "after": after.map(hash_hex)})
            }
        };
        self.0
            .put_artifact(record.to_string().as_bytes(), "application/json")
            .await
            .ok()
            .map(|a| format!("{FILE_OP}{}", a.hash))
    }
}

/// `outcome`, naming the operation that undoes it (a failure is unchanged:
/// nothing happened to undo).
pub fn undoable(outcome: Outcome, operation: Option<String>) -> Outcome {
    match outcome {
        Outcome::Ok {
            result,
            advanced,
            seen,
            ..
        } => Outcome::Ok {
            result,
            undo: operation.is_some(),
            operation_id: operation,
            advanced,
            seen,
        },
        failed @ Outcome::Failed { .. } => failed,
    }
}

/// Undo the operation `op` (an id a file tool's result named): put back
/// what the file held before it — only when the file is still exactly what
/// the change left; otherwise `changed_since`, and nothing is touched. The
/// path it restored.
pub async fn undo(root: &Root, store: &dyn Store, op: &str) -> Result<String, AgentError> {
    let record = op.strip_prefix(FILE_OP).ok_or_else(|| {
        AgentError::new(
            codes::INVALID_INPUT,
            format!(
                "the last change (`{op}`) was not made by the file tools; undo it where it was made"
            ),
        )
    })?;
    let record: Value = serde_json::from_slice(&store.read_artifact(record, Slice::Whole).await?)
        .map_err(|e| {
        AgentError::new(
            codes::INTERNAL,
            format!("the undo record is unreadable: {e}"),
        )
    })?;
    let path = record["path"].as_str().unwrap_or_default().to_owned();
    // Only what the change left is undone: anything since wins.
    let now = match Before::of(root, &path) {
        Before::Bytes(bytes, _) => Some(hash_hex(&bytes)),
        Before::Absent if root.link_target(&path).is_none() => None,
        Before::Absent | Before::Link(_) | Before::Unknown => {
            return Err(AgentError::new(
                codes::CHANGED_SINCE,
                format!("`{path}` cannot be read now, so it is left as it is"),
            ));
        }
    };
    if now.as_deref() != record["after"].as_str() {
        return Err(AgentError::new(
            codes::CHANGED_SINCE,
            format!("`{path}` has changed since that change, so it is left as it is"),
        ));
    }
    if let Some(target) = record["link"].as_str() {
        root.make_link(&path, std::path::Path::new(target))
            .map_err(super::Refused::error)?;
    } else {
        restore(root, &path, &record, store).await?;
    }
    Ok(path)
}

/// Put back what an undo record says `path` held: its bytes and mode, or
/// nothing (the change created it). A person's undo of a change to a
/// protected path they approved restores it; one through a link that now
/// leads to a protected path is refused.
async fn restore(
    root: &Root,
    path: &str,
    record: &Value,
    store: &dyn Store,
) -> Result<(), AgentError> {
    match record["before"].as_str() {
        Some(hash) => {
            let bytes = store.read_artifact(hash, Slice::Whole).await?;
            let mode = record["mode"].as_u64().and_then(|m| u32::try_from(m).ok());
            root.write(path, &bytes, mode, root.names_protected(path))
                .map_err(super::Refused::error)?;
        }
        None => root
            .remove(path, root.names_protected(path))
            .map_err(super::Refused::error)?,
    }
    Ok(())
}
