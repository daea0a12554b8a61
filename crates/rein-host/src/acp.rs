//! Driving any ACP agent: the agent runs as a child speaking JSON-RPC on
//! its stdio; rein is its client. One prompt per run: `initialize`,
//! `session/new` in the working directory, `session/prompt`; the agent's
//! `session/update`s feed [`AcpStream`] in the order they arrived, and its
//! `session/request_permission` requests go to rein's approvals — recorded
//! (`approval.requested`, `approval.decided`) and decided only by a person
//! ([`Person`]), never by rein or the agent. The client advertises no file
//! system or terminal: the agent works with its own tools, gated by those
//! permission requests.
//!
//! Incoming lines are bounded ([`MAX_MESSAGE_BYTES`]): a message past it
//! ends the connection, and the run fails.
//!
//! Not here: what a message means (`acp_stream.rs`), the process rules
//! shared with the CLI drivers (`driver.rs`).

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use rein_wire::AgentError;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::acp_stream::AcpStream;
use crate::driver::{Driven, Ended, HostSpec, Spawned, conclude, take_steps};
use crate::jsonrpc::{self, Incoming, METHOD_NOT_FOUND};
use crate::progress::Progress;
use crate::protocol::{self, Connected};
use crate::record::Recorder;
use crate::reducer::Reducer;
use crate::session::{RenderMode, SessionHost};

pub use crate::protocol::MAX_MESSAGE_BYTES;

/// The ACP protocol version rein speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// What a person is asked before a hosted agent's call runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The rein approval it is recorded as ("" before it is recorded).
    pub approval_id: String,
    /// The agent's call id.
    pub call_id: String,
    /// The tool's kind (`edit`, `execute`, …).
    pub tool: String,
    /// Its one allowed detail (a path), "" for none: the progress line's.
    pub detail: String,
    /// Exactly what runs on a yes: the command line, a write's content, an
    /// edit's text, the URL, every argument (`crate::shown`); the agent's
    /// text, made visible by the surface that shows it.
    pub shows: String,
}

impl Question {
    /// What it shows, as the preview every surface draws (bounded there,
    /// the cut said).
    pub fn preview(&self) -> rein_wire::Preview {
        let subject = if self.detail.is_empty() {
            self.tool.clone()
        } else {
            format!("{} {}", self.tool, self.detail)
        };
        rein_wire::Preview::new(rein_wire::PreviewKind::Text, subject, &self.shows)
    }
}

/// A person's answer: yes or no, and who said it (their surface).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Run it (once).
    pub allow: bool,
    /// The person's surface, recorded as the decider.
    pub surface: rein_approvals::Surface,
}

/// A person's surface. `None`: nobody answered (the call is refused).
pub trait Person: Send + Sync {
    /// Ask.
    fn ask(&self, question: Question) -> BoxFuture<'static, Option<Answer>>;
}

/// What to ask an ACP agent, who decides its permissions, and where its
/// session is watched.
pub struct AcpAsk {
    /// The person's request.
    pub prompt: String,
    /// The person asked before a call runs.
    pub person: Arc<dyn Person>,
    /// A session host to open the run's session in (`acp` mode), for
    /// viewers to watch; closing that session's channel stops the run.
    pub view: Option<(SessionHost, String)>,
}

/// The ACP exchange that asks `prompt`: initialize (no file system or
/// terminal of the client's), a new session in `cwd`, the prompt; its
/// answer is the prompt's.
async fn prompted(
    peer: jsonrpc::Peer,
    cwd: String,
    prompt: String,
) -> Result<Value, jsonrpc::RpcError> {
    peer.request(
        "initialize",
        json!({
            "protocolVersion": PROTOCOL_VERSION,
            // No file system or terminal of the client's: the agent
            // works with its own tools, gated by permission requests.
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
            "clientInfo": {"name": "rein", "version": env!("CARGO_PKG_VERSION")},
        }),
    )
    .await?;
    let session = peer
        .request("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await?;
    let id = session.get("sessionId").cloned().unwrap_or(Value::Null);
    peer.request(
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "text", "text": prompt}]}),
    )
    .await
}

