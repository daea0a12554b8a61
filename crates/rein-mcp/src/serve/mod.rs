//! rein as an MCP server: a [`ToolBackend`] offered over MCP (stdio, or
//! streamable HTTP on loopback) with rein's policy in front.
//!
//! Every call a client makes is a turn of one conversation (see `relay`):
//! recorded in a session like any other, checked, and — when its class
//! needs a person — not run until a person decides it from a person's
//! surface (`rein approve SESSION`, the terminal, the HTTP API). A client
//! never decides: nothing it sends can approve a call. Calls run one at a
//! time, in the order they came (the conversation holds the session's
//! lease); a call waiting for a person holds the ones behind it.
//!
//! A served session opened again after its server was killed stops the
//! call that server left open: its client is gone with the connection,
//! and a question it asked cannot be answered into a write later.
//!
//! With [`ServeSettings::elicitation`] (off by default) a client that
//! declares form elicitation is also asked to put the question to its
//! person; the answer is recorded as `mcp-elicitation:CLIENT`. That trusts
//! the client to show the question to a person and not answer it itself —
//! so it is for a client that is an editor or a chat window, never for an
//! agent.
//!
//! Not here: which tools (the caller's backend) or where the session lives
//! (the caller's store).

mod elicit;
mod framing;
mod http;
mod relay;

use std::sync::Arc;
use std::time::Duration;

use rein_runner::{Budgets, Conversation, Guards, Profile, ToolLoading, TurnOutcome};
use rein_sessions::Store;
use rein_tools::ToolBackend;
use rein_wire::{AgentError, ContentBlock, ImageSource};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::{Map, Value};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

pub use http::{HttpGuard, MAX_SESSIONS, SESSION_IDLE};
pub use relay::RELAY_MODEL;
use relay::{Pending, Relay};

/// How a served conversation behaves.
#[derive(Debug, Clone)]
pub struct ServeSettings {
    /// The longest a call waits for a person before it is stopped.
    pub approval_wait: Duration,
    /// What the served conversation runs under: its policy (writes
    /// allowed or not) and the hooks asked before each call — the same
    /// guards every other surface and every child of the agent keeps.
    pub guards: Guards,
    /// Also ask a client that supports elicitation to put each approval
    /// to its person (see the module's docs for what that trusts).
    pub elicitation: bool,
}

impl Default for ServeSettings {
    fn default() -> Self {
        ServeSettings {
            approval_wait: Duration::from_secs(10 * 60),
            guards: Guards::default(),
            elicitation: false,
        }
    }
}

/// The most characters of a result a client is sent whole (past it, the
/// store keeps it and the client gets its start).
const SERVED_RESULT_CHARS: usize = 16 * 1024 * 1024;

/// Who stops a call whose server was killed while it ran or waited.
const SERVER_GONE: &str = "mcp serve (the server that took the call stopped)";

/// How the server says where a call waits: the line, and the request.
type Tell = dyn Fn(&str, &rein_runner::ApprovalRequest) + Send + Sync;

struct Inner {
    backend: Arc<dyn ToolBackend>,
    conversation: Mutex<Option<Conversation>>,
    relay: Arc<Relay>,
    session: String,
    settings: ServeSettings,
    /// Tells the person where a call waits (stderr for `rein mcp serve`).
    on_wait: Box<Tell>,
}

/// A backend served over MCP; cheap to clone (every clone serves the same
/// conversation).
#[derive(Clone)]
pub struct McpServe {
    inner: Arc<Inner>,
}

