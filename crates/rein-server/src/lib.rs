//! rein's HTTP surface: conversations over a JSON API, each conversation's
//! events as a Server-Sent Events stream, and a person's decisions, words
//! and stops — the same operations and rules as the terminal.
//!
//! A [`Server`] is built from what a product brings (a store, a provider,
//! its tools and a profile) and serves an axum [`Router`](axum::Router):
//! mount it behind the product's own guards, or run it with
//! [`Server::serve`] (what `rein serve` does). Every request passes the
//! guards in `auth` first: the `Host` must be one this server answers to
//! (DNS rebinding refused), a state-changing request from a browser must
//! come from this server's own origin, and the caller must carry the
//! session cookie (from the one-time login URL) or the bearer token —
//! nothing else. Bodies are bounded; errors are `application/problem+json`
//! with the registry's codes.
//!
//! Approvals are decided here only by a person through this API
//! (`Surface::http`) — never by the model, which has no route to them.
//!
//! The page (`page`) is static files embedded in the binary, served at `/`
//! behind the same guards.
//!
//! Not here: the runner's loop (`rein-runner`), or how a decision is
//! delivered (`rein-approvals`).

mod auth;
mod connections;
mod events;
mod graphs;
mod history;
mod hosted;
mod links;
mod live;
mod memory;
mod page;
mod problem;
mod routes;
mod waiting;

use std::net::SocketAddr;
use std::sync::Arc;

use rein_gateway::Provider;
use rein_runner::{Agent, Profile};
use rein_sessions::Store;
use rein_tools::ToolBackend;

pub use auth::Secrets;
pub use connections::{
    Bounded as BoundedListener, Held as HeldConnection, Peer, trust_unless_unauthorized,
};
pub use graphs::MAX_RUNNING as MAX_RUNNING_GRAPHS;
pub use hosted::HostedSessions;
pub use routes::api_doc;

/// What the server accepts, each bound finite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest request body, in bytes.
    pub body_bytes: usize,
    /// SSE watchers of one conversation at once.
    pub watchers_per_conversation: usize,
    /// Conversations listed at most.
    pub listed: usize,
    /// Requests served at once, event streams included (a stream holds
    /// its place while it is open).
    pub requests: usize,
    /// Connections held open at once by [`Server::serve`] (one more waits
    /// in the kernel's backlog until one closes).
    pub connections: usize,
    /// Of those, connections held open at once that have not yet shown
    /// credentials; past it the oldest of them is closed to make room.
    pub strangers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            body_bytes: 64 * 1024,
            watchers_per_conversation: 64,
            listed: 200,
            requests: 512,
            connections: 1024,
            strangers: 64,
        }
    }
}

/// The HTTP surface over a product's conversations.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<Inner>,
    pub(crate) limits: Limits,
    /// Budgets over every agent's own (`with_budgets`).
    pub(crate) budgets: Option<rein_runner::Budgets>,
    /// Places for requests at once (`Limits::requests`).
    pub(crate) places: Arc<tokio::sync::Semaphore>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn Store>,
    /// The agent a conversation runs unless it was started with another.
    pub(crate) agent: Agent,
    /// The agents a conversation may be started with, by name.
    pub(crate) agents: std::collections::BTreeMap<String, Agent>,
    pub(crate) secrets: Secrets,
    pub(crate) hosts: Vec<String>,
    /// The session cookie's name: one per port, so a second server on the
    /// same host does not overwrite the first one's.
    pub(crate) cookie: String,
    pub(crate) live: live::Live,
    /// The memory a person sees and edits here (`/api/memory`): one scope
    /// of a store.
    pub(crate) memory: Option<memory::Shown>,
    /// What lists the hosted sessions live now (`/api/agents/sessions`).
    pub(crate) hosted: Option<HostedSessions>,
    /// The task graphs running here (`/api/graphs`).
    pub(crate) graphs: graphs::Running,
    /// The logs shown (summaries, what waits), read again only from where
    /// the last read ended.
    pub(crate) shown: rein_sessions::LogCache,
}

/// The most events the shown logs keep over all conversations.
const SHOWN_EVENTS: usize = 200_000;

impl Inner {
    /// Open `session` with the agent it was started with (its metadata's
    /// `agent`; this server's own when none), taking its lease:
    /// `session_locked` while another process drives it. What a turn here
    /// last read of its log is not read again.
    pub(crate) async fn open(
        &self,
        session: &str,
    ) -> Result<rein_runner::Conversation, rein_wire::AgentError> {
        let info = self.store.session(session).await?;
        let agent = match info.metadata.get("agent").and_then(serde_json::Value::as_str) {
            Some(name) => self.agents.get(name).ok_or_else(|| {
                rein_wire::AgentError::new(
                    rein_wire::error::codes::AGENT_UNKNOWN,
                    format!("the conversation was started with agent `{name}`, which this server does not define"),
                )
            })?,
            None => &self.agent,
        };
        match self.live.take_kept(session) {
            Some(kept) => agent.reopen_kept(self.store.clone(), kept).await,
            None => agent.reopen(self.store.clone(), session).await,
        }
    }