/// Run one prompt against the ACP agent `spec` starts.
#[expect(
    clippy::too_many_lines,
    reason = "the three drive loops become one over per-kind adapters (issue 57)"
)]
pub async fn drive_acp(
    spec: &HostSpec,
    ask: AcpAsk,
    reducer: &mut AcpStream,
    mut recorder: Option<&mut Recorder>,
    show: &mut (dyn FnMut(&Progress) + Send),
    stop: CancellationToken,
) -> Result<Driven, AgentError> {
    let started = Instant::now();
    let AcpAsk {
        prompt,
        person,
        view,
    } = ask;
    let Connected {
        view,
        spawned:
            Spawned {
                mut child,
                mut guard,
                stderr,
            },
        peer,
        mut incoming,
        reading: _reading,
    } = protocol::connect(spec, view, RenderMode::Acp, &stop)?;
    let prompting = prompted(peer.clone(), spec.cwd.display().to_string(), prompt);
    let mut prompting = std::pin::pin!(prompting);
    let deadline = tokio::time::sleep(spec.timeout);
    let mut deadline = std::pin::pin!(deadline);
    let mut ended = None;
    let mut finished = false;
    let mut answer: Option<Value> = None;
    let mut last = Value::Null;
    while !finished {
        let next = if answer.is_none() {
            tokio::select! {
                answered = &mut prompting => {
                    answer = Some(match answered {
                        Ok(result) => json!({"result": result}),
                        Err(e) => json!({"error": {"message": e.to_string()}}),
                    });
                    // What arrived before the answer is read first.
                    incoming.try_recv().ok()
                }
                next = incoming.recv() => next,
                () = &mut deadline => { ended = Some(Ended::Timeout); break; }
                () = stop.cancelled() => { ended = Some(Ended::Stopped); break; }
            }
        } else {
            incoming.try_recv().ok()
        };
        match next {
            Some(Incoming::Notification { method, params }) => {
                let message = json!({"method": method, "params": params});
                reducer.feed(message.to_string().as_bytes());
                last = message;
            }
            Some(Incoming::Request { id, method, params })
                if method == "session/request_permission" =>
            {
                let until = async {
                    tokio::select! {
                        () = &mut deadline => Ended::Timeout,
                        () = stop.cancelled() => Ended::Stopped,
                    }
                };
                let (allow, cut) = permission(
                    reducer,
                    recorder.as_deref_mut(),
                    person.as_ref(),
                    &params,
                    until,
                )
                .await?;
                ended = cut;
                peer.respond(id, permission_outcome(&params, allow));
                if ended.is_some() {
                    break;
                }
            }
            Some(Incoming::Request { id, method, .. }) => {
                reducer.feed(json!({"method": method}).to_string().as_bytes());
                peer.respond_error(
                    id,
                    METHOD_NOT_FOUND,
                    "rein's client does not serve this method",
                );
            }
            None => match answer.take() {
                Some(answer) => {
                    reducer.feed(answer.to_string().as_bytes());
                    finished = true;
                }
                None => {
                    // The agent closed its side before answering.
                    reducer.stream_ended();
                    finished = true;
                }
            },
        }
        let steps = crate::driver::masked(reducer.drain(), &crate::driver::secrets_of(spec));
        if let Some(view) = &view {
            let words = std::mem::take(&mut last);
            view.show(Some(answer_words(&words)), &steps);
        }
        if take_steps(steps, show, recorder.as_deref_mut()).await? {
            ended = Some(Ended::LoopDetected);
            finished = true;
        }
    }
    // One prompt per run: the agent is done with (or stopped) now.
    drop(view);
    guard.kill();
    let _ = child.wait().await;
    conclude(spec, reducer, recorder, ended, None, stderr, started).await
}

/// An agent's `session/request_permission`: recorded, put to the person,
/// the decision recorded. Whether the call may run, and the run's end when
/// `until` (its deadline or a stop) came before an answer.
async fn permission(
    reducer: &mut AcpStream,
    mut recorder: Option<&mut Recorder>,
    person: &dyn Person,
    params: &Value,
    until: impl std::future::Future<Output = Ended>,
) -> Result<(bool, Option<Ended>), AgentError> {
    reducer.feed(
        json!({"method": "session/request_permission"})
            .to_string()
            .as_bytes(),
    );
    let call = params.get("toolCall").cloned().unwrap_or(Value::Null);
    let (tool, detail) = reducer.asked_about(&call);
    let call_id = crate::progress::clean_value(call.get("toolCallId"), 120);
    let question = Question {
        approval_id: String::new(),
        call_id,
        shows: crate::shown::acp_call(&call, reducer.cwd()),
        tool,
        detail,
    };
    let approval = match recorder.as_deref_mut() {
        Some(r) => Some(r.approval_requested(&question).await?),
        None => None,
    };
    let asked = person.ask(Question {
        approval_id: approval.clone().unwrap_or_default(),
        ..question
    });
    let (said, ended) = tokio::select! {
        said = asked => (said, None),
        ended = until => (None, Some(ended)),
    };
    let allow = said.as_ref().is_some_and(|a| a.allow);
    if let (Some(r), Some(id)) = (recorder, approval) {
        r.approval_decided(&id, said.as_ref()).await?;
    }
    if !allow {
        reducer.refused(&call);
    }
    Ok((allow, ended))
}

/// The answer's words in a message ("" for any other message).
fn answer_words(message: &Value) -> &str {
    if message
        .pointer("/params/update/sessionUpdate")
        .and_then(Value::as_str)
        == Some("agent_message_chunk")
    {
        return message
            .pointer("/params/update/content/text")
            .and_then(Value::as_str)
            .unwrap_or_default();
    }
    ""
}

/// The answer to a permission request: an option chosen by its kind
/// (allow once, or a rejection), never by position or name; `cancelled`
/// when the agent offered none of that kind.
fn permission_outcome(params: &Value, allow: bool) -> Value {
    let wanted: &[&str] = if allow {
        &["allow_once"]
    } else {
        &["reject_once", "reject_always"]
    };
    let options = params.get("options").and_then(Value::as_array);
    let chosen = wanted.iter().find_map(|kind| {
        options?
            .iter()
            .find(|o| o.get("kind").and_then(Value::as_str) == Some(kind))
            .and_then(|o| o.get("optionId").cloned())
    });
    match chosen {
        Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
        None => json!({"outcome": {"outcome": "cancelled"}}),
    }
}
