//! A call's one result: what a tool gave, masked (no key rein holds enters
//! the log or the model's next request), bounded (a large result offloaded
//! to an artifact), told to the UI and made the `tool.result` event; and a
//! call refused before it ran, recorded with its one error result.
//!
//! Not here: running the call (`calls`, `reads`).

use std::time::Duration;

use rein_approvals::PermissionClass;
use rein_sessions::{Event, ResultSource, ToolStatus};
use rein_tools::{Outcome, bound};
use rein_wire::{AgentError, ErrorCode};
use serde_json::Value;

use super::{Around, Gate};
use crate::conversation::folds::{refused, tool_error_content_with};
use crate::conversation::journal::Journal;
use rein_wire::UiKind;

impl Gate {
    /// The `tool.result` for an outcome, bounded (offloaded when too big).
    pub(super) async fn result_event(
        &self,
        cx: &Around<'_>,
        call_id: &str,
        outcome: Outcome,
        source: ResultSource,
        took: Duration,
    ) -> Result<Event, AgentError> {
        let duration_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        let event = match outcome {
            Outcome::Ok {
                mut result,
                operation_id,
                undo,
                seen,
                ..
            } => {
                let exit_code = result.get("exit_code").and_then(serde_json::Value::as_i64);
                // A key rein holds never enters the log (nor the model's
                // next request), whatever file the tool read it from.
                rein_wire::secrets::mask_named_json(&mut result, &cx.agent.guards.secrets);
                let (content, artifact) = bound(
                    &crate::artifacts::StoreArtifacts(cx.journal.store().as_ref()),
                    result,
                    &cx.agent.bounds,
                )
                .await?;
                let source = if artifact.is_some() {
                    ResultSource::Offload
                } else {
                    source
                };
                cx.journal.emit(UiKind::ToolResult {
                    call_id: call_id.to_owned(),
                    ok: true,
                    source,
                    undo: if undo { operation_id.clone() } else { None },
                    error: None,
                    duration_ms,
                    exit_code,
                });
                Event::ToolResult {
                    call_id: call_id.to_owned(),
                    status: ToolStatus::Ok,
                    source,
                    content,
                    artifact,
                    operation_id,
                    undo,
                    duration_ms,
                    seen,
                }
            }
            Outcome::Failed {
                code,
                message,
                mut detail,
                ..
            } => {
                let message = rein_wire::secrets::mask(&message, &cx.agent.guards.secrets);
                if let Some(detail) = detail.as_mut() {
                    rein_wire::secrets::mask_named_json(detail, &cx.agent.guards.secrets);
                }
                cx.journal.emit(UiKind::ToolResult {
                    call_id: call_id.to_owned(),
                    ok: false,
                    source: ResultSource::Live,
                    undo: None,
                    error: Some((code.clone(), message.clone())),
                    duration_ms,
                    exit_code: None,
                });
                Event::ToolResult {
                    call_id: call_id.to_owned(),
                    status: ToolStatus::Error,
                    source,
                    content: tool_error_content_with(&code, &message, detail.as_ref()),
                    artifact: None,
                    operation_id: None,
                    undo: false,
                    duration_ms,
                    seen: None,
                }
            }
        };
        Ok(event)
    }
}

/// A call that will not run: its `tool.called` and its one error
/// result, appended together, and the UI told.
pub(super) async fn refuse(
    journal: &mut Journal,
    call_id: &str,
    tool: &str,
    args: &Value,
    permission: Option<PermissionClass>,
    code: &ErrorCode,
    message: &str,
) -> Result<(), AgentError> {
    journal
        .append(refused(call_id, tool, args.clone(), permission, code, message).into())
        .await?;
    shown_refused(journal, call_id, code, message);
    Ok(())
}

/// Shows the surfaces a call refused before it ran (the log already holds
/// its result).
pub(super) fn shown_refused(journal: &Journal, call_id: &str, code: &ErrorCode, message: &str) {
    journal.emit(UiKind::ToolResult {
        call_id: call_id.to_owned(),
        ok: false,
        source: ResultSource::Live,
        undo: None,
        error: Some((code.clone(), message.to_owned())),
        duration_ms: 0,
        exit_code: None,
    });
}
