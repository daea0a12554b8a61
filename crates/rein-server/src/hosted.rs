//! `/api/agents/sessions`: the hosted sessions live now — another agent's
//! run that a person can watch and take over — each with its mode, when it
//! opened, who watches and who holds the input; the page lists them.
//! Names and counts only: what a session shows is seen by attaching.
//!
//! The server does not host them: whoever mounts it says where they are
//! ([`Server::with_hosted`]; `rein serve` asks the sessions served under
//! its home). A server told of none lists none.
//!
//! Not here: hosting and attaching (`rein-host`).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use futures::future::BoxFuture;
use rein_wire::hosted::Listed;
use serde_json::json;

use crate::Server;
use crate::problem::Answered;

/// What lists the hosted sessions live now.
pub type HostedSessions = Arc<dyn Fn() -> BoxFuture<'static, Vec<Listed>> + Send + Sync>;

/// The hosted sessions live now, oldest first.
#[utoipa::path(get, path = "/api/agents/sessions",
    responses((status = 200, description = "The live hosted sessions: mode, opened at, viewers, holder")))]
pub(crate) async fn list_hosted(State(server): State<Server>) -> Answered {
    let sessions = match &server.inner.hosted {
        Some(list) => list().await,
        None => Vec::new(),
    };
    Ok(Json(json!({"sessions": sessions})).into_response())
}
