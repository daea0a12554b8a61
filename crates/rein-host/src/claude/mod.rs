//! `claude -p --output-format stream-json --verbose`: lines in, steps out.
//!
//! The rules, each from the stream as Claude Code writes it:
//! - One JSON object per line with a string `type`; anything else (not
//!   JSON, not an object, no `type`, past the decoder's nesting limit) is a
//!   protocol failure.
//! - One invocation can run several turns. The first opens with the
//!   stream; a later one opens with its own `system/init`, or — with every
//!   turn so far closed — with an `assistant` or `user` record of the main
//!   conversation (whose `system/init` is then that turn's own). The n-th
//!   `result` closes the n-th turn: results held back while a background
//!   agent runs arrive later, together, in turn order.
//! - A sub-agent's records carry `parent_tool_use_id`; they are activity
//!   and tool calls, never a turn (no sub-agent `init` or `result` exists).
//! - Every `result` is checked in order: `is_error` (`subtype: success`
//!   can come with `is_error: true`), then `subtype` must be `success`, then
//!   `result` must be a string. A `result` with every turn closed is a
//!   protocol failure; stdout ending inside a turn is a failure.
//! - A line past the per-line bound is counted and skipped — except that
//!   the `result` line has no such allowance: if it was skipped, the stream
//!   ends without it and fails, saying so.
//! - Records with every turn closed that open none (notices between turns,
//!   `SessionEnd` hooks) are counted and otherwise ignored; unknown record
//!   types are counted and are activity.
//! - Cost: `total_cost_usd` is the session's so far, so the last result's
//!   is the invocation's, and each turn's is the difference; integer
//!   micro-USD; absent or unreadable stays unknown, never zero. `num_turns`
//!   and `duration_ms` are per turn and summed; one result lacking a count
//!   makes its sum unknown for good.
//! - Permission denials (`system/permission_denied`, a result's
//!   `permission_denials`) and an `AskUserQuestion` that failed are kept
//!   once per call: kind, tool, one allowed detail.
//! - Loop detection: each completed call is fingerprinted from its name,
//!   the digest of its whole input and of its whole `tool_result` block
//!   without `tool_use_id`.
//!
//! Not here: the process, line framing, the session log.

pub mod permission;
mod result;

use std::collections::HashMap;

use rein_wire::loops::fingerprint;
use serde_json::{Map, Value, json};

use crate::progress::{MAX_VALUE_CHARS, Progress, ProgressKind, clean, clean_value, relative_path};
use crate::reducer::{Core, MAX_OPEN_TOOLS, Outcome, Reducer, RefusalKind, Step, count, digest};

/// The one input shown per tool; a tool not listed shows its name only.
/// Bash shows its `description`, never its `command`: a command line is
/// where credentials are typed.
pub const TOOL_DETAILS: &[(&str, &str)] = &[
    ("Read", "file_path"),
    ("Edit", "file_path"),
    ("MultiEdit", "file_path"),
    ("Write", "file_path"),
    ("NotebookEdit", "notebook_path"),
    ("Grep", "pattern"),
    ("Glob", "pattern"),
    ("Bash", "description"),
    ("Task", "description"),
    ("Agent", "description"),
];

const PATH_INPUTS: &[&str] = &["file_path", "notebook_path"];

/// The tool through which the model asks the user a question.
pub const QUESTION_TOOL: &str = "AskUserQuestion";

/// Record types that are activity only; any other unknown type is counted.
const ACTIVITY_TYPES: &[&str] = &["rate_limit_event"];

/// An open tool call: its name, its input's digest, its allowed detail.
struct OpenTool {
    name: String,
    input_digest: String,
    detail: String,
}

