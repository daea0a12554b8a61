//! The API's routes, each documented where it is declared: the OpenAPI
//! document at `/api/openapi.json` is generated from these declarations
//! (utoipa), so it lists exactly the routes that exist.
//!
//! Every route is behind `auth::guard`. A person's decision, words and
//! stop go through `rein-approvals` with `Surface::http` — the same rules
//! as the terminal and `rein approve` (a second decision is `conflict`).
//!
//! Not here: the guards (`auth`), running turns (`live`), the stream
//! (`events`).

use axum::Json;
use axum::extract::{DefaultBodyLimit, Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Sse};
use rein_approvals::Answer;
use rein_wire::{AgentError, error::codes};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::Server;
use crate::auth::Caller;
use crate::problem::{Answered, Problem, body};

#[derive(OpenApi)]
#[openapi(info(
    title = "rein",
    description = "Conversations, their events, and a person's decisions"
))]
struct Doc;

/// The API's routes, guarded, with the body bound and a problem+json 404.
pub(crate) fn router(server: Server) -> axum::Router {
    let (api, doc) = api_router().split_for_parts();
    let doc = completed(&doc);
    let limit = server.limits.body_bytes;
    api.route(
        "/api/openapi.json",
        axum::routing::get(move || {
            let doc = doc.clone();
            async move { Json(doc) }
        }),
    )
    .route("/", axum::routing::get(crate::page::index))
    .route("/app.js", axum::routing::get(crate::page::script))
    .route("/app.css", axum::routing::get(crate::page::style))
    .fallback(|| async {
        Problem(AgentError::new(
            codes::ROUTE_NOT_FOUND,
            "there is no such route",
        ))
    })
    .layer(DefaultBodyLimit::max(limit))
    .layer(axum::middleware::from_fn_with_state(
        server.clone(),
        crate::auth::guard,
    ))
    .layer(axum::middleware::from_fn(crate::problem::problems_only))
    .with_state(server)
}

fn api_router() -> OpenApiRouter<Server> {
    OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(login))
        .routes(routes!(list_conversations, create_conversation))
        .routes(routes!(get_conversation))
        .routes(routes!(post_turn))
        .routes(routes!(resume_turn))
        .routes(routes!(events))
        .routes(routes!(list_approvals))
        .routes(routes!(decide_approval))
        .routes(routes!(steer))
        .routes(routes!(interrupt))
        .routes(routes!(stop))
        .routes(routes!(branch))
        .routes(routes!(crate::history::fork))
        .routes(routes!(crate::history::undo))
        .routes(routes!(compact))
        .routes(routes!(list_agents))
        .routes(routes!(crate::hosted::list_hosted))
        .routes(routes!(
            crate::graphs::list_graphs,
            crate::graphs::post_graph
        ))
        .routes(routes!(crate::graphs::get_graph))
        .routes(routes!(crate::graphs::graph_events))
        .routes(routes!(crate::graphs::cancel_graph))
        .routes(routes!(report))
        .routes(routes!(
            crate::memory::list_memory,
            crate::memory::add_memory
        ))
        .routes(routes!(crate::memory::forget_memory))
        .routes(routes!(crate::memory::memory_history))
}

/// The OpenAPI document of every route (what `/api/openapi.json` serves).
pub fn api_doc() -> Value {
    let (_, doc) = api_router().split_for_parts();
    completed(&doc)
}

