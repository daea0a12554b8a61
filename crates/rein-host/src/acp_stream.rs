//! What an ACP agent says, reduced: its JSON-RPC messages in, steps out,
//! one outcome — pure, like the CLI reducers, so the live client and
//! synthetic messages share it.
//!
//! A line is one message from the agent as JSON: a `session/update`
//! notification (`params.update.sessionUpdate`: `agent_message_chunk`,
//! `agent_thought_chunk`, `tool_call`, `tool_call_update`, `plan`, …), a
//! `session/request_permission` request, or the response to the client's
//! `session/prompt` (`result.stopReason`, or `error`). One prompt is one
//! turn (a session that stays takes more, each after [`AcpStream::next_prompt`]): the answer is the text of its message chunks; `end_turn` closes it
//! well, any other stop reason (`max_tokens`, `max_turn_requests`,
//! `refusal`, `cancelled`) or an error fails it; the stream ending first is
//! a failure. Progress carries a tool's kind and, for file tools, the first
//! location relative to the working directory — never a call's title (it
//! can hold a command line), its raw input or output, thoughts or the
//! answer's text. A permission the person refused is kept once per call.
//! ACP reports no money: the cost stays unknown.
//!
//! Not here: the connection, the child, asking the person (`acp.rs`).

use std::collections::{HashMap, HashSet};

use rein_wire::loops::fingerprint;
use serde_json::{Value, json};

use crate::progress::{
    MAX_REASON_CHARS, MAX_VALUE_CHARS, Progress, ProgressKind, clean, clean_value, relative_path,
};
use crate::reducer::{
    Core, MAX_OPEN_TOOLS, Outcome, Reducer, RefusalKind, Step, TurnResult, digest,
};

/// The answer's text is kept up to this many bytes (the rest is counted).
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// Tool kinds whose first location is shown.
const FILE_KINDS: &[&str] = &["read", "edit", "delete", "move"];

/// An ACP agent's prompts, one turn each.
pub struct AcpStream {
    cwd: String,
    core: Core,
    answer: String,
    answer_dropped: u64,
    finished: bool,
    open: HashMap<String, (String, String)>,
    /// Each announced call's `kind` and `locations` as its updates left
    /// them: a permission request names the call and may carry nothing
    /// else of it.
    announced: HashMap<String, serde_json::Map<String, Value>>,
    done: HashSet<String>,
    records: u64,
    unknown: u64,
    tool_calls: u64,
    tool_errors: u64,
    permissions: u64,
}

impl AcpStream {
    /// The folder the prompt runs in.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// The next prompt was sent in the same session: a new turn, whose
    /// answer is its own message chunks (the turn before closed).
    pub fn next_prompt(&mut self) {
        self.finished = false;
        self.answer.clear();
    }

    /// A reducer for a prompt run in `cwd`.
    pub fn new(cwd: &str) -> Self {
        AcpStream {
            cwd: cwd.to_owned(),
            core: Core::default(),
            answer: String::new(),
            answer_dropped: 0,
            finished: false,
            open: HashMap::new(),
            announced: HashMap::new(),
            done: HashSet::new(),
            records: 0,
            unknown: 0,
            tool_calls: 0,
            tool_errors: 0,
            permissions: 0,
        }
    }

    /// The call a permission request asks about, as the person is shown
    /// it: the request's `toolCall` is an update of a call announced
    /// before, so what it leaves out (its kind, its locations) is the
    /// announcement's.
    pub fn asked_about(&self, call: &Value) -> (String, String) {
        let mut known = self
            .announced
            .get(&Self::id_of(call))
            .cloned()
            .unwrap_or_default();
        for key in ["kind", "locations"] {
            if let Some(value) = call.get(key) {
                known.insert(key.to_owned(), value.clone());
            }
        }
        self.describe(&Value::Object(known))
    }

