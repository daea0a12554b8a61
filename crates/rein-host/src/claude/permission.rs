//! Claude Code's permission questions, put to rein's person. For one run,
//! rein serves Claude Code an MCP server on loopback with one tool,
//! `approve`, and starts it with `--permission-prompt-tool
//! mcp__rein__approve`: each call Claude Code would have asked a person
//! about becomes a call of that tool (`{tool_name, input, tool_use_id}`),
//! handed to the run's driver as an [`Asked`] (recorded and decided as
//! `crate::asks` says), and answered as Claude Code reads it —
//! `{"behavior":"allow","updatedInput":INPUT}` with the input exactly as
//! asked (never changed here), or `{"behavior":"deny","message":…}`.
//!
//! Who may call it: the server answers only `127.0.0.1:PORT` as its host,
//! refuses any browser `Origin`, and wants a bearer token made for the
//! run. The token reaches Claude Code in the `--mcp-config` file, in a
//! directory only this user can read (not in its arguments, which every
//! local user can see), removed when the run ends.
//!
//! Not here: recording or deciding (`crate::asks`), the person's surface.

use axum::serve::ListenerExt;
use std::path::PathBuf;
use std::sync::Arc;

use rein_wire::{AgentError, error::codes};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::asks::Asked;
use crate::person::Question;
use crate::progress::{MAX_REASON_CHARS, clean_value};

/// The tool's name as Claude Code calls it (`mcp__SERVER__TOOL`).
pub const PROMPT_TOOL: &str = "mcp__rein__approve";

/// Arguments that already say how a run's permissions are decided: rein
/// adds its own only when none of these is given.
pub const DECIDING_ARGS: &[&str] = &[
    "--permission-prompt-tool",
    "--permission-mode",
    "--dangerously-skip-permissions",
    "--permission-prompts",
];

/// The MCP server one run's questions come through; stopped, and its
/// config file removed, when dropped.
pub struct PermissionServer {
    dir: PathBuf,
    config: PathBuf,
    cancel: CancellationToken,
}