/// The generated document with what the declarations cannot say: every
/// error response (`problem`) and the links between operations (`links`).
fn completed(doc: &utoipa::openapi::OpenApi) -> Value {
    crate::links::linked(crate::problem::documented(
        serde_json::to_value(doc).unwrap_or(Value::Null),
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
struct LoginQuery {
    /// The one-time token from the URL `rein serve` printed.
    token: String,
}

/// Exchange the one-time login token for the session cookie (HttpOnly,
/// SameSite=Strict), then go to the page.
#[utoipa::path(get, path = "/api/login", params(LoginQuery),
    responses((status = 303, description = "The cookie is set"), (status = 401, description = "The token is wrong or used")))]
async fn login(State(server): State<Server>, Query(query): Query<LoginQuery>) -> Answered {
    let Some(cookie) = server.inner.secrets.exchange(&query.token) else {
        return Err(Problem(AgentError::new(
            codes::UNAUTHENTICATED,
            "the login token is wrong or was used already",
        )));
    };
    let set = format!(
        "{}={cookie}; HttpOnly; SameSite=Strict; Path=/",
        server.inner.cookie
    );
    Ok(([(header::SET_COOKIE, set)], Redirect::to("/")).into_response())
}

/// A conversation as lists show it.
async fn summary(server: &Server, id: &str) -> Result<Value, AgentError> {
    let store = server.inner.store.as_ref();
    let info = store.session(id).await?;
    let family = rein_approvals::family_read_cached(store, &server.inner.shown, id).await?;
    summary_of(server, &info, &family).await
}

/// [`summary`] of a conversation whose family's logs are read.
async fn summary_of(
    server: &Server,
    info: &rein_sessions::SessionInfo,
    family: &[rein_approvals::Member],
) -> Result<Value, AgentError> {
    let store = server.inner.store.as_ref();
    let id = info.id.as_str();
    let last = store.read(id, info.head_seq.max(1), 1).await?;
    let first_turn = store
        .read(id, 1, 3)
        .await?
        .into_iter()
        .find_map(|e| match e.event {
            rein_sessions::Event::TurnStarted { prompt, .. } => Some(prompt),
            _ => None,
        });
    let control = store.control(id).await?;
    let state = if server.inner.live.is_running(id) {
        "running"
    } else if !control.pending.is_empty() {
        "waiting"
    } else {
        "idle"
    };
    let report = rein_runner::report_of_family(id, family);
    let totals = report.all.as_ref().unwrap_or(&report.totals);
    let title = info.metadata["title"]
        .as_str()
        .map(str::to_owned)
        .or(first_turn)
        .unwrap_or_default();
    Ok(json!({
        "id": info.id,
        "title": title.chars().take(120).collect::<String>(),
        "model": info.metadata["model"],
        "created_ms": info.created_ms,
        "updated_ms": last.first().map_or(info.created_ms, |e| e.at_ms),
        "state": state,
        "cost_micro_usd": if totals.calls_without_cost == 0 { json!(totals.cost_micro_usd) } else { Value::Null },
        "pending_approvals": control.pending.len(),
        "head_seq": info.head_seq,
    }))
}

/// The conversations, newest first.
#[utoipa::path(get, path = "/api/conversations",
    responses((status = 200, description = "id, title, model, created and updated times, state, cost; a conversation whose log cannot be read is `unreadable`, with the problem")))]
async fn list_conversations(State(server): State<Server>) -> Answered {
    let sessions = server
        .inner
        .store
        .list_sessions(server.limits.listed)
        .await?;
    let mut listed = Vec::with_capacity(sessions.len());
    for session in sessions {
        // Sub-agents' and graph tasks' sessions are reached from their parent.
        if session.metadata.get("parent_session").is_some()
            || session.metadata.get("graph").is_some()
        {
            continue;
        }
        // One log that cannot be read is listed as such, never the list's end.
        listed.push(match summary(&server, &session.id).await {
            Ok(shown) => shown,
            Err(err) => json!({
                "id": session.id,
                "title": "",
                "model": session.metadata["model"],
                "created_ms": session.created_ms,
                "updated_ms": session.created_ms,
                "state": "unreadable",
                "problem": {"code": err.code, "message": err.message},
                "cost_micro_usd": Value::Null,
                "pending_approvals": 0,
                "head_seq": session.head_seq,
            }),
        });
    }
    Ok(Json(json!({"conversations": listed})).into_response())
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct NewConversation {
    /// A title for lists (default: the first thing said).
    #[serde(default)]
    title: Option<String>,
    /// The agent it runs (`GET /api/agents`; default: the server's own).
    #[serde(default)]
    agent: Option<String>,
}

/// Start a conversation (no turn yet).
#[utoipa::path(post, path = "/api/conversations", request_body = NewConversation,
    responses((status = 201, description = "Its id")))]
async fn create_conversation(
    State(server): State<Server>,
    payload: Result<Json<NewConversation>, axum::extract::rejection::JsonRejection>,
) -> Answered {
    let new = body(payload)?;
    let profile = &server.inner.agent(new.agent.as_deref())?.profile;
    let info = server
        .inner
        .store
        .create_session(json!({
            "surface": "http",
            "assistant": profile.name,
            "model": profile.model,
            "title": new.title,
            "agent": new.agent,
        }))
        .await?;
    Ok((StatusCode::CREATED, Json(json!({"id": info.id}))).into_response())
}

/// One conversation: its summary, turns and pending approvals.
#[utoipa::path(get, path = "/api/conversations/{id}", params(("id" = String, Path)),
    responses((status = 200, description = "The conversation"), (status = 404, description = "No such conversation")))]
async fn get_conversation(State(server): State<Server>, Path(id): Path<String>) -> Answered {
    // Each log of the conversation's family read once for all of it.
    let store = server.inner.store.as_ref();
    let info = store.session(&id).await?;
    let family = rein_approvals::family_read_cached(store, &server.inner.shown, &id).await?;
    let mut conversation = summary_of(&server, &info, &family).await?;
    conversation["turns"] = json!(store.turns(&id).await?);
    conversation["approvals"] = crate::waiting::waiting_of(&server, &family).await?;
    Ok(Json(conversation).into_response())
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct Said {
    /// What the person says.
    text: String,
}

/// A new turn: what the person says, and the check this turn alone must
/// pass.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct NewTurn {
    /// What the person says.
    text: String,
    /// A check the turn's answer must pass (it runs where the agent's own
    /// check runs, in its sandbox; an agent without one takes none).
    #[serde(default)]
    verify: Option<crate::live::TurnCheck>,
}