    /// A tool call's name (its kind) and its one allowed detail.
    pub fn describe(&self, call: &Value) -> (String, String) {
        let kind = clean_value(call.get("kind"), 40);
        let kind = if kind.is_empty() {
            "other".to_owned()
        } else {
            kind
        };
        let detail = if FILE_KINDS.contains(&kind.as_str()) {
            call.get("locations")
                .and_then(Value::as_array)
                .and_then(|l| l.first())
                .and_then(|l| l.get("path"))
                .and_then(Value::as_str)
                .map(|p| relative_path(p, &self.cwd))
                .unwrap_or_default()
        } else {
            String::new()
        };
        (kind, detail)
    }

    fn update(&mut self, update: &Value) {
        match update.get("sessionUpdate").and_then(Value::as_str) {
            Some("agent_message_chunk") => {
                if let Some(text) = update.pointer("/content/text").and_then(Value::as_str) {
                    let room = MAX_ANSWER_BYTES.saturating_sub(self.answer.len());
                    if text.len() <= room {
                        self.answer.push_str(text);
                    } else {
                        self.answer_dropped += text.len() as u64;
                    }
                }
                self.core.send(Progress::of(ProgressKind::AssistantText));
            }
            Some("agent_thought_chunk") => self
                .core
                .send(Progress::of(ProgressKind::Thinking { tokens: 0 })),
            Some("tool_call") => self.tool_call(update),
            Some("tool_call_update") => self.tool_update(update),
            Some(
                "plan"
                | "user_message_chunk"
                | "available_commands_update"
                | "current_mode_update"
                | "config_option_update"
                | "session_info_update"
                | "usage_update",
            ) => self.core.send(Progress::of(ProgressKind::Activity)),
            _ => {
                self.unknown += 1;
                self.core.send(Progress::of(ProgressKind::Activity));
            }
        }
    }

    fn id_of(update: &Value) -> String {
        clean_value(update.get("toolCallId"), MAX_VALUE_CHARS)
    }

    fn tool_call(&mut self, update: &Value) {
        let id = Self::id_of(update);
        if self.open.contains_key(&id) || self.done.contains(&id) {
            self.tool_update(update);
            return;
        }
        self.tool_calls += 1;
        let (tool, detail) = self.describe(update);
        if self.open.len() < MAX_OPEN_TOOLS {
            let input = update.get("rawInput").cloned().unwrap_or(Value::Null);
            self.open.insert(id.clone(), (tool.clone(), digest(&input)));
        }
        if self.announced.len() < MAX_OPEN_TOOLS {
            self.announced.insert(id.clone(), serde_json::Map::new());
        }
        self.core.steps.push(Step::ToolCalled {
            id: id.clone(),
            tool: tool.clone(),
            detail: detail.clone(),
        });
        self.core
            .send(Progress::tool(ProgressKind::ToolStarted, &tool, &detail));
        self.tool_update(update);
    }

    fn tool_update(&mut self, update: &Value) {
        let id = Self::id_of(update);
        if let Some(known) = self.announced.get_mut(&id) {
            for key in ["kind", "locations"] {
                if let Some(value) = update.get(key) {
                    known.insert(key.to_owned(), value.clone());
                }
            }
        }
        let status = update.get("status").and_then(Value::as_str);
        let ok = match status {
            Some("completed") => true,
            Some("failed") => false,
            _ => {
                if update.get("sessionUpdate").and_then(Value::as_str) == Some("tool_call_update") {
                    self.core.send(Progress::of(ProgressKind::Activity));
                }
                return;
            }
        };
        if self.done.contains(&id) {
            self.core.send(Progress::of(ProgressKind::Activity));
            return;
        }
        if self.done.len() < MAX_OPEN_TOOLS {
            self.done.insert(id.clone());
        }
        let call = self.open.remove(&id);
        let tool = call.as_ref().map(|c| c.0.clone()).unwrap_or_default();
        if ok {
            self.core
                .send(Progress::tool(ProgressKind::ToolFinished, &tool, ""));
        } else {
            self.tool_errors += 1;
            self.core
                .send(Progress::tool(ProgressKind::ToolFailed, &tool, ""));
        }
        self.core.steps.push(Step::ToolDone { id: id.clone(), ok });
        if let Some((name, input)) = call {
            let mut result = update.as_object().cloned().unwrap_or_default();
            result.remove("toolCallId");
            self.core.repeated(fingerprint(
                &name,
                &input,
                &rein_wire::loops::result_digest(&Value::Object(result)),
            ));
        }
    }

