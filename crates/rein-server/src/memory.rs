//! `/api/memory`: a person sees and edits the server's memory — one
//! scope of a store, the one its agent remembers in — from a script or
//! the page's memory panel: list (newest first) or search, add, forget,
//! and the history of what was remembered and forgotten (never a
//! forgotten item's text). Only that scope is reached: an id of another
//! scope is `memory_not_found`, as the store decides.
//!
//! Not here: the store and its bounds (`rein-memory`), the guards every
//! route passes first (`auth`).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use rein_memory::{MemoryBank, NewMemory, Scope, Source};
use rein_wire::{AgentError, error::codes};
use serde::Deserialize;
use serde_json::json;
use utoipa::{IntoParams, ToSchema};

use crate::Server;
use crate::problem::{Answered, Problem};

/// The memory a server shows: one scope of a store.
#[derive(Clone)]
pub(crate) struct Shown {
    pub(crate) store: Arc<dyn MemoryBank>,
    pub(crate) scope: Scope,
}

fn shown(server: &Server) -> Result<&Shown, Problem> {
    server.inner.memory.as_ref().ok_or_else(|| {
        Problem(AgentError::new(
            codes::MEMORY_OFF,
            "this server keeps no memory",
        ))
    })
}

#[derive(Debug, Deserialize, IntoParams)]
pub(crate) struct Listing {
    /// Words to search for (any of them); none: the newest items.
    #[serde(default)]
    q: Option<String>,
    /// At most this many (default 50; the store's bound applies).
    #[serde(default)]
    limit: Option<usize>,
}

/// The scope's items, newest first, or those matching `q`, best first.
#[utoipa::path(get, path = "/api/memory", params(Listing),
    responses((status = 200, description = "The scope and its items"), (status = 404, description = "No memory here")))]
pub(crate) async fn list_memory(
    State(server): State<Server>,
    Query(listing): Query<Listing>,
) -> Answered {
    let memory = shown(&server)?;
    let limit = listing.limit.unwrap_or(50);
    let items = match listing.q.as_deref().filter(|q| !q.trim().is_empty()) {
        Some(query) => memory
            .store
            .search(&memory.scope, query, limit)
            .await?
            .into_iter()
            .map(|found| found.item)
            .collect(),
        None => memory.store.list(&memory.scope, limit).await?,
    };
    Ok(Json(json!({"scope": memory.scope, "items": items})).into_response())
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Remember {
    /// The text.
    text: String,
    /// Tags.
    #[serde(default)]
    tags: Vec<String>,
    /// In every prompt of the agent (from its next turn).
    #[serde(default)]
    pinned: bool,
}

/// Remember something by hand (a person's item: no session).
#[utoipa::path(post, path = "/api/memory", request_body = Remember,
    responses((status = 201, description = "The item kept"), (status = 409, description = "The scope is full")))]
pub(crate) async fn add_memory(
    State(server): State<Server>,
    payload: Result<Json<Remember>, axum::extract::rejection::JsonRejection>,
) -> Answered {
    let memory = shown(&server)?;
    let asked = crate::problem::body(payload)?;
    let new = NewMemory {
        text: asked.text,
        tags: asked.tags,
        source: Source::default(),
        pinned: asked.pinned,
    };
    let item = memory.store.remember(&memory.scope, new).await?;
    Ok((StatusCode::CREATED, Json(item)).into_response())
}

/// Forget an item for good: gone from the store and every later prompt;
/// the history keeps that it was forgotten, not its text.
#[utoipa::path(delete, path = "/api/memory/{item}", params(("item" = String, Path)),
    responses((status = 200, description = "Forgotten"), (status = 404, description = "No such item in this scope")))]
pub(crate) async fn forget_memory(
    State(server): State<Server>,
    Path(item): Path<String>,
) -> Answered {
    let memory = shown(&server)?;
    memory
        .store
        .forget(&memory.scope, &item, &Source::default())
        .await?;
    Ok(Json(json!({"forgot": item})).into_response())
}

#[derive(Debug, Deserialize, IntoParams)]
pub(crate) struct HistoryQuery {
    /// At most this many (default 50; the store's bound applies).
    #[serde(default)]
    limit: Option<usize>,
}

/// What was remembered and forgotten in the scope, newest first, and by
/// which session's call (or a person).
#[utoipa::path(get, path = "/api/memory/history", params(HistoryQuery),
    responses((status = 200, description = "The scope's changes")))]
pub(crate) async fn memory_history(
    State(server): State<Server>,
    Query(asked): Query<HistoryQuery>,
) -> Answered {
    let memory = shown(&server)?;
    let changes = memory
        .store
        .history(&memory.scope, asked.limit.unwrap_or(50))
        .await?;
    Ok(Json(json!({"scope": memory.scope, "changes": changes})).into_response())
}