/// One `claude -p --output-format stream-json --verbose` invocation.
pub struct ClaudeStream {
    cwd: String,
    core: Core,
    turns: u32,
    turn_has_init: bool,
    results: u32,
    /// The model each open turn's `init` named (turn index, model); at most
    /// [`MAX_OPEN_TOOLS`] open turns are remembered.
    models: std::collections::VecDeque<(u32, String)>,
    num_turns: Option<u64>,
    duration_ms: Option<u64>,
    last_total_cost: Option<u64>,
    last_known_cost: u64,
    open: HashMap<String, OpenTool>,
    records: u64,
    oversize: u64,
    unknown: u64,
    after_result: u64,
    tool_calls: u64,
    tool_errors: u64,
    retries: u64,
    last: Map<String, Value>,
    /// Claude Code's own id of the conversation, as its `init` said it.
    session_id: Option<String>,
}

impl ClaudeStream {
    /// A reducer for a conversation resumed with no request yet (`claude
    /// --resume ID` waiting on its input): no turn is open until the
    /// program opens one.
    pub fn resumed(cwd: &str) -> Self {
        let mut stream = Self::new(cwd);
        stream.turns = 0;
        stream
    }

    /// Claude Code's own id of the conversation (its `init`'s
    /// `session_id`), when it said one that can be handed back as an
    /// argument (`--resume ID`, [`crate::reducer::resumable`]).
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// A reducer for a run in `cwd` (paths shown relative to it).
    pub fn new(cwd: &str) -> Self {
        ClaudeStream {
            session_id: None,
            cwd: cwd.to_owned(),
            core: Core::default(),
            turns: 1,
            turn_has_init: false,
            results: 0,
            models: std::collections::VecDeque::new(),
            num_turns: Some(0),
            duration_ms: Some(0),
            last_total_cost: None,
            last_known_cost: 0,
            open: HashMap::new(),
            records: 0,
            oversize: 0,
            unknown: 0,
            after_result: 0,
            tool_calls: 0,
            tool_errors: 0,
            retries: 0,
            last: Map::new(),
        }
    }

    /// The model turn `index` named; turns up to it are forgotten.
    fn model_of(&mut self, index: u32) -> String {
        while let Some((turn, _)) = self.models.front()
            && *turn < index
        {
            self.models.pop_front();
        }
        match self.models.front() {
            Some((turn, _)) if *turn == index => {
                self.models.pop_front().map(|m| m.1).unwrap_or_default()
            }
            _ => String::new(),
        }
    }

    fn protocol(&mut self, what: &str) {
        self.core
            .fail(&format!("claude: stream-json protocol violation: {what}"));
    }

    fn observe(&mut self, kind: &str, record: &Value) {
        match kind {
            "system" => self.system(record),
            "assistant" => self.assistant(record),
            "user" => self.user(record),
            _ => {
                if !ACTIVITY_TYPES.contains(&kind) {
                    self.unknown += 1;
                }
                self.core.send(Progress::of(ProgressKind::Activity));
            }
        }
    }

    fn system(&mut self, record: &Value) {
        match record.get("subtype").and_then(Value::as_str) {
            Some("init") => {
                if let Some(id) = record.get("session_id").and_then(Value::as_str)
                    && crate::reducer::resumable(id)
                {
                    self.session_id = Some(id.to_owned());
                }
                let model = clean_value(record.get("model"), MAX_VALUE_CHARS);
                let at = self.turns.saturating_sub(1);
                let room = self.models.len() < MAX_OPEN_TOOLS;
                match self.models.back_mut() {
                    Some((turn, named)) if *turn == at => named.clone_from(&model),
                    _ if room => self.models.push_back((at, model.clone())),
                    _ => {}
                }
                self.core
                    .send(Progress::detail(ProgressKind::Started, &model));
            }
            Some("thinking_tokens") => {
                let tokens = count(record.get("estimated_tokens")).unwrap_or(0);
                self.core
                    .send(Progress::of(ProgressKind::Thinking { tokens }));
            }
            Some("api_retry") => {
                self.retries += 1;
                let attempt = count(record.get("attempt"));
                let limit = count(record.get("max_retries"));
                let detail = match (attempt, limit) {
                    (Some(a), Some(m)) => format!("attempt {a} of {m}"),
                    (Some(a), None) => format!("attempt {a}"),
                    _ => String::new(),
                };
                self.core
                    .send(Progress::detail(ProgressKind::ProviderRetry, &detail));
                let error = clean_value(record.get("error"), MAX_VALUE_CHARS);
                let status = count(record.get("error_status")).unwrap_or(0);
                self.core.retried(&format!("{status} {error}"));
            }
            Some("permission_denied") => {
                let id = record.get("tool_use_id").and_then(Value::as_str);
                let call = id.and_then(|id| self.open.get(id));
                let name = match record.get("tool_name").and_then(Value::as_str) {
                    Some(name) => name.to_owned(),
                    None => call.map(|c| c.name.clone()).unwrap_or_default(),
                };
                let detail = call.map(|c| c.detail.clone()).unwrap_or_default();
                self.core
                    .refuse(RefusalKind::Permission, id, &name, &detail);
            }
            // Hooks, status and compaction notices: liveness only. A hook's
            // output is the operator's and is never shown.
            _ => self.core.send(Progress::of(ProgressKind::Activity)),
        }
    }

