//! rein served as an ACP agent, so editors that speak the Agent Client
//! Protocol can use it: each ACP session is a rein conversation (opened by
//! the product's [`OpenConversation`] for the session's working
//! directory), each prompt a turn whose answer text, reasoning and tool
//! calls stream to the client as `session/update`s.
//!
//! A call that needs a person is asked through `session/request_permission`
//! — the editor shows it to its person — with two options, allow once and
//! reject; the answer is rein's approval, recorded as decided by
//! `acp:CLIENT`. A cancelled permission or `session/cancel` stops the turn
//! (the call never runs). Prompts of one session run one at a time.
//!
//! Not here: the conversation (`rein-runner`), driving other ACP agents
//! (`acp.rs`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rein_approvals::{Answer, Surface};
use rein_runner::{Conversation, Steering, TurnOutcome, UiKind};
use rein_wire::AgentError;
use rein_wire::permission::LeaseScope;
use serde_json::{Value, json};

use crate::acp::PROTOCOL_VERSION;
use crate::jsonrpc::{self, INTERNAL_ERROR, Incoming, MAX_MESSAGE_BYTES, METHOD_NOT_FOUND, Peer};

/// Opens the conversation for a new ACP session in a working directory.
pub type OpenConversation =
    Arc<dyn Fn(PathBuf) -> BoxFuture<'static, Result<Conversation, AgentError>> + Send + Sync>;

type Shared = Arc<tokio::sync::Mutex<Conversation>>;

/// An ACP session: its conversation, the handle that interrupts it, its folder.
type Served = (Shared, Steering, PathBuf);

/// rein as an ACP agent.
#[derive(Clone)]
pub struct AcpServe {
    open: OpenConversation,
    sessions: Arc<Mutex<HashMap<String, Served>>>,
    client: Arc<Mutex<String>>,
}

fn error_text(e: &AgentError) -> String {
    format!("{}: {}", e.code, e.message)
}

/// The file a call touches, as ACP's absolute locations (rein's file tools
/// name it `path`, relative to the session's folder).
fn locations(cwd: &std::path::Path, arguments: &Value) -> Value {
    match arguments.get("path").and_then(Value::as_str) {
        Some(path) => json!([{"path": cwd.join(path)}]),
        None => json!([]),
    }
}

/// A tool's ACP kind, for the client's icons.
fn kind_of(tool: &str) -> &'static str {
    match tool {
        "read_file" | "list_files" | "read_skill" => "read",
        "search" => "search",
        "write_file" | "edit_file" => "edit",
        "delete_file" => "delete",
        "run_command" => "execute",
        _ => "other",
    }
}

impl AcpServe {
    /// Serve conversations `open` makes.
    pub fn new(open: OpenConversation) -> Self {
        AcpServe {
            open,
            sessions: Arc::default(),
            client: Arc::new(Mutex::new("client".to_owned())),
        }
    }