/// Say something as a new turn; it runs here, its events on the stream
/// (its end, `turn_finished`, carries the turn's and the run's ids).
#[utoipa::path(post, path = "/api/conversations/{id}/turns", params(("id" = String, Path)), request_body = NewTurn,
    responses((status = 202, description = "The turn runs"), (status = 409, description = "A turn is open"), (status = 423, description = "Another process drives it")))]
async fn post_turn(
    State(server): State<Server>,
    Path(id): Path<String>,
    Extension(caller): Extension<Caller>,
    payload: Result<Json<NewTurn>, axum::extract::rejection::JsonRejection>,
) -> Answered {
    let said = body(payload)?;
    if said.text.trim().is_empty() {
        return Err(Problem(AgentError::new(
            codes::INVALID_INPUT,
            "there is nothing to say",
        )));
    }
    let asked = crate::live::Asked {
        text: Some(said.text),
        check: said.verify,
    };
    crate::live::start_turn(
        &server.inner,
        server.budgets,
        &id,
        asked,
        caller.surface().name().to_owned(),
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"running": true}))).into_response())
}

/// Go on with the open turn (after a restart, or a decision made while
/// nobody drove it).
#[utoipa::path(post, path = "/api/conversations/{id}/resume", params(("id" = String, Path)),
    responses((status = 202, description = "The turn goes on"), (status = 400, description = "No turn is open")))]
async fn resume_turn(
    State(server): State<Server>,
    Path(id): Path<String>,
    Extension(caller): Extension<Caller>,
) -> Answered {
    crate::live::start_turn(
        &server.inner,
        server.budgets,
        &id,
        crate::live::Asked::default(),
        caller.surface().name().to_owned(),
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"running": true}))).into_response())
}

/// The conversation's events (SSE): `log` events with their sequence
/// number as id, resumable with `Last-Event-ID`; `ui` events live.
#[utoipa::path(get, path = "/api/conversations/{id}/events", params(("id" = String, Path), crate::events::After),
    responses((status = 200, description = "text/event-stream"), (status = 503, description = "Too many watchers")))]
async fn events(
    State(server): State<Server>,
    Path(id): Path<String>,
    Query(after): Query<crate::events::After>,
    headers: HeaderMap,
) -> Answered {
    let from = crate::events::resume_point(&headers, after.after)?;
    let watchers = server.limits.watchers_per_conversation;
    let (stream, keep) = crate::events::stream(server.inner.clone(), id, from, watchers).await?;
    Ok(Sse::new(stream).keep_alive(keep).into_response())
}

/// What waits for a person here and in the conversation's sub-agents,
/// with the agent path that asked and the change's preview.
#[utoipa::path(get, path = "/api/conversations/{id}/approvals", params(("id" = String, Path)),
    responses((status = 200, description = "The pending approvals")))]
async fn list_approvals(State(server): State<Server>, Path(id): Path<String>) -> Answered {
    Ok(
        Json(json!({"approvals": crate::waiting::waiting_json(&server, &id).await?}))
            .into_response(),
    )
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct Decision {
    /// `yes` or `no`.
    decision: String,
    /// With yes: the tool for the rest of the turn.
    #[serde(default)]
    always: bool,
}

/// Decide a pending approval (the conversation's or a sub-agent's), as
/// the person.
#[utoipa::path(post, path = "/api/conversations/{id}/approvals/{approval}",
    params(("id" = String, Path), ("approval" = String, Path)), request_body = Decision,
    responses((status = 200, description = "Decided"), (status = 409, description = "Decided already")))]
async fn decide_approval(
    State(server): State<Server>,
    Path((id, approval)): Path<(String, String)>,
    Extension(caller): Extension<Caller>,
    payload: Result<Json<Decision>, axum::extract::rejection::JsonRejection>,
) -> Answered {
    let decision = body(payload)?;
    let answer = Answer::decided(&decision.decision, decision.always).map_err(Problem)?;
    let delivery = rein_approvals::decide(
        server.inner.store.as_ref(),
        &id,
        &approval,
        answer,
        &caller.surface(),
    )
    .await?;
    Ok(Json(json!({"delivered": format!("{delivery:?}").to_lowercase()})).into_response())
}

/// Say something to the running turn (heard at its next step).
#[utoipa::path(post, path = "/api/conversations/{id}/steer", params(("id" = String, Path)), request_body = Said,
    responses((status = 202, description = "Queued for the next step")))]
