//! Driving any ACP agent: the agent runs as a child speaking JSON-RPC on
//! its stdio; rein is its client. A run: `initialize`, `session/new` in
//! the working directory, `session/prompt` (and, in a run that stays, a
//! next `session/prompt` in the same session per turn: ACP has no
//! steering, so words said while a prompt runs wait for it); the agent's
//! `session/update`s feed [`AcpStream`] in the order they arrived, and its
//! `session/request_permission` requests go to rein's approvals — recorded
//! (`approval.requested`, `approval.decided`) and decided only by a person
//! ([`Person`]), never by rein or the agent. The client advertises no file
//! system or terminal: the agent works with its own tools, gated by those
//! permission requests.
//!
//! Incoming lines are bounded ([`crate::jsonrpc::MAX_MESSAGE_BYTES`]): a message past it
//! ends the connection, and the run fails.
//!
//! Not here: what a message means (`acp_stream.rs`), the loop every
//! hosted kind shares (`driver.rs`).

use std::sync::Arc;

use rein_wire::AgentError;
use serde_json::{Value, json};
use tokio::process::Child;
use tokio_util::sync::CancellationToken;

use crate::acp_stream::AcpStream;
use crate::child::{Driven, HostSpec};
use crate::driver::{Adapter, Next, Taking, drive_with};
use crate::heard::Mouth;
use crate::jsonrpc::{self, Exchange, Heard, Incoming, METHOD_NOT_FOUND};
use crate::person::{Person, Question, Verdict};
use crate::progress::Progress;
use crate::record::Recorder;
use crate::reducer::Reducer;
use crate::session::{RenderMode, SessionHost};

/// The ACP protocol version rein speaks.
pub const PROTOCOL_VERSION: u64 = 1;

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
    /// The agent stays after its answer for the next prompt, started by a
    /// person's words, at most this long idle (`Taking::stays`).
    pub stays: Option<crate::driver::Stays>,
}

/// Run one prompt against the ACP agent `spec` starts.
pub async fn drive_acp(
    spec: &HostSpec,
    ask: AcpAsk,
    reducer: &mut AcpStream,
    recorder: Option<&mut Recorder>,
    show: &mut (dyn FnMut(&Progress) + Send),
    stop: CancellationToken,
) -> Result<Driven, AgentError> {
    let AcpAsk {
        prompt,
        person,
        view,
        stays,
    } = ask;
    let mut kind = Acp {
        reducer,
        cwd: spec.cwd.display().to_string(),
        prompt,
        exchange: None,
        answer: None,
        session: Value::Null,
    };
    let taking = Taking {
        view,
        person: Some(person),
        stays,
    };
    drive_with(&mut kind, spec, recorder, show, stop, taking).await
}

/// An ACP agent's run as the loop drives it.
struct Acp<'r> {
    reducer: &'r mut AcpStream,
    cwd: String,
    prompt: String,
    /// The connection; the prompt's exchange its opening (the agent's
    /// session and the prompt's answer).
    exchange: Option<Exchange<Result<(Value, Value), jsonrpc::RpcError>>>,
    /// The prompt's answer, fed once what arrived before it was.
    answer: Option<Value>,
    /// The agent's session, once made: each next prompt goes to it.
    session: Value,
}

