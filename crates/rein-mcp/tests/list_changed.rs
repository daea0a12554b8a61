//! A server whose tool list changes in the middle of a turn, reached over
//! streamable HTTP with a bearer token: the running turn keeps the tools it
//! started with (its stable prefix never moves), and the next turn offers
//! the new list, with a note for the person.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use rein_mcp::{McpClients, McpConfig};
use rein_runner::{Conversation, Profile, ToolLoading, TurnOutcome, UiKind};
use rein_sessions::MemoryStore;
use rein_testing::{FakeProvider, ScriptedCall, ScriptedMessage};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, json};

/// A server with `flip`, which adds `extra` and says the list changed.
#[derive(Clone, Default)]
struct Changing {
    flipped: Arc<AtomicBool>,
}

fn tool(name: &str) -> Tool {
    let schema: Map<String, serde_json::Value> =
        serde_json::from_value(json!({"type": "object"})).expect("schema");
    Tool::new(name.to_owned(), format!("The {name} tool."), schema)
        .with_annotations(ToolAnnotations::new().read_only(true))
}

impl ServerHandler for Changing {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = vec![tool("flip")];
        if self.flipped.load(Ordering::SeqCst) {
            tools.push(tool("extra"));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == "flip" {
            self.flipped.store(true, Ordering::SeqCst);
            let _ = context.peer.notify_tool_list_changed().await;
        }
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text("flipped"),
        ])))
    }
}

/// Serve `Changing` at /mcp on loopback, refusing any request without
/// `Bearer token`.
async fn serve(token: String) -> std::net::SocketAddr {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let handler = Changing::default();
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let expected = format!("Bearer {token}");
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let expected = expected.clone();
                async move {
                    let sent = request
                        .headers()
                        .get("authorization")
                        .and_then(|v| v.to_str().ok());
                    if sent != Some(expected.as_str()) {
                        return StatusCode::UNAUTHORIZED.into_response();
                    }
                    next.run(request).await
                }
            },
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

use axum::response::IntoResponse;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_changed_mid_turn_waits_for_the_next_turn() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // The token comes from the variable the config names (HOME here: the
    // test may not set variables), never from the config itself.
    let token = std::env::var("HOME").expect("HOME is set");
    let addr = serve(token).await;
    let config = McpConfig::parse(&format!(
        "[mcp.servers.hs]\nurl = \"http://{addr}/mcp\"\nbearer_env = \"HOME\"\n[mcp.servers.wrong]\nurl = \"http://{addr}/mcp\"\nstart_timeout_secs = 5\n"
    ))
    .expect("valid");
    let clients = McpClients::start(&config);
    let hs = clients
        .servers()
        .iter()
        .find(|s| s.name() == "hs")
        .expect("hs")
        .clone();
    for _ in 0..200 {
        if hs.snapshot().status == rein_mcp::Status::Ready {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        hs.snapshot().status,
        rein_mcp::Status::Ready,
        "{:?}",
        hs.snapshot().status
    );

    let provider = Arc::new(FakeProvider::from_messages(&[
        ScriptedMessage::text(&[]).with_call(ScriptedCall::to("hs__flip", json!({})).id("c1")),
        ScriptedMessage::text(&["Flipped."]),
        ScriptedMessage::text(&["Now there is more."]),
    ]));
    let mut profile = Profile::new("t", "fake-model");
    profile.tools = ToolLoading::Native;
    let mut conversation = Conversation::open(
        Arc::new(MemoryStore::new()),
        provider.clone(),
        Arc::new(clients.tools()),
        profile,
        None,
    )
    .await
    .expect("open");
    let mut ui = conversation.subscribe();
    let first = conversation.turn("flip it").await.expect("turn 1");
    assert!(matches!(first, TurnOutcome::Finished { .. }), "{first:?}");

    // The list changed during turn 1; wait until the client re-read it.
    for _ in 0..200 {
        if hs.snapshot().tools.contains_key("hs__extra") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        hs.snapshot().tools.contains_key("hs__extra"),
        "the new list was read"
    );
    let second = conversation.turn("and now?").await.expect("turn 2");
    assert!(matches!(second, TurnOutcome::Finished { .. }), "{second:?}");

    let names = |i: usize| -> Vec<String> {
        provider.requests()[i]
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    assert_eq!(names(0), names(1), "the running turn's tools never moved");
    assert!(!names(1).contains(&"hs__extra".to_owned()));
    assert!(names(2).contains(&"hs__extra".to_owned()), "{:?}", names(2));

    let mut notes = Vec::new();
    while let Ok(event) = ui.try_recv() {
        if let UiKind::CatalogChanged { changes } = event.kind {
            notes.extend(changes);
        }
    }
    assert!(
        notes.iter().any(|n| n.contains("`hs` is ready")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("`hs` changed its tools: 2 now")),
        "{notes:?}"
    );
    // The server without the token was refused, and said so.
    assert!(
        notes
            .iter()
            .any(|n| n.contains("`wrong`")
                && (n.contains("not available") || n.contains("starting"))),
        "{notes:?}"
    );
    clients.shutdown();
}