    /// `act` on `session` between turns: refused as `turn_running`
    /// (`refusal` says what to do) while a turn runs here, else opened,
    /// acted on and closed (the log it read kept for the next open).
    pub(crate) async fn between_turns<T>(
        &self,
        session: &str,
        refusal: &str,
        act: impl AsyncFnOnce(&mut rein_runner::Conversation) -> Result<T, rein_wire::AgentError>,
    ) -> Result<T, rein_wire::AgentError> {
        if self.live.is_running(session) {
            return Err(rein_wire::AgentError::new(
                rein_wire::error::codes::TURN_RUNNING,
                refusal,
            ));
        }
        let mut conversation = self.open(session).await?;
        let acted = act(&mut conversation).await;
        self.live.keep(conversation.close_keeping().await?);
        acted
    }

    /// The agent named `name` (`None`: this server's own).
    pub(crate) fn agent(&self, name: Option<&str>) -> Result<&Agent, rein_wire::AgentError> {
        match name {
            None => Ok(&self.agent),
            Some(name) => self.agents.get(name).ok_or_else(|| {
                rein_wire::AgentError::new(
                    rein_wire::error::codes::AGENT_UNKNOWN,
                    format!("no agent `{name}` is defined here (GET /api/agents lists them)"),
                )
            }),
        }
    }
}

impl Server {
    /// A server for conversations on `store` with `provider`, `backend`'s
    /// tools and `profile`, answering to `addr` (its `Host` names), with
    /// fresh secrets: [`Server::of`] an [`Agent`] with rein's defaults.
    pub fn new(
        store: Arc<dyn Store>,
        provider: Arc<dyn Provider>,
        backend: Arc<dyn ToolBackend>,
        profile: Profile,
        addr: SocketAddr,
    ) -> Server {
        Server::of(store, Agent::new(provider, backend, profile), addr)
    }

    /// A server whose conversations run `agent` (or one of the agents
    /// added with [`Server::with_agent`]), on `store`, answering to `addr`.
    pub fn of(store: Arc<dyn Store>, agent: Agent, addr: SocketAddr) -> Server {
        Server {
            inner: Arc::new(Inner {
                store,
                agent,
                agents: std::collections::BTreeMap::new(),
                secrets: Secrets::fresh(),
                hosts: auth::hosts_for(addr),
                cookie: auth::cookie_name(addr),
                live: live::Live::default(),
                memory: None,
                hosted: None,
                graphs: graphs::Running::default(),
                shown: rein_sessions::LogCache::new(SHOWN_EVENTS),
            }),
            limits: Limits::default(),
            budgets: None,
            places: Arc::new(tokio::sync::Semaphore::new(Limits::default().requests)),
        }
    }

    /// The same server also offering `agent` by `name`
    /// (`POST /api/conversations {"agent": NAME}`; `GET /api/agents`).
    /// Before it serves (the agents are fixed then).
    pub fn with_agent(mut self, name: &str, agent: Agent) -> Server {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.agents.insert(name.to_owned(), agent);
        }
        self
    }

    /// The same server showing `scope` of `store` to a person
    /// (`/api/memory`: list, search, add, forget, history; the page's
    /// memory panel). Before it serves. Only that scope is reached.
    pub fn with_memory(
        mut self,
        store: Arc<dyn rein_memory::MemoryBank>,
        scope: rein_memory::Scope,
    ) -> Server {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.memory = Some(memory::Shown { store, scope });
        }
        self
    }

    /// The same server listing the hosted sessions `list` finds
    /// (`GET /api/agents/sessions`, the page's list). Before it serves.
    pub fn with_hosted(
        mut self,
        list: impl Fn() -> futures::future::BoxFuture<'static, Vec<rein_wire::hosted::Listed>>
        + Send
        + Sync
        + 'static,
    ) -> Server {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.hosted = Some(Arc::new(list));
        }
        self
    }

    /// The same server with other limits.
    pub fn with_limits(mut self, limits: Limits) -> Server {
        self.limits = limits;
        self.places = Arc::new(tokio::sync::Semaphore::new(limits.requests));
        self
    }

    /// The same server running each turn with these budgets.
    pub fn with_budgets(mut self, budgets: rein_runner::Budgets) -> Server {
        self.budgets = Some(budgets);
        self
    }

    /// The same server taking `token` as its bearer token (a product or a
    /// person chose it; the fresh one is never shown otherwise).
    pub fn with_bearer(mut self, token: &str) -> Server {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.secrets = inner.secrets.with_bearer(token);
        } else {
            let shared = &self.inner;
            self.inner = Arc::new(Inner {
                store: shared.store.clone(),
                agent: shared.agent.clone(),
                agents: shared.agents.clone(),
                secrets: shared.secrets.with_bearer(token),
                hosts: shared.hosts.clone(),
                cookie: shared.cookie.clone(),
                live: live::Live::default(),
                memory: shared.memory.clone(),
                hosted: shared.hosted.clone(),
                graphs: graphs::Running::default(),
                shown: rein_sessions::LogCache::new(SHOWN_EVENTS),
            });
        }
        self
    }

    /// The secrets: the one-time login URL's token and the bearer token.
    pub fn secrets(&self) -> &Secrets {
        &self.inner.secrets
    }

    /// The routes, guarded.
    pub fn router(&self) -> axum::Router {
        routes::router(self.clone())
    }

    /// Serve on `listener` until the task is dropped, holding at most
    /// `Limits::connections` connections open, `Limits::strangers` of them
    /// without credentials.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let bounded =
            connections::Bounded::new(listener, self.limits.connections, self.limits.strangers);
        let app = self
            .router()
            .into_make_service_with_connect_info::<connections::Peer>();
        axum::serve(bounded, app).await
    }
}

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