impl Adapter for Acp<'_> {
    /// The request's id and its parameters (its options, its call).
    type Ticket = (Value, Value);

    fn mode(&self) -> RenderMode {
        RenderMode::Acp
    }

    fn stdin(&self) -> bool {
        true
    }

    async fn start(&mut self, child: &mut Child) -> Result<Option<Mouth>, AgentError> {
        let (cwd, prompt) = (self.cwd.clone(), std::mem::take(&mut self.prompt));
        self.exchange = Some(Exchange::start(child, |peer| prompted(peer, cwd, prompt))?);
        Ok(None)
    }

    async fn next(&mut self) -> Next<Self::Ticket> {
        let Some(exchange) = self.exchange.as_mut() else {
            self.reducer.stream_ended();
            return Next::Over;
        };
        let next = if self.answer.is_some() {
            exchange.arrived()
        } else {
            match exchange.next().await {
                Heard::Opened(answered) => {
                    self.answer = Some(match answered {
                        Ok((session, result)) => {
                            self.session = session;
                            json!({"result": result})
                        }
                        Err(e) => json!({"error": {"message": e.to_string()}}),
                    });
                    // What arrived before the answer is read first.
                    exchange.arrived()
                }
                Heard::Message(next) => next,
            }
        };
        let peer = &exchange.peer;
        match next {
            Some(Incoming::Notification { method, params }) => {
                let message = json!({"method": method, "params": params});
                self.reducer.feed(message.to_string().as_bytes());
                Next::Fed {
                    words: Some(answer_words(&message).to_owned()),
                }
            }
            Some(Incoming::Request { id, method, params })
                if method == "session/request_permission" =>
            {
                let question = self.question(&params);
                Next::Asks(question, (id, params))
            }
            Some(Incoming::Request { id, method, .. }) => {
                self.reducer
                    .feed(json!({"method": method}).to_string().as_bytes());
                peer.respond_error(
                    id,
                    METHOD_NOT_FOUND,
                    "rein's client does not serve this method",
                );
                Next::Fed { words: None }
            }
            None => match self.answer.take() {
                Some(answer) => {
                    self.reducer.feed(answer.to_string().as_bytes());
                    if self.reducer.outcome().failure.is_some() {
                        Next::Over
                    } else {
                        Next::TurnOver
                    }
                }
                // The agent closed its side before answering.
                None => {
                    self.reducer.stream_ended();
                    Next::Over
                }
            },
        }
    }

    /// Words never reach a prompt that runs (ACP has no steering): they
    /// wait for its answer, and the next prompt carries them.
    fn takes_turns(&self) -> bool {
        true
    }

    async fn start_turn(
        &mut self,
        prompt: String,
        _mouth: &mut Option<Mouth>,
    ) -> Result<(), AgentError> {
        let exchange = Exchange::connected(&mut self.exchange, "the ACP agent")?;
        self.reducer.next_prompt();
        let (peer, session) = (exchange.peer.clone(), self.session.clone());
        exchange.reopen(async move {
            let params =
                json!({"sessionId": session, "prompt": [{"type": "text", "text": prompt}]});
            let answer = peer.request("session/prompt", params).await?;
            Ok((session, answer))
        });
        Ok(())
    }

    fn answer(&mut self, (id, params): Self::Ticket, verdict: Verdict) {
        let allow = verdict == Verdict::Allow;
        if !allow {
            let call = params.get("toolCall").cloned().unwrap_or(Value::Null);
            self.reducer.refused(&call);
        }
        if let Some(exchange) = &self.exchange {
            exchange
                .peer
                .respond(id, permission_outcome(&params, allow));
        }
    }

    fn reducer(&mut self) -> &mut dyn Reducer {
        self.reducer
    }
}

impl Acp<'_> {
    /// An agent's `session/request_permission`, fed to the reducer, as the
    /// question a person is asked: the call's kind, its one detail, and
    /// exactly what it runs.
    fn question(&mut self, params: &Value) -> Question {
        self.reducer.feed(
            json!({"method": "session/request_permission"})
                .to_string()
                .as_bytes(),
        );
        let call = params.get("toolCall").cloned().unwrap_or(Value::Null);
        let (tool, detail) = self.reducer.asked_about(&call);
        Question {
            approval_id: String::new(),
            call_id: crate::progress::clean_value(call.get("toolCallId"), 120),
            shows: crate::shown::acp_call(&call, self.reducer.cwd()),
            tool,
            detail,
        }
    }
}

/// The ACP exchange that asks `prompt`: initialize (no file system or
/// terminal of the client's), a new session in `cwd`, the prompt; its
/// answer is the prompt's.
async fn prompted(
    peer: jsonrpc::Peer,
    cwd: String,
    prompt: String,
) -> Result<(Value, Value), jsonrpc::RpcError> {
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
    let answer = peer
        .request(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": prompt}]}),
        )
        .await?;
    Ok((id, answer))
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