impl McpServe {
    /// Serve `backend`'s tools, recording calls in a new session of
    /// `store` (or continuing `existing`).
    pub async fn open(
        store: Arc<dyn Store>,
        backend: Arc<dyn ToolBackend>,
        existing: Option<&str>,
        settings: ServeSettings,
    ) -> Result<McpServe, AgentError> {
        let relay = Arc::new(Relay::default());
        let mut profile = Profile::new("mcp-serve", RELAY_MODEL);
        profile.tools = ToolLoading::Native;
        // The client is told what happened, not what a model may not do
        // next; and a call is also stopped when its server was killed.
        profile.wording.not_approved =
            "The call to `{tool}` was not run: it was {decision}.".into();
        let metadata =
            serde_json::json!({"assistant": "mcp-serve", "model": RELAY_MODEL, "surface": "mcp"});
        let mut conversation = Conversation::open_with(
            store,
            relay.clone(),
            backend.clone(),
            profile,
            existing,
            metadata,
        )
        .await?;
        conversation.agent.guards = settings.guards.clone();
        // The client is not a model with `read_result`: a result goes to it
        // whole (the file tools read at most 4 MiB), never as a stub that
        // names a tool it is not offered.
        conversation.agent.bounds = rein_tools::Bounds {
            max_chars: SERVED_RESULT_CHARS,
            max_string: SERVED_RESULT_CHARS,
            ..rein_tools::Bounds::default()
        };
        conversation.agent.budgets = Budgets {
            max_steps: 4,
            max_wall: settings.approval_wait + Duration::from_secs(60 * 60),
            ..Budgets::default()
        };
        // A turn a killed server left open was a client's call, and that
        // client heard its connection die: nobody waits for its result.
        // Its question dies with it — a "yes" given later runs nothing —
        // and a call cut short was recorded as interrupted when the
        // session opened.
        if existing.is_some() && conversation.has_open_turn().await? {
            conversation.stop_by(SERVER_GONE).await?;
        }
        let session = conversation.session_id().to_owned();
        Ok(McpServe {
            inner: Arc::new(Inner {
                backend,
                conversation: Mutex::new(Some(conversation)),
                relay,
                session,
                settings,
                on_wait: Box::new(|_, _| {}),
            }),
        })
    }