    /// The person refused the call `tool_call` asked permission for.
    pub fn refused(&mut self, tool_call: &Value) {
        let id = Self::id_of(tool_call);
        let (tool, detail) = self.asked_about(tool_call);
        self.core
            .refuse(RefusalKind::Permission, Some(&id), &tool, &detail);
    }

    fn response(&mut self, message: &Value) {
        if self.finished {
            self.core.send(Progress::of(ProgressKind::Activity));
            return;
        }
        self.finished = true;
        let mut turn = TurnResult::default();
        if let Some(error) = message.get("error") {
            let text = clean_value(error.get("message"), MAX_VALUE_CHARS * 2);
            let reason = format!("acp: the prompt failed: {text}");
            self.core.fail(&reason);
            turn.failure = Some(clean(&reason, MAX_REASON_CHARS));
        } else {
            match message
                .pointer("/result/stopReason")
                .and_then(Value::as_str)
            {
                Some("end_turn") => {
                    let answer = std::mem::take(&mut self.answer);
                    turn.text = Some(answer.clone());
                    if self.core.failure.is_none() {
                        self.core.text = Some(answer);
                    }
                }
                other => {
                    let reason = format!(
                        "acp: the turn ended without an answer (stop reason {})",
                        clean(other.unwrap_or("-"), 40)
                    );
                    self.core.fail(&reason);
                    turn.failure = Some(clean(&reason, MAX_REASON_CHARS));
                }
            }
        }
        self.core.close_turn(turn);
    }
}

impl Reducer for AcpStream {
    fn feed(&mut self, line: &[u8]) {
        self.records += 1;
        if self.core.failure.is_some() {
            return;
        }
        let Ok(message) = serde_json::from_slice::<Value>(line) else {
            self.core
                .fail("acp: protocol violation: a message is not JSON");
            return;
        };
        if !message.is_object() {
            self.core
                .fail("acp: protocol violation: a message is not a JSON object");
            return;
        }
        match message.get("method").and_then(Value::as_str) {
            Some("session/update") => match message.pointer("/params/update") {
                Some(update) => self.update(update),
                None => self
                    .core
                    .fail("acp: protocol violation: a session/update without an update"),
            },
            Some("session/request_permission") => {
                self.permissions += 1;
                self.core.send(Progress::of(ProgressKind::Activity));
            }
            Some(_) => {
                self.unknown += 1;
                self.core.send(Progress::of(ProgressKind::Activity));
            }
            None if message.get("result").is_some() || message.get("error").is_some() => {
                self.response(&message);
            }
            None => self
                .core
                .fail("acp: protocol violation: a message is neither a call nor a response"),
        }
    }

    fn oversize(&mut self, _limit: usize) {
        self.core.fail("acp: a message was past the size bound");
    }

    fn framing_error(&mut self, what: &str) {
        self.core.fail(&format!("acp: {what}"));
    }

    fn stream_ended(&mut self) {
        if self.finished || self.core.failure.is_some() {
            return;
        }
        self.core.exited_early = true;
        self.core
            .fail("acp: the agent went away before the turn ended");
    }

    fn drain(&mut self) -> Vec<Step> {
        self.core.drain()
    }

    fn outcome(&self) -> Outcome {
        self.core.outcome(None)
    }

    fn summary(&self) -> Value {
        json!({
            "records": self.records,
            "unknown_events": self.unknown,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "permission_requests": self.permissions,
            "refused": self.core.refusals.count(),
            "answer_bytes_dropped": self.answer_dropped,
            "failure": self.core.failure.clone().unwrap_or_default(),
        })
    }
}
