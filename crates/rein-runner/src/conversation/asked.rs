//! What a person is asked: the approvals pending in the log, as the
//! requests a surface shows — after a restart too.
//!
//! Not here: deciding them (`surface`, `rein_approvals::decide`).

use rein_sessions::Event;
use rein_tools::ToolBackend;
use rein_wire::{AgentError, error::codes};
use serde_json::Value;

use super::journal::Journal;
use crate::outcome::{MAX_SHOWN_ARGUMENTS, TurnOutcome};
use rein_wire::ApprovalRequest;

/// The approvals waiting for a person, oldest first — after a restart
/// too (they are read from the log).
pub(super) async fn pending(
    journal: &mut Journal,
    tools: &dyn ToolBackend,
) -> Result<Vec<ApprovalRequest>, AgentError> {
    let control = journal.control().await?;
    let events = journal.log().await?;
    let evidence = journal.evidence_through();
    Ok(control
        .pending
        .iter()
        // One asked in imported history is asked again, not answered.
        .filter(|p| {
            rein_sessions::recovery::approval_request(&events, &p.approval_id)
                .is_none_or(|asked| asked.seq > evidence)
        })
        .map(|p| {
            let asked = rein_sessions::recovery::approval_request(&events, &p.approval_id);
            let arguments = rein_sessions::recovery::approval_arguments(&events, &p.approval_id);
            let text = arguments.to_string();
            let arguments = if text.chars().count() > MAX_SHOWN_ARGUMENTS {
                Value::String(text.chars().take(MAX_SHOWN_ARGUMENTS).collect())
            } else {
                arguments
            };
            ApprovalRequest {
                approval_id: p.approval_id.clone(),
                call_id: p.call_id.clone(),
                tool: p.tool.clone(),
                arguments,
                permission: p.permission,
                purpose: tools.purpose(&p.tool),
                preview: asked.and_then(|e| match &e.event {
                    Event::ApprovalRequested { preview, .. } => preview.clone(),
                    _ => None,
                }),
                agent_path: asked
                    .map_or_else(|| journal.agent().into(), |e| e.agent_path.as_str().into()),
            }
        })
        .collect())
}

/// The outcome of a turn that waits on `approval_id`: what the person
/// is asked.
pub(super) async fn awaiting(
    journal: &mut Journal,
    tools: &dyn ToolBackend,
    approval_id: &str,
) -> Result<TurnOutcome, AgentError> {
    let asked = pending(journal, tools)
        .await?
        .into_iter()
        .find(|a| a.approval_id == approval_id)
        .ok_or_else(|| {
            AgentError::new(
                codes::INTERNAL,
                format!("approval `{approval_id}` was asked for but is not pending"),
            )
        })?;
    Ok(TurnOutcome::AwaitingApproval(asked))
}
