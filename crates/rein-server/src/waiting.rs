//! What waits for a person in a conversation and its sub-agents (or in a
//! graph task's session): each pending approval with the session and agent
//! path that asked, the tool, its whole arguments and the change's
//! preview, for the API and the page to show exactly what would run.
//!
//! Not here: deciding one (`rein-approvals`, through the routes).

use rein_wire::AgentError;
use serde_json::{Value, json};

use crate::Server;

/// What waits for a person in `id` and its sub-agents.
pub(crate) async fn waiting_json(server: &Server, id: &str) -> Result<Value, AgentError> {
    let store = server.inner.store.as_ref();
    store.session(id).await?;
    waiting_of(
        server,
        &rein_approvals::family_read_cached(store, &server.inner.shown, id).await?,
    )
    .await
}

/// What waits for a person in a family already read.
pub(crate) async fn waiting_of(
    server: &Server,
    family: &[rein_approvals::Member],
) -> Result<Value, AgentError> {
    let waiting = rein_approvals::waiting_in(server.inner.store.as_ref(), family).await?;
    let listed: Vec<Value> = waiting
        .into_iter()
        .map(|w| {
            json!({
                "approval_id": w.approval_id,
                "session": w.session,
                "agent_path": w.agent_path,
                "tool": w.tool,
                "permission": w.permission,
                "arguments": w.arguments,
                "preview": w.preview,
            })
        })
        .collect();
    Ok(json!(listed))
}
