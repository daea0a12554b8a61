//! Codex driven through `codex app-server`: the protocol Codex offers for
//! a client that takes part in its runs (JSON-RPC on stdio, as its IDE
//! extension speaks it). Chosen over `codex exec --json`, which asks
//! nobody (its approvals are a fixed policy), and over Codex as an MCP
//! server, which Codex 0.169 no longer ships: the app server asks its
//! client before a command runs or a file changes
//! (`item/commandExecution/requestApproval`, `item/fileChange/requestApproval`),
//! so each becomes a rein approval — recorded, put to the run's person,
//! decidable from any surface (`rein approve`, the page), a stop winning —
//! and its answer (`accept`, `decline`, `cancel` on a stop) goes back.
//!
//! A run: `initialize`, `initialized`, `thread/start` in the working
//! directory with approval policy `untrusted` (every command Codex does
//! not know to be safe is asked about) and the `workspace-write` sandbox,
//! `turn/start`; the run ends at `turn/completed`, or — in a run that
//! stays — each next turn is a `turn/start` in the same thread. Words said
//! meanwhile (`rein say`, the page, a viewer's line) are recorded and
//! steered into the open turn (`turn/steer`); a stop posted ends the run. A
//! thread a person went on in Codex's own UI is taken back with
//! `thread/resume` (same policy and sandbox), waiting for its next turn. Its
//! notifications are read as the `codex exec --json` records they mirror
//! ([`ExecRecords`]) by the same reducer ([`CodexStream`]), so progress,
//! the record, refusals and loop detection are one code for both.
//!
//! Not here: what a record means (`codex.rs`), the loop every hosted
//! kind shares (`driver.rs`), deciding (`asks.rs`).

use std::collections::HashMap;

use rein_wire::AgentError;
use serde_json::{Value, json};
use tokio::process::Child;
use tokio_util::sync::CancellationToken;

use crate::acp::AcpAsk;
use crate::child::{Driven, HostSpec};
use crate::codex::CodexStream;
use crate::driver::{Adapter, Next, Taking, drive_with};
use crate::heard::Mouth;
use crate::jsonrpc::{self, Exchange, Heard, Incoming, METHOD_NOT_FOUND};
use crate::person::{Question, Verdict};
use crate::progress::{Progress, clean_value, relative_path};
use crate::record::Recorder;
use crate::reducer::Reducer;

/// The app server's questions rein answers.
const APPROVALS: [&str; 2] = [
    "item/commandExecution/requestApproval",
    "item/fileChange/requestApproval",
];

/// App-server notifications as the `codex exec --json` records they mirror.
/// Keeps what a later record needs: the last token usage (sent before the
/// turn's end) and each file change's first path (its question names it).
#[derive(Debug, Default)]
pub struct ExecRecords {
    usage: Value,
    paths: HashMap<String, String>,
    /// Each file change's changes (`[{path, kind, diff}]`), for its question.
    changes: HashMap<String, Value>,
}