    /// Say where a call waits for a person with `tell`: a line naming how
    /// to decide it, and the request itself, whose arguments or preview a
    /// person must see before deciding (before the first call is served).
    pub fn telling(
        mut self,
        tell: impl Fn(&str, &rein_runner::ApprovalRequest) + Send + Sync + 'static,
    ) -> McpServe {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.on_wait = Box::new(tell);
        }
        self
    }

    /// The session the calls are recorded in.
    pub fn session_id(&self) -> &str {
        &self.inner.session
    }

    /// Run one call as the client `client` made it; `cancel` ends a wait
    /// for a person (the call is then stopped, never run). `peer` is the
    /// client, asked by elicitation when the settings allow it.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Value,
        client: &str,
        peer: Option<&Peer<RoleServer>>,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, AgentError> {
        let offered = self
            .inner
            .backend
            .catalog(&self.inner.settings.guards.policy);
        if !offered.iter().any(|t| t.name == tool) {
            let names: Vec<String> = offered.into_iter().map(|t| t.name).collect();
            return Ok(CallToolResult::error(vec![
                rmcp::model::ContentBlock::text(format!(
                    "tool_not_found: there is no tool `{tool}`; the tools are: {}",
                    names.join(", ")
                )),
            ]));
        }
        let mut guard = self.inner.conversation.lock().await;
        let conversation = guard.as_mut().ok_or_else(|| {
            AgentError::new(
                rein_wire::error::codes::INTERNAL,
                "the served conversation is closed",
            )
        })?;
        self.inner.relay.set(Pending {
            call_id: format!("mcp-{}", rein_wire::ids::new_id()),
            tool: tool.to_owned(),
            arguments,
        });
        let mut outcome = conversation
            .turn(&format!("MCP client `{client}` calls `{tool}`"))
            .await?;
        while let TurnOutcome::AwaitingApproval(request) = &outcome {
            (self.inner.on_wait)(
                &format!(
                    "`{tool}` waits for a person: rein approve {} {} yes|no",
                    self.inner.session, request.approval_id
                ),
                request,
            );
            let waited = CancellationToken::new();
            let timer = {
                let waited = waited.clone();
                let cancel = cancel.clone();
                let limit = self.inner.settings.approval_wait;
                tokio::spawn(async move {
                    tokio::select! {
                        () = tokio::time::sleep(limit) => {}
                        () = cancel.cancelled() => {}
                    }
                    waited.cancel();
                })
            };
            let asking = peer
                .filter(|_| self.inner.settings.elicitation)
                .map(|peer| {
                    tokio::spawn(elicit::ask(
                        peer.clone(),
                        conversation.store(),
                        self.inner.session.clone(),
                        request.clone(),
                        client.to_owned(),
                        self.inner.settings.approval_wait,
                    ))
                });
            let decided = conversation
                .wait_for_decision(&request.approval_id, &waited)
                .await;
            timer.abort();
            if let Some(asking) = asking {
                asking.abort();
            }
            outcome = match decided? {
                Some(next) => next,
                None => {
                    conversation
                        .stop_by("mcp serve: nobody decided in time, or the client gave up")
                        .await?
                }
            };
        }
        let relayed = self.inner.relay.take();
        Ok(match relayed {
            Some(result) => to_mcp(result.content, result.is_error),
            None => CallToolResult::error(vec![rmcp::model::ContentBlock::text(format!(
                "the call did not run: the turn ended {}",
                outcome.name()
            ))]),
        })
    }

    /// Release the session's lease.
    pub async fn close(&self) -> Result<(), AgentError> {
        let conversation = self.inner.conversation.lock().await.take();
        match conversation {
            Some(conversation) => conversation.close().await,
            None => Ok(()),
        }
    }

    /// Serve over this process's stdin and stdout until the client leaves.
    pub async fn serve_stdio(&self) -> Result<(), AgentError> {
        use rmcp::ServiceExt;
        let running = self
            .clone()
            .serve(framing::framed(tokio::io::stdin(), tokio::io::stdout()))
            .await
            .map_err(|err| {
                AgentError::new(rein_wire::error::codes::MCP_PROTOCOL, err.to_string())
            })?;
        let _ = running.waiting().await;
        Ok(())
    }
}

/// A recorded result as MCP content.
fn to_mcp(content: Vec<ContentBlock>, is_error: bool) -> CallToolResult {
    let blocks = content
        .into_iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } => Some(rmcp::model::ContentBlock::text(text)),
            ContentBlock::Image {
                source: ImageSource::Base64 { media_type, data },
            } => Some(rmcp::model::ContentBlock::image(data, media_type)),
            _ => None,
        })
        .collect();
    if is_error {
        CallToolResult::error(blocks)
    } else {
        CallToolResult::success(blocks)
    }
}

impl ServerHandler for McpServe {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("rein", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "rein's tools. A call that changes something waits until a person decides it with `rein approve`.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let backend = &self.inner.backend;
        let tools = backend
            .catalog(&self.inner.settings.guards.policy)
            .into_iter()
            .filter_map(|summary| backend.definition(&summary.name))
            .map(|spec| {
                let schema: Map<String, Value> = match spec.input_schema {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
                Tool::new(spec.name, spec.description, schema)
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let client = context
            .peer
            .peer_info()
            // The client names itself: one safe line, so its name cannot
            // forge lines of the transcript or the terminal.
            .map(|info| rein_wire::visible::one_line(&info.client_info.name, 64))
            .unwrap_or_else(|| "unknown".into());
        let arguments = request
            .arguments
            .map(Value::Object)
            .unwrap_or_else(|| Value::Object(Map::new()));
        match self
            .call(
                &request.name,
                arguments,
                &client,
                Some(&context.peer),
                &context.ct,
            )
            .await
        {
            Ok(result) => Ok(CallToolResponse::Complete(result)),
            Err(err) => Err(ErrorData::internal_error(
                format!("{}: {}", err.code, err.message),
                None,
            )),
        }
    }
}