    fn session(&self, id: &str) -> Option<Served> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// Serve on this process's stdin and stdout until the client leaves.
    pub async fn serve_stdio(self) -> Result<(), AgentError> {
        self.serve(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serve over `reader` and `writer` until the client leaves.
    pub async fn serve(
        self,
        reader: impl tokio::io::AsyncRead + Unpin + Send + 'static,
        writer: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
    ) -> Result<(), AgentError> {
        let (peer, mut incoming, reading) = jsonrpc::connect(reader, writer, MAX_MESSAGE_BYTES);
        while let Some(message) = incoming.recv().await {
            match message {
                Incoming::Request { id, method, params } => match method.as_str() {
                    "initialize" => {
                        if let Some(name) =
                            params.pointer("/clientInfo/name").and_then(Value::as_str)
                        {
                            *self
                                .client
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                                crate::progress::clean(name, 40);
                        }
                        peer.respond(
                            id,
                            json!({
                                "protocolVersion": PROTOCOL_VERSION,
                                "agentCapabilities": {
                                    "loadSession": false,
                                    "promptCapabilities": {"image": false, "audio": false, "embeddedContext": false},
                                },
                                "authMethods": [],
                                "agentInfo": {"name": "rein", "version": env!("CARGO_PKG_VERSION")},
                            }),
                        );
                    }
                    "session/new" => {
                        let cwd = params.get("cwd").and_then(Value::as_str).map(PathBuf::from);
                        let Some(cwd) = cwd.filter(|c| c.is_absolute()) else {
                            peer.respond_error(id, -32602, "session/new needs an absolute cwd");
                            continue;
                        };
                        match (self.open)(cwd.clone()).await {
                            Ok(conversation) => {
                                let session = conversation.session_id().to_owned();
                                let steering = conversation.steering();
                                self.sessions
                                    .lock()
                                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                                    .insert(
                                        session.clone(),
                                        (
                                            Arc::new(tokio::sync::Mutex::new(conversation)),
                                            steering,
                                            cwd,
                                        ),
                                    );
                                peer.respond(id, json!({"sessionId": session}));
                            }
                            Err(e) => peer.respond_error(id, INTERNAL_ERROR, &error_text(&e)),
                        }
                    }
                    "session/prompt" => {
                        // A turn takes long: it runs on a task of its own so
                        // the connection keeps reading (a cancel, an answer).
                        let (serve, peer) = (self.clone(), peer.clone());
                        tokio::spawn(async move {
                            match serve.prompt(&params, &peer).await {
                                Ok(stop) => peer.respond(id, json!({"stopReason": stop})),
                                Err(e) => peer.respond_error(id, INTERNAL_ERROR, &error_text(&e)),
                            }
                        });
                    }
                    _ => {
                        peer.respond_error(id, METHOD_NOT_FOUND, "rein does not serve this method")
                    }
                },
                Incoming::Notification { method, params } => {
                    if method == "session/cancel"
                        && let Some(session) = params.get("sessionId").and_then(Value::as_str)
                        && let Some((_, steering, _)) = self.session(session)
                    {
                        steering.interrupt();
                    }
                }
            }
        }
        let why = reading.await.unwrap_or_default();
        tracing::debug!(reason = %why, "the ACP client left");
        Ok(())
    }

    #[expect(
        clippy::too_many_lines,
        reason = "one ACP prompt from its start to its stop reason"
    )]
    async fn prompt(&self, params: &Value, peer: &Peer) -> Result<&'static str, AgentError> {
        let session = params
            .get("sessionId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let (conversation, _, cwd) = self.session(&session).ok_or_else(|| {
            AgentError::new(
                rein_wire::error::codes::SESSION_NOT_FOUND,
                format!("no ACP session `{}`", crate::progress::clean(&session, 80)),
            )
        })?;
        let text = prompt_text(params);
        let mut conversation = conversation.lock().await;
        let mut ui = conversation.subscribe();
        let notify = |update: Value| {
            peer.notify(
                "session/update",
                json!({"sessionId": session, "update": update}),
            );
        };
        let announced = Announced::default();
        let announce = |call_id: &str, tool: &str, arguments: &Value, status: &str| {
            notify(announced.update(&cwd, call_id, tool, arguments, status));
        };
        let forward = |kind: UiKind| match kind {
            UiKind::TextDelta { text } => notify(json!({
                "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})),
            UiKind::ReasoningDelta { text } => notify(json!({
                "sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}})),
            UiKind::ToolCall {
                call_id,
                tool,
                arguments,
            } => announce(&call_id, &tool, &arguments, "in_progress"),
            UiKind::ToolResult { call_id, ok, .. } => {
                // A call refused before it ran was never announced.
                announce(
                    &call_id,
                    "tool call",
                    &Value::Null,
                    if ok { "completed" } else { "failed" },
                );
            }
            _ => {}
        };
        let mut outcome = {
            let turn = conversation.turn(&text);
            let mut turn = std::pin::pin!(turn);
            loop {
                tokio::select! {
                    outcome = &mut turn => break outcome?,
                    Ok(event) = ui.recv() => forward(event.kind),
                }
            }
        };
        loop {
            while let Ok(event) = ui.try_recv() {
                forward(event.kind);
            }
            let TurnOutcome::AwaitingApproval(pending) = &outcome else {
                break;
            };
            announce(
                &pending.call_id,
                &pending.tool,
                &pending.arguments,
                "pending",
            );
            let asked = permission_request(&session, pending, &cwd);
            let answer = peer.request("session/request_permission", asked).await;
            let client = self
                .client
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            let surface = Surface::product("acp", &client);
            let approval = pending.approval_id.clone();
            let chosen = chosen_option(answer.ok());
            outcome = match chosen.as_deref() {
                Some("allow-once") => {
                    run_resumed(&mut conversation, &mut ui, &forward, |c| {
                        Box::pin(c.decide_and_resume(
                            &approval,
                            Answer::Approve(LeaseScope::Once),
                            &surface,
                        ))
                    })
                    .await?
                }
                Some(_) => {
                    run_resumed(&mut conversation, &mut ui, &forward, |c| {
                        Box::pin(c.decide_and_resume(&approval, Answer::Deny, &surface))
                    })
                    .await?
                }
                // Cancelled, or the client failed to answer: nothing runs.
                None => {
                    conversation
                        .stop_by(&format!("acp:{client}: the permission was cancelled"))
                        .await?
                }
            };
        }
        stop_reason(outcome)
    }
}

/// The prompt's text blocks, one per line (other blocks are not read).
fn prompt_text(params: &Value) -> String {
    params
        .get("prompt")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The option a client selected in its permission answer; `None` when it
/// cancelled or did not answer.
fn chosen_option(answer: Option<Value>) -> Option<String> {
    answer
        .filter(|a| a.pointer("/outcome/outcome").and_then(Value::as_str) == Some("selected"))
        .and_then(|a| {
            a.pointer("/outcome/optionId")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
}

/// ACP's stop reason for how the turn ended.
fn stop_reason(outcome: TurnOutcome) -> Result<&'static str, AgentError> {
    Ok(match outcome {
        TurnOutcome::Finished { .. } => "end_turn",
        TurnOutcome::Interrupted => "cancelled",
        TurnOutcome::Budget { .. } | TurnOutcome::LoopDetected => "max_turn_requests",
        TurnOutcome::Error { error } => return Err(error),
        TurnOutcome::AwaitingApproval(_) => "end_turn",
    })
}

/// The calls a client was told of. A client shows a call from its
/// `tool_call`: each is announced once, first — before a permission is
/// asked for it, before any update — and every later word about it is a
/// `tool_call_update`.
#[derive(Default)]
struct Announced(std::sync::Mutex<std::collections::HashSet<String>>);

impl Announced {
    /// The update saying `call_id` is now at `status`.
    fn update(
        &self,
        cwd: &std::path::Path,
        call_id: &str,
        tool: &str,
        arguments: &Value,
        status: &str,
    ) -> Value {
        let first = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(call_id.to_owned());
        if first {
            json!({
                "sessionUpdate": "tool_call", "toolCallId": call_id, "title": tool,
                "kind": kind_of(tool), "status": status,
                "locations": locations(cwd, arguments), "rawInput": arguments})
        } else {
            json!({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status})
        }
    }
}

/// `session/request_permission` for `pending`, naming its call's own id.
fn permission_request(
    session: &str,
    pending: &rein_runner::ApprovalRequest,
    cwd: &std::path::Path,
) -> Value {
    json!({
        "sessionId": session,
        "toolCall": {"toolCallId": pending.call_id, "title": pending.tool,
                     "kind": kind_of(&pending.tool), "status": "pending",
                     "locations": locations(cwd, &pending.arguments), "rawInput": pending.arguments},
        "options": [
            {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ],
    })
}

/// Run `step` on the conversation while its live events are forwarded.
async fn run_resumed<'c>(
    conversation: &'c mut Conversation,
    ui: &mut tokio::sync::broadcast::Receiver<rein_runner::UiEvent>,
    forward: &impl Fn(UiKind),
    step: impl FnOnce(&'c mut Conversation) -> BoxFuture<'c, Result<TurnOutcome, AgentError>>,
) -> Result<TurnOutcome, AgentError> {
    let mut turn = step(conversation);
    loop {
        tokio::select! {
            outcome = &mut turn => return outcome,
            Ok(event) = ui.recv() => forward(event.kind),
        }
    }
}