impl ExecRecords {
    /// The record for `method`'s notification; `None` when it has no
    /// counterpart the reducer reads (it is activity at most).
    pub fn record(&mut self, method: &str, params: &Value) -> Option<Value> {
        match method {
            "thread/started" => {
                Some(json!({"type": "thread.started", "thread_id": params.pointer("/thread/id")}))
            }
            "turn/started" => Some(json!({"type": "turn.started"})),
            "item/started" | "item/completed" => {
                let item = exec_item(params.get("item")?)?;
                if item["type"] == "file_change"
                    && let (Some(id), Some(path)) = (
                        item["id"].as_str(),
                        item.pointer("/changes/0/path").and_then(Value::as_str),
                    )
                {
                    self.paths.insert(id.to_owned(), path.to_owned());
                    if let Some(changes) = params.pointer("/item/changes") {
                        self.changes.insert(id.to_owned(), changes.clone());
                    }
                }
                let kind = method.replace('/', ".");
                Some(json!({"type": kind, "item": item}))
            }
            "thread/tokenUsage/updated" => {
                let last = params.pointer("/tokenUsage/last")?;
                self.usage = json!({
                    "input_tokens": last.get("inputTokens"),
                    "cached_input_tokens": last.get("cachedInputTokens"),
                    "output_tokens": last.get("outputTokens"),
                });
                None
            }
            "turn/completed" => {
                let turn = params.get("turn")?;
                if turn.get("status").and_then(Value::as_str) == Some("completed") {
                    return Some(json!({"type": "turn.completed", "usage": self.usage}));
                }
                let message = turn
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map_or_else(
                        || format!("the turn ended {}", clean_value(turn.get("status"), 40)),
                        str::to_owned,
                    );
                Some(json!({"type": "turn.failed", "error": {"message": message}}))
            }
            "error" => Some(json!({"type": "error", "message": params.pointer("/error/message")})),
            _ => None,
        }
    }

    /// The question an approval request asks: its progress line names a
    /// command by Codex's reason and a file change by its first path,
    /// relative to `cwd`; what it shows is the command line itself (and
    /// where it runs) or every change's diff (`crate::shown`).
    pub fn question(&self, method: &str, params: &Value, cwd: &str) -> Question {
        let call_id = clean_value(params.get("itemId"), 120);
        let reason = clean_value(params.get("reason"), 200);
        let (tool, detail, shows) = if method.contains("fileChange") {
            let path = self
                .paths
                .get(&call_id)
                .map(|p| relative_path(p, cwd))
                .unwrap_or_default();
            let changes = self.changes.get(&call_id).cloned().unwrap_or(Value::Null);
            ("file_change", path, crate::shown::changes(&changes, cwd))
        } else {
            let mut input = serde_json::Map::new();
            for key in ["command", "cwd", "reason"] {
                if let Some(value) = params.get(key) {
                    input.insert(key.to_owned(), value.clone());
                }
            }
            let shows = crate::shown::call("command", &Value::Object(input), cwd);
            ("command", reason, shows)
        };
        Question {
            approval_id: String::new(),
            call_id,
            tool: tool.to_owned(),
            detail,
            shows,
        }
    }
}