impl PermissionServer {
    /// Serve on loopback, handing each question to `questions`; `cwd` is
    /// the run's folder (details are shown relative to it).
    pub async fn start(
        questions: mpsc::Sender<Asked>,
        cwd: &str,
    ) -> Result<PermissionServer, AgentError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| failed(format!("cannot listen on loopback: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| failed(e.to_string()))?
            .port();
        let token = new_token();
        let cancel = CancellationToken::new();
        let approver = Approver {
            questions,
            cwd: cwd.to_owned(),
        };
        let (dir, config) = write_config(port, &token)?;
        let router = router(approver, cancel.clone(), port, token.clone(), dir.clone());
        let stop = cancel.clone();
        tokio::spawn(async move {
            // Answers go out when written (no Nagle wait).
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await;
        });
        Ok(PermissionServer {
            dir,
            config,
            cancel,
        })
    }

    /// Add what Claude Code is started with to `argv`: the `--mcp-config`
    /// file, then `--permission-prompt-tool` (which ends the config's list
    /// of files), after its own arguments and before the prompt when the
    /// prompt is `argv`'s last.
    pub fn add_to(&self, argv: &mut Vec<String>, prompt_last: bool) {
        let at = argv.len().saturating_sub(usize::from(prompt_last));
        let ours = [
            "--mcp-config".to_owned(),
            self.config.display().to_string(),
            "--permission-prompt-tool".to_owned(),
            PROMPT_TOOL.to_owned(),
        ];
        argv.splice(at..at, ours);
    }
}

/// The questions of a Claude Code run put to `person`: a server started
/// for them and named in `argv` (before the prompt when it is last). Keep
/// the server for the run's length; the questions go to `drive`.
pub async fn asking(
    person: Arc<dyn crate::person::Person>,
    cwd: &str,
    argv: &mut Vec<String>,
    prompt_last: bool,
) -> Result<(crate::asks::Asks, PermissionServer), AgentError> {
    let (questions, asks) = crate::asks::Asks::new(person);
    let server = PermissionServer::start(questions, cwd).await?;
    server.add_to(argv, prompt_last);
    Ok((asks, server))
}

impl Drop for PermissionServer {
    fn drop(&mut self) {
        self.cancel.cancel();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn failed(message: String) -> AgentError {
    AgentError::new(codes::HOSTED_AGENT_FAILED, message)
}

fn new_token() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `--mcp-config` file naming the server and its token, in a fresh
/// directory only this user may enter.
fn write_config(port: u16, token: &str) -> Result<(PathBuf, PathBuf), AgentError> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = std::env::temp_dir().join(format!("rein-permission-{}", rein_wire::ids::new_id()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| failed(format!("cannot make {}: {e}", dir.display())))?;
    let config = dir.join("mcp.json");
    let body = json!({"mcpServers": {"rein": {
        "type": "http",
        "url": format!("http://127.0.0.1:{port}/mcp"),
        "headers": {"Authorization": format!("Bearer {token}")},
    }}});
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&config)
        .and_then(|mut f| f.write_all(body.to_string().as_bytes()))
        .map_err(|e| failed(format!("cannot write {}: {e}", config.display())))?;
    Ok((dir, config))
}

/// The server's routes; the config file's folder (`dir`) is removed at the
/// first request that brings the token — Claude Code has read it then — so
/// the token does not lie in a file for the run's length, nor after a crash.
fn router(
    approver: Approver,
    cancel: CancellationToken,
    port: u16,
    token: String,
    dir: PathBuf,
) -> axum::Router {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let mut config = StreamableHttpServerConfig::default().enforce_origin_validation();
    config.cancellation_token = cancel;
    config.allowed_hosts = vec![format!("127.0.0.1:{port}")];
    let service = StreamableHttpService::new(
        move || Ok(approver.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let token: Arc<str> = token.into();
    let read = Arc::new((std::sync::atomic::AtomicBool::new(false), dir));
    axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(move |request, next| {
            bearer_only(token.clone(), read.clone(), request, next)
        }))
}

async fn bearer_only(
    token: Arc<str>,
    read: Arc<(std::sync::atomic::AtomicBool, PathBuf)>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let given = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("Bearer "));
    if given.is_some_and(|g| rein_wire::secrets::same_secret(g.trim(), &token)) {
        if !read.0.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let _ = std::fs::remove_dir_all(&read.1);
        }
        return next.run(request).await;
    }
    axum::response::IntoResponse::into_response(axum::http::StatusCode::UNAUTHORIZED)
}

/// The one tool's handler.
#[derive(Clone)]
struct Approver {
    questions: mpsc::Sender<Asked>,
    cwd: String,
}

impl Approver {
    /// Put one call's question to the driver; `true` when a person allowed
    /// it. Nobody deciding (the run ended) is a no.
    async fn ask(&self, arguments: &Map<String, Value>) -> bool {
        let tool = clean_value(arguments.get("tool_name"), 120);
        let input = arguments.get("input").cloned().unwrap_or(Value::Null);
        let question = Question {
            approval_id: String::new(),
            call_id: clean_value(arguments.get("tool_use_id"), 120),
            detail: super::call_detail(&tool, Some(&input), &self.cwd),
            shows: crate::shown::call(&tool, &input, &self.cwd),
            tool,
        };
        let (reply, answer) = oneshot::channel();
        if self
            .questions
            .send(Asked { question, reply })
            .await
            .is_err()
        {
            return false;
        }
        answer.await.unwrap_or(false)
    }
}

impl ServerHandler for Approver {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("rein", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({
            "type": "object",
            "properties": {
                "tool_name": {"type": "string"},
                "input": {"type": "object"},
                "tool_use_id": {"type": "string"}
            },
            "required": ["tool_name", "input"]
        });
        let Value::Object(schema) = schema else {
            return Err(ErrorData::internal_error("the schema is an object", None));
        };
        let tool = Tool::new(
            "approve",
            "Ask the person, through rein, whether a tool call may run.",
            schema,
        );
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let said = if request.name == "approve" && self.ask(&arguments).await {
            // The input exactly as asked: what the person saw is what runs.
            json!({"behavior": "allow", "updatedInput": arguments.get("input").cloned().unwrap_or_else(|| json!({}))})
        } else {
            let message = clean_value(
                Some(&Value::from("A person said no (through rein).")),
                MAX_REASON_CHARS,
            );
            json!({"behavior": "deny", "message": message})
        };
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(said.to_string()),
        ])))
    }
}
