//! rein as an MCP server over streamable HTTP: who may call (the bearer
//! token, the `Host` names, no browser `Origin`) and how much a caller may
//! hold — at most [`MAX_SESSIONS`] sessions at once, each ended after
//! [`SESSION_IDLE`] without a request. One more `initialize` is answered
//! 503, saying so; nothing grows without end.
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
    /// The token (`Authorization: Bearer TOKEN`).
    pub token: String,
}

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
        });
        let token: Arc<str> = guard.token.into();
        // The last layer runs first: the token, then the bound.
        axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(move |request, next| {
                bound.clone().admit(request, next)
            }))
            .layer(axum::middleware::from_fn(move |request, next| {
                bearer_only(token.clone(), request, next)
            }))
    }
}

/// The sessions a server holds, and the one lock every session's opening
/// takes, so that two at once cannot both pass the bound.
struct SessionBound {
    sessions: Arc<LocalSessionManager>,
    opening: tokio::sync::Mutex<()>,
}

impl SessionBound {
    /// Let a request through; one that would open a session past
    /// [`MAX_SESSIONS`] is answered 503.
    async fn admit(
        self: Arc<Self>,
        request: axum::extract::Request,
        next: axum::middleware::Next,
    ) -> Response {
        // A POST without a session's id is an `initialize` (the service
        // refuses any other message without one).
        let opens =
            request.method() == Method::POST && !request.headers().contains_key("mcp-session-id");
        if !opens {
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
        next.run(request).await
    }
}

/// Let through only a request that carries the bearer token.
async fn bearer_only(
    token: Arc<str>,
    request: axum::extract::Request,
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
    if given.is_some_and(|g| rein_wire::secrets::same_secret(g, &token)) {
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
