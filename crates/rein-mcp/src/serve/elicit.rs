//! Asking an MCP client's person about an approval (form elicitation).
//!
//! Only when the served settings allow it. The answer goes through
//! [`rein_approvals::decide`] like any surface's, recorded as
//! `mcp-elicitation:CLIENT`; a client that cannot elicit, cancels, or does
//! not answer in time decides nothing (the approval still waits for
//! `rein approve`).

use std::sync::Arc;
use std::time::Duration;

use rein_approvals::{Answer, LeaseScope, Surface};
use rein_runner::ApprovalRequest;
use rein_sessions::Store;
use rmcp::service::ElicitationError;
use rmcp::{Peer, RoleServer};
use serde::Deserialize;

/// What the person is asked to fill in.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Decision {
    /// Approve the call (true) or refuse it (false).
    approve: bool,
}

rmcp::elicit_safe!(Decision);

pub(super) async fn ask(
    peer: Peer<RoleServer>,
    store: Arc<dyn Store>,
    session: String,
    request: ApprovalRequest,
    client: String,
    wait: Duration,
) {
    let shown: String = request.arguments.to_string().chars().take(2000).collect();
    let message = format!(
        "rein asks before running `{}` ({}): {shown}\nApprove it?",
        request.tool,
        request.permission.as_str()
    );
    let answer = match peer
        .elicit_with_timeout::<Decision>(message, Some(wait))
        .await
    {
        Ok(Some(Decision { approve: true })) => Answer::Approve(LeaseScope::Once),
        Ok(Some(Decision { approve: false })) | Err(ElicitationError::UserDeclined) => Answer::Deny,
        Ok(None) | Err(_) => return,
    };
    let surface = Surface::product("mcp-elicitation", &client);
    if let Err(err) = rein_approvals::decide(
        store.as_ref(),
        &session,
        &request.approval_id,
        answer,
        &surface,
    )
    .await
    {
        tracing::info!(code = %err.code, "an elicited answer was not recorded (decided elsewhere first?)");
    }
}
