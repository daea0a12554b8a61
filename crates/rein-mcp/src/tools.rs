//! The configured servers' tools as one [`ToolBackend`].
//!
//! [`McpClients`] owns the running servers (shared by every conversation
//! that uses them). [`McpTools`] is one conversation's view of them: the
//! catalog it offers changes only in [`ToolBackend::turn_boundary`], so a
//! server that joins late, fails, or changes its list mid-turn changes
//! nothing until the next turn starts — the stable prefix of a running
//! turn never moves, and a turn never waits for a server.
//!
//! Not here: keeping a server running (`server.rs`).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rein_tools::{Outcome, ProgressReport, ToolBackend, ToolContext, ToolSummary, async_trait};
use rein_wire::permission::{PermissionClass, Policy};
use rein_wire::{AgentError, Preview, PreviewKind, ToolSpec, error::codes};
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ProgressNotificationParam, Request, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::Value;

use crate::catalog::{RemoteTool, outcome};
use crate::config::McpConfig;
use crate::server::{ServerHandle, Status};

/// The configured servers, started in the background; cheap to clone.
#[derive(Clone)]
pub struct McpClients {
    servers: Arc<Vec<ServerHandle>>,
}

impl McpClients {
    /// Start every server of `config`; returns at once (each starts in
    /// the background). Needs a Tokio runtime.
    pub fn start(config: &McpConfig) -> McpClients {
        let servers = config
            .servers
            .values()
            .map(|server| ServerHandle::start(server.clone()))
            .collect();
        McpClients {
            servers: Arc::new(servers),
        }
    }

    /// The servers, by name.
    pub fn servers(&self) -> &[ServerHandle] {
        &self.servers
    }

    /// A new conversation's view: it offers what is ready at its first
    /// turn boundary.
    pub fn tools(&self) -> McpTools {
        McpTools {
            clients: self.clone(),
            view: RwLock::new(View::default()),
        }
    }

    /// Wait until no server is starting any more, or `limit` passed (for
    /// listing; a conversation never waits).
    pub async fn settled(&self, limit: Duration) {
        let until = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < until
            && self
                .servers
                .iter()
                .any(|s| s.snapshot().status == Status::Starting)
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stop every server.
    pub fn shutdown(&self) {
        for server in self.servers.iter() {
            server.shutdown();
        }
    }
}

#[derive(Default)]
struct View {
    /// The epoch of each server's snapshot taken in (by index).
    epochs: Vec<Option<u64>>,
    /// What each server was, in words, when taken in.
    said: Vec<String>,
    /// The tools offered: rein name → (server index, tool).
    tools: BTreeMap<String, (usize, RemoteTool)>,
}

/// One conversation's view of the servers' tools.
pub struct McpTools {
    clients: McpClients,
    view: RwLock<View>,
}

impl McpTools {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, View> {
        self.view.read().unwrap_or_else(|p| p.into_inner())
    }

    fn find(&self, name: &str) -> Result<(usize, RemoteTool), AgentError> {
        let view = self.read();
        view.tools.get(name).cloned().ok_or_else(|| {
            let known: Vec<&str> = view.tools.keys().map(String::as_str).collect();
            AgentError::new(
                codes::TOOL_NOT_FOUND,
                format!(
                    "there is no tool `{name}`; the MCP tools are: {}",
                    known.join(", ")
                ),
            )
        })
    }
}

/// How a server's state reads to the person.
fn said(name: &str, status: &Status, tools: usize) -> String {
    match status {
        Status::Starting => format!("MCP server `{name}` is starting"),
        Status::Ready => format!("MCP server `{name}` is ready: {tools} tools"),
        Status::Failed {
            error,
            retrying: true,
        } => {
            format!("MCP server `{name}` is not available ({error}); trying again")
        }
        Status::Failed {
            error,
            retrying: false,
        } => {
            format!("MCP server `{name}` failed ({error}); its tools are not offered")
        }
        Status::Stopped => format!("MCP server `{name}` is stopped; its tools are not offered"),
    }
}

#[async_trait]
impl ToolBackend for McpTools {
    fn catalog(&self, _policy: &Policy) -> Vec<ToolSummary> {
        self.read()
            .tools
            .iter()
            .map(|(name, (_, tool))| ToolSummary {
                name: name.clone(),
                purpose: tool
                    .spec
                    .description
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_owned(),
            })
            .collect()
    }

    fn definition(&self, name: &str) -> Option<ToolSpec> {
        self.read().tools.get(name).map(|(_, t)| t.spec.clone())
    }

    fn permission(&self, name: &str, args: &Value) -> Result<PermissionClass, AgentError> {
        let (_, tool) = self.find(name)?;
        if let Some(validator) = &tool.validator {
            let errors: Vec<String> = validator
                .iter_errors(args)
                .take(5)
                .map(|e| format!("{}: {e}", e.instance_path()))
                .collect();
            if !errors.is_empty() {
                return Err(AgentError::new(
                    codes::TOOL_ARGUMENTS_INVALID,
                    format!(
                        "`{name}`'s arguments do not fit its schema: {}",
                        errors.join("; ")
                    ),
                ));
            }
        }
        Ok(tool.class)
    }