    fn blocks(record: &Value) -> impl Iterator<Item = &Value> {
        record
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| b.is_object())
    }

    fn assistant(&mut self, record: &Value) {
        let mut sent = false;
        for block in Self::blocks(record) {
            match block.get("type").and_then(Value::as_str) {
                Some("thinking" | "redacted_thinking") => {
                    self.core
                        .send(Progress::of(ProgressKind::Thinking { tokens: 0 }));
                }
                Some("text") => self.core.send(Progress::of(ProgressKind::AssistantText)),
                Some("tool_use") => self.tool_use(block),
                _ => continue,
            }
            sent = true;
        }
        if !sent {
            self.core.send(Progress::of(ProgressKind::Activity));
        }
    }

    fn tool_use(&mut self, block: &Value) {
        self.tool_calls += 1;
        let name = block
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let input = block.get("input");
        let detail = self.detail(&name, input);
        let id = block
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if !id.is_empty() && self.open.len() < MAX_OPEN_TOOLS {
            let input_digest = digest(input.unwrap_or(&Value::Null));
            self.open.insert(
                id.clone(),
                OpenTool {
                    name: name.clone(),
                    input_digest,
                    detail: detail.clone(),
                },
            );
        }
        self.core.steps.push(Step::ToolCalled {
            id: clean(&id, MAX_VALUE_CHARS),
            tool: clean(&name, MAX_VALUE_CHARS),
            detail: detail.clone(),
        });
        self.core
            .send(Progress::tool(ProgressKind::ToolStarted, &name, &detail));
    }

    /// The one input of `name`'s call shown for it ([`call_detail`]).
    fn detail(&self, name: &str, input: Option<&Value>) -> String {
        call_detail(name, input, &self.cwd)
    }

    fn user(&mut self, record: &Value) {
        let mut sent = false;
        for block in Self::blocks(record) {
            if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            sent = true;
            let id = block.get("tool_use_id").and_then(Value::as_str);
            let call = id.and_then(|id| self.open.remove(id));
            let name = call.as_ref().map(|c| c.name.clone()).unwrap_or_default();
            let ok = block.get("is_error").and_then(Value::as_bool) != Some(true);
            if ok {
                self.core
                    .send(Progress::tool(ProgressKind::ToolFinished, &name, ""));
            } else {
                self.tool_errors += 1;
                if name == QUESTION_TOOL {
                    // Not offered under -p: the question reached no one. Its
                    // words are the model's; only the kind is kept.
                    self.core.refuse(RefusalKind::Question, id, "", "");
                }
                self.core
                    .send(Progress::tool(ProgressKind::ToolFailed, &name, ""));
            }
            if let Some(id) = id {
                self.core.steps.push(Step::ToolDone {
                    id: clean(id, MAX_VALUE_CHARS),
                    ok,
                });
            }
            if let Some(call) = call {
                // The id differs on every call; everything else is the result.
                let mut result = block.as_object().cloned().unwrap_or_default();
                result.remove("tool_use_id");
                let fp = fingerprint(
                    &call.name,
                    &call.input_digest,
                    &rein_wire::loops::result_digest(&Value::Object(result)),
                );
                self.core.repeated(fp);
            }
        }
        if !sent {
            self.core.send(Progress::of(ProgressKind::Activity));
        }
    }
}