async fn steer(
    State(server): State<Server>,
    Path(id): Path<String>,
    Extension(caller): Extension<Caller>,
    payload: Result<Json<Said>, axum::extract::rejection::JsonRejection>,
) -> Answered {
    let said = body(payload)?;
    server.inner.store.session(&id).await?;
    rein_approvals::say(
        server.inner.store.as_ref(),
        &id,
        &said.text,
        &caller.surface(),
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"queued": true}))).into_response())
}

/// Interrupt the turn running here (at its next step; at once if it
/// waits for a person, whose pending approvals are then stopped).
#[utoipa::path(post, path = "/api/conversations/{id}/interrupt", params(("id" = String, Path)),
    responses((status = 202, description = "Interrupting"), (status = 400, description = "No turn runs here")))]
async fn interrupt(State(server): State<Server>, Path(id): Path<String>) -> Answered {
    server.inner.live.interrupt(&id)?;
    Ok((StatusCode::ACCEPTED, Json(json!({"interrupting": true}))).into_response())
}

/// Stop the conversation's open turn, wherever it runs (its pending
/// approvals are refused, an open model stream is cut). With no turn open
/// it is `no_open_turn` and nothing is kept for the next turn.
#[utoipa::path(post, path = "/api/conversations/{id}/stop", params(("id" = String, Path)),
    responses((status = 202, description = "Stop asked"), (status = 409, description = "No turn is open")))]
async fn stop(
    State(server): State<Server>,
    Path(id): Path<String>,
    Extension(caller): Extension<Caller>,
) -> Answered {
    server.inner.store.session(&id).await?;
    let by = caller.surface();
    rein_approvals::stop(server.inner.store.as_ref(), &id, &by).await?;
    // A turn no one drives (the server restarted while it waited) ends
    // now; one running here or elsewhere hears the stop posted.
    if !server.inner.live.is_running(&id) {
        crate::live::stop_undriven(&server.inner, &id, by.name()).await?;
    }
    Ok((StatusCode::ACCEPTED, Json(json!({"stopping": true}))).into_response())
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct Branch {
    /// The earlier turn the next turn follows.
    turn_id: String,
}

/// Make the next turn follow an earlier one (the turns after it stay, on
/// their own branch).
#[utoipa::path(post, path = "/api/conversations/{id}/branch", params(("id" = String, Path)), request_body = Branch,
    responses((status = 200, description = "Branched"), (status = 409, description = "A turn runs")))]
async fn branch(
    State(server): State<Server>,
    Path(id): Path<String>,
    payload: Result<Json<Branch>, axum::extract::rejection::JsonRejection>,
) -> Answered {
    let branch = body(payload)?;
    let from = branch.turn_id.as_str();
    server
        .inner
        .between_turns(&id, "a turn runs: stop it first", async |c| {
            c.branch_from(from).await
        })
        .await?;
    Ok(Json(json!({"branched_from": branch.turn_id})).into_response())
}

/// Compact the conversation's history now (older complete groups become a
/// derived state and a summary; the log is never rewritten).
#[utoipa::path(post, path = "/api/conversations/{id}/compact", params(("id" = String, Path)),
    responses((status = 200, description = "Compacted"), (status = 409, description = "A turn runs")))]
async fn compact(State(server): State<Server>, Path(id): Path<String>) -> Answered {
    server
        .inner
        .between_turns(&id, "a turn runs: compact between turns", async |c| {
            c.compact_now().await
        })
        .await?;
    Ok(Json(json!({"compacted": id})).into_response())
}

/// The agents a conversation may be started with (`POST
/// /api/conversations {"agent": NAME}`): each one's name, model and the
/// names of its tools.
#[utoipa::path(get, path = "/api/agents",
    responses((status = 200, description = "The default agent and the named ones")))]
async fn list_agents(State(server): State<Server>) -> Answered {
    let describe = |name: Option<&str>, agent: &rein_runner::Agent| {
        let tools: Vec<String> = agent
            .tools
            .catalog(&agent.guards.policy)
            .into_iter()
            .map(|t| t.name)
            .collect();
        json!({"name": name, "assistant": agent.profile.name, "model": agent.profile.model, "tools": tools})
    };
    let mut agents = vec![describe(None, &server.inner.agent)];
    for (name, agent) in &server.inner.agents {
        agents.push(describe(Some(name), agent));
    }
    Ok(Json(json!({"agents": agents})).into_response())
}

/// What the conversation did and cost, its sub-agents rolled up.
#[utoipa::path(get, path = "/api/conversations/{id}/report", params(("id" = String, Path)),
    responses((status = 200, description = "The trace report")))]
async fn report(State(server): State<Server>, Path(id): Path<String>) -> Answered {
    let report = rein_runner::report_with_agents(server.inner.store.as_ref(), &id).await?;
    Ok(Json(json!(report)).into_response())
}