    async fn invoke(&self, name: &str, args: Value, ctx: &ToolContext) -> Outcome {
        let (index, tool) = match self.find(name) {
            Ok(found) => found,
            Err(err) => return Outcome::from_error(&err),
        };
        let server = &self.clients.servers[index];
        let Some(peer) = server.peer() else {
            let status = server.snapshot().status;
            return Outcome::Failed {
                code: codes::MCP_SERVER_UNAVAILABLE,
                message: said(server.name(), &status, 0),
                detail: None,
                retryable: true,
            };
        };
        let mut params = CallToolRequestParams::new(tool.remote.clone());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        let timeout = server.config().call_timeout;
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(timeout);
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let handle = match peer.send_cancellable_request(request, options).await {
            Ok(handle) => handle,
            Err(err) => return lost(server.name(), &err),
        };
        let mut reports = server
            .shared
            .progress
            .subscribe(handle.progress_token.clone());
        let forward = |note: ProgressNotificationParam| {
            ctx.progress.report(ProgressReport {
                done: note.progress,
                total: note.total,
                message: note.message,
            });
        };
        // Progress is passed on as it comes, in this task, until the answer.
        // Notes are filed as the connection is read, so every note the server
        // sent before its answer is here by the time the answer is: those not
        // passed on yet are, after it.
        let response = handle.await_response();
        tokio::pin!(response);
        let answered = loop {
            tokio::select! {
                biased;
                note = reports.next() => match note {
                    Some(note) => forward(note),
                    None => break response.await,
                },
                answered = &mut response => break answered,
            }
        };
        while let Some(note) = reports.ready() {
            forward(note);
        }
        match answered {
            Ok(ServerResult::CallToolResult(result)) => match serde_json::to_value(&result) {
                Ok(value) => outcome(&value),
                Err(err) => protocol(server.name(), &err.to_string()),
            },
            Ok(_) => protocol(server.name(), "it answered a call with something else"),
            Err(ServiceError::Timeout { .. }) => {
                let checking = server.clone();
                tokio::spawn(async move { checking.check_alive(&peer).await });
                Outcome::Failed {
                    code: codes::MCP_CALL_TIMEOUT,
                    message: format!(
                        "MCP server `{}` did not answer `{}` within {} s; the call was cancelled",
                        server.name(),
                        tool.remote,
                        timeout.as_secs()
                    ),
                    detail: None,
                    retryable: true,
                }
            }
            Err(ServiceError::McpError(error)) => Outcome::Failed {
                code: codes::MCP_TOOL_ERROR,
                message: format!(
                    "MCP server `{}` refused the call: {}",
                    server.name(),
                    error.message
                ),
                detail: None,
                retryable: false,
            },
            Err(err) => lost(server.name(), &err),
        }
    }

    fn cacheable(&self, _name: &str) -> bool {
        false
    }

    fn revision(&self) -> String {
        let view = self.read();
        let epochs: Vec<String> = view
            .epochs
            .iter()
            .map(|e| e.map_or("-".to_owned(), |e| e.to_string()))
            .collect();
        format!("mcp:{}", epochs.join("."))
    }

    /// What the person is asked about: the server, the tool, and every
    /// argument the model gave (bounded, the rest counted).
    fn preview(&self, name: &str, args: &Value) -> Option<Preview> {
        let (index, tool) = self.find(name).ok()?;
        let server = self.clients.servers[index].name();
        Some(Preview::new(
            PreviewKind::Text,
            format!("{server}/{}", tool.remote),
            format!(
                "calls `{}` on MCP server `{server}` with:\n{}",
                tool.remote,
                rein_wire::arguments_text(args, rein_wire::MAX_SHOWN_ARGUMENT_CHARS)
            ),
        ))
    }

    fn turn_boundary(&self) -> Vec<String> {
        let mut view = self.view.write().unwrap_or_else(|p| p.into_inner());
        let servers = self.clients.servers();
        view.epochs.resize(servers.len(), None);
        view.said.resize(servers.len(), String::new());
        let mut changes = Vec::new();
        for (index, server) in servers.iter().enumerate() {
            let now = server.snapshot();
            if view.epochs[index] == Some(now.epoch) {
                continue;
            }
            view.epochs[index] = Some(now.epoch);
            // Tools stay offered while their server restarts (a call fails
            // fast meanwhile): the prefix stays put. They go only when the
            // server is given up on or stopped.
            let offered = match now.status {
                Status::Failed {
                    retrying: false, ..
                }
                | Status::Stopped => Arc::default(),
                _ => now.tools.clone(),
            };
            let before: Vec<String> = view
                .tools
                .iter()
                .filter(|(_, (i, _))| *i == index)
                .map(|(n, _)| n.clone())
                .collect();
            let tools_changed = before.len() != offered.len()
                || before.iter().any(|n| {
                    offered.get(n).map(|t| &t.spec) != view.tools.get(n).map(|(_, t)| &t.spec)
                });
            if tools_changed {
                view.tools.retain(|_, (i, _)| *i != index);
                for (name, tool) in offered.iter() {
                    view.tools.insert(name.clone(), (index, tool.clone()));
                }
            }
            let words = said(server.name(), &now.status, offered.len());
            if words != view.said[index] || tools_changed {
                if tools_changed && now.status == Status::Ready && !before.is_empty() {
                    changes.push(format!(
                        "MCP server `{}` changed its tools: {} now",
                        server.name(),
                        offered.len()
                    ));
                } else {
                    changes.push(words.clone());
                }
                changes.extend(now.left_out.iter().map(|why| format!("left out: {why}")));
                view.said[index] = words;
            }
        }
        changes
    }
}

fn lost(server: &str, err: &ServiceError) -> Outcome {
    Outcome::Failed {
        code: codes::MCP_SERVER_CRASHED,
        message: format!(
            "MCP server `{server}` went away during the call ({err}); it is being restarted"
        ),
        detail: None,
        retryable: true,
    }
}

fn protocol(server: &str, why: &str) -> Outcome {
    Outcome::Failed {
        code: codes::MCP_PROTOCOL,
        message: format!("MCP server `{server}`: {why}"),
        detail: None,
        retryable: false,
    }
}