impl Reducer for ClaudeStream {
    fn feed(&mut self, line: &[u8]) {
        self.records += 1;
        if self.core.failure.is_some() {
            return;
        }
        let Ok(record) = serde_json::from_slice::<Value>(line) else {
            self.protocol("a stdout line is not JSON (or exceeds the decoder's nesting limit)");
            return;
        };
        let Some(kind) = record.get("type").and_then(Value::as_str) else {
            self.protocol("a stdout line is not a JSON object with a 'type'");
            return;
        };
        if kind == "result" {
            if self.results < self.turns {
                self.take_result(&record);
            } else {
                self.protocol("a result event outside a turn");
            }
            return;
        }
        let is_init =
            kind == "system" && record.get("subtype").and_then(Value::as_str) == Some("init");
        let sub_agent = record
            .get("parent_tool_use_id")
            .is_some_and(|p| !p.is_null());
        if self.results == self.turns {
            if sub_agent || !(is_init || kind == "assistant" || kind == "user") {
                self.after_result += 1;
                self.core.send(Progress::of(ProgressKind::Activity));
                return;
            }
            self.turns += 1;
            self.turn_has_init = is_init;
        } else if is_init {
            if self.turn_has_init {
                self.turns += 1;
            }
            self.turn_has_init = true;
        }
        self.observe(kind, &record);
    }

    fn oversize(&mut self, _limit: usize) {
        self.records += 1;
        self.oversize += 1;
        self.core.send(Progress::of(ProgressKind::Activity));
    }

    fn framing_error(&mut self, what: &str) {
        self.protocol(what);
    }

    fn stream_ended(&mut self) {
        if self.results == self.turns || self.core.failure.is_some() {
            return;
        }
        self.core.exited_early = true;
        if self.results > 0 {
            self.core
                .fail("claude: exited inside a turn that has no result event");
            return;
        }
        let mut reason = "claude: exited without a result event".to_owned();
        if self.oversize > 0 {
            reason.push_str(&format!(
                " ({} line(s) past the per-line bound were skipped; the result must arrive whole in one line)",
                self.oversize
            ));
        }
        self.core.fail(&reason);
    }

    fn drain(&mut self) -> Vec<Step> {
        self.core.drain()
    }

    fn outcome(&self) -> Outcome {
        self.core.outcome(self.last_total_cost)
    }

    fn summary(&self) -> Value {
        let mut out = self.last.clone();
        if let Some(n) = self.num_turns.filter(|_| self.results > 0) {
            out.insert("num_turns".into(), json!(n));
        }
        if let Some(ms) = self.duration_ms.filter(|_| self.results > 0) {
            out.insert("duration_ms".into(), json!(ms));
        }
        if let Some(cost) = self.last_total_cost {
            out.insert("cost_micro_usd".into(), json!(cost));
        }
        for (key, value) in [
            ("results", u64::from(self.results)),
            ("records", self.records),
            ("oversize_records", self.oversize),
            ("unknown_events", self.unknown),
            ("records_after_result", self.after_result),
            ("tool_calls", self.tool_calls),
            ("tool_errors", self.tool_errors),
            ("api_retries", self.retries),
            ("refused", self.core.refusals.count()),
        ] {
            out.insert(key.into(), json!(value));
        }
        out.insert(
            "failure".into(),
            json!(self.core.failure.clone().unwrap_or_default()),
        );
        Value::Object(out)
    }
}

/// The one input of a call of `name` shown for it ([`TOOL_DETAILS`]), a
/// path relative to `cwd`; "" for a tool with none.
pub(crate) fn call_detail(name: &str, input: Option<&Value>, cwd: &str) -> String {
    let Some((_, field)) = TOOL_DETAILS.iter().find(|(tool, _)| *tool == name) else {
        return String::new();
    };
    let Some(value) = input.and_then(|i| i.get(*field)).and_then(Value::as_str) else {
        return String::new();
    };
    if PATH_INPUTS.contains(field) {
        relative_path(value, cwd)
    } else {
        clean(value, MAX_VALUE_CHARS)
    }
}