/// An app-server item as the `codex exec --json` item it mirrors (`None`
/// for one the reducer does not read: the person's own message).
fn exec_item(item: &Value) -> Option<Value> {
    let kind = match item.get("type").and_then(Value::as_str)? {
        "agentMessage" => "agent_message",
        "reasoning" => "reasoning",
        "commandExecution" => "command_execution",
        "fileChange" => "file_change",
        "mcpToolCall" => "mcp_tool_call",
        "webSearch" => "web_search",
        "userMessage" => return None,
        _ => "unknown",
    };
    let status = match item.get("status").and_then(Value::as_str) {
        Some("inProgress") => "in_progress",
        Some(other) => other,
        None => "completed",
    };
    let changes: Vec<Value> = item
        .get("changes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| json!({"path": c.get("path"), "kind": c.pointer("/kind/type")}))
        .collect();
    Some(json!({
        "id": item.get("id"),
        "type": kind,
        "text": item.get("text"),
        "command": item.get("command"),
        "aggregated_output": item.get("aggregatedOutput"),
        "exit_code": item.get("exitCode"),
        "status": status,
        "changes": changes,
        "server": item.get("server"),
        "tool": item.get("tool"),
        "arguments": item.get("arguments"),
        "query": item.get("query"),
    }))
}

/// How a run's thread opens.
enum Opens {
    /// A new thread, asked its first turn.
    New(String),
    /// A thread a person went on elsewhere (Codex's own UI), resumed with
    /// no turn yet.
    Resumed(String),
}

/// The exchange that opens the run's thread in `cwd` — the handshake, then
/// a new thread and its first turn, or the thread resumed — with approval
/// policy `untrusted` and the `workspace-write` sandbox either way; the
/// thread's id and the turn's (`null`: none yet).
async fn opened(peer: jsonrpc::Peer, cwd: String, opens: Opens) -> Result<(Value, Value), String> {
    let fail = |e: jsonrpc::RpcError| e.to_string();
    peer.request(
        "initialize",
        json!({"clientInfo": {"name": "rein", "version": env!("CARGO_PKG_VERSION")}}),
    )
    .await
    .map_err(fail)?;
    peer.notify("initialized", json!({}));
    let mut params =
        json!({"cwd": cwd, "approvalPolicy": "untrusted", "sandbox": "workspace-write"});
    let prompt = match opens {
        Opens::Resumed(id) => {
            params["threadId"] = json!(id);
            params["excludeTurns"] = json!(true);
            let thread = peer.request("thread/resume", params).await.map_err(fail)?;
            let id = thread.pointer("/thread/id").cloned().unwrap_or(json!(id));
            return Ok((id, Value::Null));
        }
        Opens::New(prompt) => prompt,
    };
    let thread = peer.request("thread/start", params).await.map_err(fail)?;
    let id = thread.pointer("/thread/id").cloned().unwrap_or(Value::Null);
    turn_started(&peer, id, prompt).await
}

/// A turn asked `prompt` in `thread`: the thread's id and the turn's.
async fn turn_started(
    peer: &jsonrpc::Peer,
    thread: Value,
    prompt: String,
) -> Result<(Value, Value), String> {
    let params = json!({"threadId": thread, "input": [{"type": "text", "text": prompt}]});
    let turn = peer
        .request("turn/start", params)
        .await
        .map_err(|e| e.to_string())?;
    Ok((
        thread,
        turn.pointer("/turn/id").cloned().unwrap_or(Value::Null),
    ))
}

/// Run one request against `codex app-server` as `spec` starts it.
pub async fn drive_codex_app(
    spec: &HostSpec,
    ask: AcpAsk,
    reducer: &mut CodexStream,
    recorder: Option<&mut Recorder>,
    show: &mut (dyn FnMut(&Progress) + Send),
    stop: CancellationToken,
) -> Result<Driven, AgentError> {
    run(spec, ask, None, reducer, recorder, show, stop).await
}

/// Resume `thread` in `codex app-server` as `spec` starts it, waiting for
/// its first turn (`ask`'s prompt is not asked: the run stays, and a
/// person's words start each turn).
pub async fn resume_codex_app(
    spec: &HostSpec,
    thread: &str,
    ask: AcpAsk,
    reducer: &mut CodexStream,
    recorder: Option<&mut Recorder>,
    show: &mut (dyn FnMut(&Progress) + Send),
    stop: CancellationToken,
) -> Result<Driven, AgentError> {
    let thread = Some(thread.to_owned());
    run(spec, ask, thread, reducer, recorder, show, stop).await
}

/// Start (or resume) a thread and drive its turns.
async fn run(
    spec: &HostSpec,
    ask: AcpAsk,
    resume: Option<String>,
    reducer: &mut CodexStream,
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
    let mut kind = CodexApp {
        reducer,
        cwd: spec.cwd.display().to_string(),
        prompt,
        resume,
        exchange: None,
        records: ExecRecords::default(),
        thread: Value::Null,
    };
    let taking = Taking {
        view,
        person: Some(person),
        stays,
    };
    drive_with(&mut kind, spec, recorder, show, stop, taking).await
}

/// Codex's app server's run as the loop drives it.
struct CodexApp<'r> {
    reducer: &'r mut CodexStream,
    cwd: String,
    prompt: String,
    /// The thread to resume instead of starting one with `prompt`.
    resume: Option<String>,
    /// The connection; the handshake and the turn's start its opening
    /// (the thread's id and the turn's).
    exchange: Option<Exchange<Result<(Value, Value), String>>>,
    records: ExecRecords,
    /// The thread, once started: each next turn is started in it.
    thread: Value,
}

