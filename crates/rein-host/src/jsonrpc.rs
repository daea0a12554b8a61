//! JSON-RPC 2.0 over newline-delimited JSON, both ways at once: what ACP
//! runs on.
//!
//! Hand-written rather than taken from the `agent-client-protocol` crate:
//! that crate (and its schema crate) turn on serde_json's `preserve_order`
//! and `raw_value` for every crate in the build — changing how every map in
//! rein serialises and doubling the size of each JSON value — for a wire
//! format this small. rein speaks ACP's messages as JSON values
//! (`acp.rs`, `acp_serve.rs`).
//!
//! A [`Peer`] sends requests (answered through their id), notifications
//! and responses; what the other side sends arrives as [`Incoming`] in the
//! order it was read. A line past the bound, or one that is not a JSON-RPC
//! message, ends the connection: pending requests fail, the incoming
//! channel closes.
//!
//! Not here: ACP's methods.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use crate::lines::{Line, Lines};

/// Messages read ahead of the one being handled; past it reading waits
/// (the other side's writes block), so a flood cannot grow memory.
pub const INCOMING_QUEUE: usize = 1024;

/// The longest message (line) read from a program.
pub const MAX_MESSAGE_BYTES: usize = 8 * 1024 * 1024;

/// JSON-RPC's code for a method the peer does not serve.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC's code for a failure inside the method.
pub const INTERNAL_ERROR: i64 = -32603;

/// What the other side sent.
#[derive(Debug)]
pub enum Incoming {
    /// A request to answer (with [`Peer::respond`] or [`Peer::respond_error`]).
    Request {
        /// Its id, echoed in the answer.
        id: Value,
        /// The method.
        method: String,
        /// Its parameters.
        params: Value,
    },
    /// A notification.
    Notification {
        /// The method.
        method: String,
        /// Its parameters.
        params: Value,
    },
}

/// An error answer: its code and message.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The code.
    pub code: i64,
    /// The message.
    pub message: String,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>>;

/// One side of a connection. Cheap to clone.
#[derive(Clone)]
pub struct Peer {
    out: mpsc::UnboundedSender<String>,
    pending: Pending,
    next: Arc<AtomicU64>,
    closed: Arc<std::sync::atomic::AtomicBool>,
}

/// Connect over `reader` and `writer`: the peer, what arrives, and the
/// reason the connection ended (when the reading task ends).
pub fn connect(
    reader: impl AsyncRead + Unpin + Send + 'static,
    mut writer: impl AsyncWrite + Unpin + Send + 'static,
    max_line: usize,
) -> (
    Peer,
    mpsc::Receiver<Incoming>,
    tokio::task::JoinHandle<String>,
) {
    let (out, mut lines_out) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        while let Some(line) = lines_out.recv().await {
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
    });
    let pending: Pending = Arc::default();
    let (tx, incoming) = mpsc::channel(INCOMING_QUEUE);
    let waiting = pending.clone();
    let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ended = closed.clone();
    let reading = tokio::spawn(async move {
        let mut lines = Lines::new(Some(reader), max_line);
        let reason = loop {
            let line = match lines.next().await {
                Line::Text(line) => line,
                Line::End => break "the peer closed the connection".to_owned(),
                Line::Oversize => break format!("a message longer than {max_line} bytes"),
                Line::Unterminated => break "the last message has no newline".to_owned(),
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let Ok(message) = serde_json::from_slice::<Value>(&line) else {
                break "a message is not JSON".to_owned();
            };
            let method = message
                .get("method")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            match (method, message.get("id")) {
                (Some(method), Some(id)) => {
                    let _ = tx
                        .send(Incoming::Request {
                            id: id.clone(),
                            method,
                            params,
                        })
                        .await;
                }
                (Some(method), None) => {
                    let _ = tx.send(Incoming::Notification { method, params }).await;
                }
                (None, Some(id)) => {
                    let Some(id) = id.as_u64() else { continue };
                    let Some(reply) = waiting
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .remove(&id)
                    else {
                        continue;
                    };
                    let answer = match message.get("error") {
                        Some(error) => Err(RpcError {
                            code: error
                                .get("code")
                                .and_then(Value::as_i64)
                                .unwrap_or(INTERNAL_ERROR),
                            message: error
                                .get("message")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                        }),
                        None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                    };
                    let _ = reply.send(answer);
                }
                (None, None) => break "a message is neither a call nor an answer".to_owned(),
            }
        };
        // Whoever still waits learns the connection is gone.
        ended.store(true, Ordering::SeqCst);
        waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        reason
    });
    let peer = Peer {
        out,
        pending,
        next: Arc::new(AtomicU64::new(1)),
        closed,
    };
    (peer, incoming, reading)
}

