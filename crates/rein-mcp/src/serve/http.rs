//! rein as an MCP server over streamable HTTP: who may call (a bearer
//! token, the `Host` names, no browser `Origin`), whose a session is, and
//! how much a caller may hold — at most [`MAX_SESSIONS`] sessions at once,
//! each ended after [`SESSION_IDLE`] without a request. One more
//! `initialize` is answered 503, saying so; nothing grows without end.
//!
//! Each token is a client: a session belongs to the token that opened it,
//! and a request naming it with another token is answered as if it did
//! not exist (404) — one client cannot use, watch or end another's.
//!
//! Not here: the listener's bound on connections (`rein_server`'s
//! `BoundedListener`), what a call does (`super`).

use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::McpServe;

/// The most MCP sessions one server holds at once (an editor or a chat
/// window opens one).
pub const MAX_SESSIONS: usize = 64;

/// How long a session lives without a request.
pub const SESSION_IDLE: Duration = Duration::from_secs(5 * 60);

/// Who may call the MCP endpoint over HTTP: the `Host` names it answers to
/// (DNS rebinding refused), and the bearer token every request carries. A
/// request with a browser `Origin` is refused whatever it names: a page on
/// another site can reach loopback.
#[derive(Debug, Clone)]
pub struct HttpGuard {
    /// `host:port` authorities (`127.0.0.1:PORT`, `localhost:PORT`).
    pub hosts: Vec<String>,
    /// The tokens (`Authorization: Bearer TOKEN`), one per client.
    pub tokens: Vec<String>,
}

/// Which of the guard's tokens a request carried: the client it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Client(usize);

impl McpServe {
    /// An axum router serving streamable HTTP at `/mcp` (bind it to
    /// loopback) to the callers `guard` lets through.
    pub fn router(&self, cancel: CancellationToken, guard: HttpGuard) -> axum::Router {
        let me = self.clone();
        let mut config = StreamableHttpServerConfig::default().enforce_origin_validation();
        config.cancellation_token = cancel;
        config.allowed_hosts = guard.hosts;
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(SESSION_IDLE);
        let sessions = Arc::new(sessions);
        let service = StreamableHttpService::new(move || Ok(me.clone()), sessions.clone(), config);
        let bound = Arc::new(SessionBound {
            sessions,
            opening: tokio::sync::Mutex::new(()),
            owners: std::sync::Mutex::default(),
        });
        let tokens: Arc<[String]> = guard.tokens.into();
        // The last layer runs first: the token, then the bound.
        axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(move |request, next| {
                bound.clone().admit(request, next)
            }))
            .layer(axum::middleware::from_fn(move |request, next| {
                bearer_only(tokens.clone(), request, next)
            }))
    }
}

/// The sessions a server holds, the one lock every session's opening
/// takes (so that two at once cannot both pass the bound), and the client
/// each session was opened by.
struct SessionBound {
    sessions: Arc<LocalSessionManager>,
    opening: tokio::sync::Mutex<()>,
    owners: std::sync::Mutex<std::collections::HashMap<String, Client>>,
}

impl SessionBound {
    /// Let a request through; one that would open a session past
    /// [`MAX_SESSIONS`] is answered 503.
    async fn admit(
        self: Arc<Self>,
        request: axum::extract::Request,
        next: axum::middleware::Next,
    ) -> Response {
        let client = request.extensions().get::<Client>().copied();
        let named = request
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(id) = named {
            let owner = self
                .owners
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&id)
                .copied();
            if owner.is_some_and(|owner| Some(owner) != client) {
                return (StatusCode::NOT_FOUND, "no such session\n").into_response();
            }
            return next.run(request).await;
        }
        // A POST without a session's id is an `initialize` (the service
        // refuses any other message without one).
        if request.method() != Method::POST {
            return next.run(request).await;
        }
        let _opening = self.opening.lock().await;
        if self.sessions.sessions.read().await.len() >= MAX_SESSIONS {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "60")],
                format!(
                    "this MCP endpoint holds {MAX_SESSIONS} sessions, its most: end one (DELETE with its Mcp-Session-Id) or wait until one has been idle {} minutes\n",
                    SESSION_IDLE.as_secs() / 60
                ),
            )
                .into_response();
        }
        let answer = next.run(request).await;
        let opened = answer
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok());
        if let (Some(id), Some(client)) = (opened, client) {
            let live = self.sessions.sessions.read().await;
            let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
            // Sessions ended or gone idle leave the map: it stays bounded.
            owners.retain(|id, _| live.contains_key(id.as_str()));
            owners.insert(id.to_owned(), client);
        }
        answer
    }
}

/// Let through only a request that carries one of the bearer tokens, as
/// the client that token is.
async fn bearer_only(
    tokens: Arc<[String]>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
    // Every token is compared (in constant time each), whichever matches.
    let client = given.and_then(|g| {
        tokens
            .iter()
            .map(|t| rein_wire::secrets::same_secret(g, t))
            .collect::<Vec<_>>()
            .into_iter()
            .position(|same| same)
    });
    if let Some(client) = client {
        request.extensions_mut().insert(Client(client));
        return next.run(request).await;
    }
    // A caller without the token keeps no connection open either.
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer"), (header::CONNECTION, "close")],
        "this MCP endpoint needs `Authorization: Bearer TOKEN` (the REIN_MCP_TOKEN it was started with)\n",
    )
        .into_response()
}
