//! What a person does to a conversation's history besides a turn: fork it
//! into a new conversation, undo a change a tool made. Each the same rule
//! as the command line's (`rein sessions fork`, `/undo`), through the
//! library (`rein_trace::fork`, `Conversation::undo`).
//!
//! Not here: branching within a conversation, compaction (`routes`).

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use crate::Server;
use crate::auth::Caller;
use crate::problem::{Answered, body};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Fork {
    /// The finished turn the copy ends with (default: the last one).
    turn_id: Option<String>,
}

/// A new conversation from this one's history up to a finished turn, with
/// its metadata and `forked_from`; the copy is evidence (its approvals are
/// asked again), the first is untouched.
#[utoipa::path(post, path = "/api/conversations/{id}/fork", params(("id" = String, Path)), request_body = Fork,
    responses((status = 201, description = "The new conversation's id"), (status = 404, description = "No such conversation or turn")))]
pub(crate) async fn fork(
    State(server): State<Server>,
    Path(id): Path<String>,
    payload: Result<Json<Fork>, axum::extract::rejection::JsonRejection>,
) -> Answered {
    let fork = body(payload)?;
    let store = server.inner.store.as_ref();
    let forked = rein_trace::fork(store, &id, fork.turn_id.as_deref()).await?;
    let made = json!({"id": forked.session, "forked_from": {"id": id, "turn_id": forked.turn}});
    Ok((StatusCode::CREATED, Json(made)).into_response())
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Undo {
    /// The change to undo (default: the newest one still undoable).
    operation_id: Option<String>,
}

/// A person undoes a change a tool made (the same rule as the chat's
/// `/undo`: refused as `changed_since` when the thing changed after it);
/// the model is told at its next step.
#[utoipa::path(post, path = "/api/conversations/{id}/undo", params(("id" = String, Path)), request_body = Undo,
    responses((status = 200, description = "Undone"), (status = 409, description = "Changed since, or a turn runs")))]
pub(crate) async fn undo(
    State(server): State<Server>,
    Path(id): Path<String>,
    Extension(caller): Extension<Caller>,
    payload: Result<Json<Undo>, axum::extract::rejection::JsonRejection>,
) -> Answered {
    let undo = body(payload)?;
    let operation = undo.operation_id.as_deref();
    let undone = server
        .inner
        .between_turns(&id, "a turn runs: undo between turns", async |c| {
            c.undo(operation, &caller.surface()).await
        })
        .await?;
    Ok(Json(json!({"undone": undone})).into_response())
}