impl Adapter for CodexApp<'_> {
    /// The request's id.
    type Ticket = Value;

    fn stdin(&self) -> bool {
        true
    }

    /// Words said mid-run are steered into the open turn once it is open.
    fn hears(&self) -> bool {
        true
    }

    async fn start(&mut self, child: &mut Child) -> Result<Option<Mouth>, AgentError> {
        let (cwd, prompt) = (self.cwd.clone(), std::mem::take(&mut self.prompt));
        let opens = match self.resume.take() {
            Some(thread) => Opens::Resumed(thread),
            None => Opens::New(prompt),
        };
        self.exchange = Some(Exchange::start(child, |peer| opened(peer, cwd, opens))?);
        Ok(None)
    }

    async fn next(&mut self) -> Next<Self::Ticket> {
        let Some(exchange) = self.exchange.as_mut() else {
            self.reducer.stream_ended();
            return Next::Over;
        };
        let next = match exchange.next().await {
            Heard::Opened(Ok((thread, Value::Null))) => {
                // Resumed: no turn open until a person's words start one.
                self.thread = thread;
                return Next::Fed { words: None };
            }
            Heard::Opened(Ok((thread, turn))) => {
                let peer = exchange.peer.clone();
                self.thread = thread.clone();
                return Next::Hears(Mouth::Steer { peer, thread, turn });
            }
            Heard::Opened(Err(e)) => {
                self.reducer
                    .framing_error(&format!("codex app-server refused the request: {e}"));
                return Next::Over;
            }
            Heard::Message(next) => next,
        };
        let peer = &exchange.peer;
        match next {
            Some(Incoming::Notification { method, params }) => {
                if let Some(record) = self.records.record(&method, &params) {
                    self.reducer.feed(record.to_string().as_bytes());
                }
                if self.reducer.outcome().failure.is_some() {
                    Next::Over
                } else if method == "turn/completed" {
                    Next::TurnOver
                } else {
                    Next::Fed { words: None }
                }
            }
            Some(Incoming::Request { id, method, params })
                if APPROVALS.contains(&method.as_str()) =>
            {
                Next::Asks(self.records.question(&method, &params, &self.cwd), id)
            }
            Some(Incoming::Request { id, .. }) => {
                peer.respond_error(
                    id,
                    METHOD_NOT_FOUND,
                    "rein's client does not serve this method",
                );
                Next::Fed { words: None }
            }
            None => {
                // Codex closed its side before the turn ended.
                self.reducer.stream_ended();
                Next::Over
            }
        }
    }

    /// The next turn: `turn/start` in the same thread; words steer it
    /// once it is open (a new mouth names it).
    fn takes_turns(&self) -> bool {
        true
    }

    async fn start_turn(
        &mut self,
        prompt: String,
        mouth: &mut Option<Mouth>,
    ) -> Result<(), AgentError> {
        let exchange = Exchange::connected(&mut self.exchange, "codex app-server")?;
        // Words said before the new turn opens are queued for the next.
        *mouth = None;
        let (peer, thread) = (exchange.peer.clone(), self.thread.clone());
        // A thread still resuming is resumed first: its turn follows.
        let resuming = exchange.opening();
        exchange.reopen(async move {
            let thread = match resuming {
                Some(resuming) => resuming.await?.0,
                None => thread,
            };
            turn_started(&peer, thread, prompt).await
        });
        Ok(())
    }

    fn answer(&mut self, id: Self::Ticket, verdict: Verdict) {
        let decision = match verdict {
            Verdict::Allow => "accept",
            Verdict::Deny => "decline",
            Verdict::Cancel => "cancel",
        };
        if let Some(exchange) = &self.exchange {
            exchange.peer.respond(id, json!({"decision": decision}));
        }
    }

    fn reducer(&mut self) -> &mut dyn Reducer {
        self.reducer
    }
}