/// A program spoken to over JSON-RPC on its stdio (an ACP agent, Codex's
/// app server): the peer, what it sends, and the opening exchange (the
/// handshake and the request) while it is under way.
pub(crate) struct Exchange<T> {
    /// Its side of the connection.
    pub(crate) peer: Peer,
    incoming: mpsc::Receiver<Incoming>,
    opening: Option<Opening<T>>,
}

/// An exchange's opening under way: the handshake and a request.
pub(crate) type Opening<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// What an [`Exchange`] heard next.
pub(crate) enum Heard<T> {
    /// The opening exchange ended so.
    Opened(T),
    /// A message (`None`: the program closed its side).
    Message(Option<Incoming>),
}

impl<T> Exchange<T> {
    /// Connect to `child`'s stdio and begin `opening` on the peer.
    pub(crate) fn start<F>(
        child: &mut tokio::process::Child,
        opening: impl FnOnce(Peer) -> F,
    ) -> Result<Self, rein_wire::AgentError>
    where
        F: std::future::Future<Output = T> + Send + 'static,
    {
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(rein_wire::AgentError::new(
                rein_wire::error::codes::INTERNAL,
                "the program's stdio was not piped",
            ));
        };
        // The reading task runs for the connection's length.
        let (peer, incoming, _reading) = connect(stdout, stdin, MAX_MESSAGE_BYTES);
        let opening = Box::pin(opening(peer.clone()));
        Ok(Exchange {
            peer,
            incoming,
            opening: Some(opening),
        })
    }

    /// The connection `exchange` holds, to begin a next turn on; a
    /// `hosted_agent_failed` naming `program` when it never connected.
    pub(crate) fn connected<'e>(
        exchange: &'e mut Option<Exchange<T>>,
        program: &str,
    ) -> Result<&'e mut Exchange<T>, rein_wire::AgentError> {
        exchange.as_mut().ok_or_else(|| {
            rein_wire::AgentError::new(
                rein_wire::error::codes::HOSTED_AGENT_FAILED,
                format!("{program} is not connected"),
            )
        })
    }

    /// Begin another exchange on the peer (a next turn's request), heard
    /// as the opening was: its end is [`Heard::Opened`].
    pub(crate) fn reopen(
        &mut self,
        opening: impl std::future::Future<Output = T> + Send + 'static,
    ) {
        self.opening = Some(Box::pin(opening));
    }

    /// The opening still under way, taken (to be awaited before a next
    /// one that depends on it).
    pub(crate) fn opening(&mut self) -> Option<Opening<T>> {
        self.opening.take()
    }

    /// The opening's end or the next message, whichever comes first.
    /// Cancel-safe.
    pub(crate) async fn next(&mut self) -> Heard<T> {
        match self.opening.as_mut() {
            Some(opening) => tokio::select! {
                opened = opening => {
                    self.opening = None;
                    Heard::Opened(opened)
                }
                next = self.incoming.recv() => Heard::Message(next),
            },
            None => Heard::Message(self.incoming.recv().await),
        }
    }

    /// A message that arrived already, if one did.
    pub(crate) fn arrived(&mut self) -> Option<Incoming> {
        self.incoming.try_recv().ok()
    }
}

impl Peer {
    /// Send a request and wait for its answer.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id, reply);
        let gone = || RpcError {
            code: INTERNAL_ERROR,
            message: "the connection closed before the answer".to_owned(),
        };
        if self.closed.load(Ordering::SeqCst) {
            return Err(gone());
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .map_err(|()| gone())?;
        answer.await.unwrap_or_else(|_| Err(gone()))
    }

    /// Send a notification.
    pub fn notify(&self, method: &str, params: Value) {
        let _ = self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Answer a request.
    pub fn respond(&self, id: Value, result: Value) {
        let _ = self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// Answer a request with an error.
    pub fn respond_error(&self, id: Value, code: i64, message: &str) {
        let _ = self
            .send(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}));
    }

    fn send(&self, message: Value) -> Result<(), ()> {
        self.out.send(message.to_string()).map_err(|_| ())
    }
}
