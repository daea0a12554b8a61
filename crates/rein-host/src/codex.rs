//! `codex exec --json`: lines in, steps out.
//!
//! The stream, as Codex writes it: `thread.started`, then per turn
//! `turn.started` … `turn.completed` (with `usage`) or `turn.failed` (with
//! `error.message`), and between them `item.started` / `item.updated` /
//! `item.completed` records whose `item` has an `id` and a `type`:
//! `agent_message` (`text`), `reasoning`, `command_execution` (`command`,
//! `aggregated_output`, `exit_code`, `status`), `file_change` (`changes`:
//! `path`, `kind`), `mcp_tool_call` (`server`, `tool`, `arguments`),
//! `web_search` (`query`), `todo_list`, `error`. A top-level `error`
//! record reports a stream problem (Codex retries and says so).
//!
//! The same rules as Claude's reducer where the stream allows: a line that
//! is not a JSON object with a string `type` is a protocol failure; a
//! `turn.completed` or `turn.failed` with no turn open is one too; stdout
//! ending inside a turn, or before any turn completed, is a failure; an
//! over-long line is counted and skipped; unknown records and item types
//! are counted and are activity; every record yields progress. Progress
//! never carries a command line, its output, reasoning, the assistant's
//! text, a search query or a tool's arguments: a command shows as
//! `command`, a file change as its first path (relative), an MCP call as
//! `mcp:SERVER/TOOL`. Codex reports tokens, not money: the cost stays
//! unknown. A `declined` item is a refused permission, once per item.
//!
//! Not here: the process, line framing, the session log.

use std::collections::{HashMap, HashSet};

use rein_wire::Usage;
use rein_wire::loops::fingerprint;
use serde_json::{Value, json};

use crate::progress::{
    MAX_REASON_CHARS, MAX_VALUE_CHARS, Progress, ProgressKind, clean, clean_value, relative_path,
};
use crate::reducer::{
    Core, MAX_OPEN_TOOLS, Outcome, Reducer, RefusalKind, Step, TurnResult, count, digest,
};

/// An item that is a tool call: its name, input digest and allowed detail.
struct OpenItem {
    name: String,
    input_digest: String,
}

/// One `codex exec --json` invocation.
pub struct CodexStream {
    cwd: String,
    core: Core,
    in_turn: bool,
    turns: u32,
    completed: u32,
    turn_text: Option<String>,
    last_error: Option<String>,
    open: HashMap<String, OpenItem>,
    done: HashSet<String>,
    usage: Usage,
    records: u64,
    oversize: u64,
    unknown: u64,
    tool_calls: u64,
    tool_errors: u64,
    retries: u64,
    /// Codex's id of the thread, as `thread.started` said it.
    thread_id: Option<String>,
}

impl CodexStream {
    /// Codex's id of the thread (its `thread.started`'s `thread_id`), when
    /// it said one that can be handed back as an argument (`codex resume
    /// ID`, [`crate::reducer::resumable`]).
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// A reducer for a run in `cwd` (paths shown relative to it).
    pub fn new(cwd: &str) -> Self {
        CodexStream {
            cwd: cwd.to_owned(),
            core: Core::default(),
            in_turn: false,
            turns: 0,
            completed: 0,
            turn_text: None,
            last_error: None,
            open: HashMap::new(),
            done: HashSet::new(),
            usage: Usage::default(),
            records: 0,
            oversize: 0,
            unknown: 0,
            tool_calls: 0,
            tool_errors: 0,
            retries: 0,
            thread_id: None,
        }
    }

    fn protocol(&mut self, what: &str) {
        self.core
            .fail(&format!("codex: --json protocol violation: {what}"));
    }

    /// A tool item's name, the input digested for loop detection, and its
    /// one allowed detail; `None` for items that are not tool calls.
    fn tool_of(&self, item: &Value) -> Option<(String, Value, String)> {
        let field = |k: &str| item.get(k).cloned().unwrap_or(Value::Null);
        match item.get("type").and_then(Value::as_str)? {
            "command_execution" => Some(("command".into(), field("command"), String::new())),
            "file_change" => {
                let changes = item.get("changes").and_then(Value::as_array);
                let first = changes
                    .and_then(|c| c.first())
                    .and_then(|c| c.get("path"))
                    .and_then(Value::as_str)
                    .map(|p| relative_path(p, &self.cwd))
                    .unwrap_or_default();
                let more = changes.map_or(0, |c| c.len().saturating_sub(1));
                let detail = if more > 0 {
                    format!("{first} (+{more} more)")
                } else {
                    first
                };
                Some(("file_change".into(), field("changes"), detail))
            }
            "mcp_tool_call" => {
                let server = clean_value(item.get("server"), 40);
                let tool = clean_value(item.get("tool"), 60);
                Some((
                    format!("mcp:{server}/{tool}"),
                    field("arguments"),
                    String::new(),
                ))
            }
            "web_search" => Some(("web_search".into(), field("query"), String::new())),
            _ => None,
        }
    }

    fn item(&mut self, phase: &str, record: &Value) {
        let Some(item) = record.get("item").filter(|i| i.is_object()) else {
            self.protocol("an item record has no 'item' object");
            return;
        };
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if let Some((name, input, detail)) = self.tool_of(item) {
            let known = self.open.contains_key(&id) || self.done.contains(&id);
            if !known {
                self.tool_calls += 1;
                if self.open.len() < MAX_OPEN_TOOLS {
                    self.open.insert(
                        id.clone(),
                        OpenItem {
                            name: name.clone(),
                            input_digest: digest(&input),
                        },
                    );
                }
                self.core.steps.push(Step::ToolCalled {
                    id: clean(&id, MAX_VALUE_CHARS),
                    tool: name.clone(),
                    detail: detail.clone(),
                });
                self.core
                    .send(Progress::tool(ProgressKind::ToolStarted, &name, &detail));
            }
            if phase == "item.completed" {
                self.tool_completed(&id, &name, &detail, item);
            } else if known {
                self.core.send(Progress::of(ProgressKind::Activity));
            }
            return;
        }
        match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => self
                .core
                .send(Progress::of(ProgressKind::Thinking { tokens: 0 })),
            Some("agent_message") => {
                if phase == "item.completed"
                    && let Some(text) = item.get("text").and_then(Value::as_str)
                {
                    self.turn_text = Some(text.to_owned());
                }
                self.core.send(Progress::of(ProgressKind::AssistantText));
            }
            Some("todo_list") => self.core.send(Progress::of(ProgressKind::Activity)),
            Some("error") => {
                self.last_error = Some(clean_value(item.get("message"), MAX_VALUE_CHARS * 2));
                self.core.send(Progress::of(ProgressKind::Activity));
            }
            _ => {
                self.unknown += 1;
                self.core.send(Progress::of(ProgressKind::Activity));
            }
        }
    }

    fn tool_completed(&mut self, id: &str, name: &str, detail: &str, item: &Value) {
        let status = item
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("completed");
        let exit = item.get("exit_code").and_then(Value::as_i64);
        let ok = status == "completed" && exit.is_none_or(|code| code == 0);
        if !self.done.contains(id) && self.done.len() < MAX_OPEN_TOOLS {
            self.done.insert(id.to_owned());
        }
        if status == "declined" {
            self.core
                .refuse(RefusalKind::Permission, Some(id), name, detail);
        }
        if ok {
            self.core
                .send(Progress::tool(ProgressKind::ToolFinished, name, ""));
        } else {
            self.tool_errors += 1;
            self.core
                .send(Progress::tool(ProgressKind::ToolFailed, name, ""));
        }
        self.core.steps.push(Step::ToolDone {
            id: clean(id, MAX_VALUE_CHARS),
            ok,
        });
        if let Some(call) = self.open.remove(id) {
            // The id differs on every call; everything else is the result.
            let mut result = item.as_object().cloned().unwrap_or_default();
            result.remove("id");
            let fp = fingerprint(
                &call.name,
                &call.input_digest,
                &rein_wire::loops::result_digest(&Value::Object(result)),
            );
            self.core.repeated(fp);
        }
    }

    fn close_turn(&mut self, record: &Value, ok: bool) {
        self.in_turn = false;
        let index = self.completed;
        self.completed += 1;
        let usage = record.get("usage").filter(|u| u.is_object()).map(|u| {
            let input = count(u.get("input_tokens")).unwrap_or(0);
            let cached = count(u.get("cached_input_tokens")).unwrap_or(0);
            Usage {
                input: input.saturating_sub(cached),
                cache_read: cached.min(input),
                output: count(u.get("output_tokens")).unwrap_or(0),
                cache_write: 0,
                reasoning: count(u.get("reasoning_output_tokens")).unwrap_or(0),
            }
        });
        if let Some(u) = &usage {
            self.usage.accumulate(u);
        }
        let mut turn = TurnResult {
            index,
            usage,
            ..TurnResult::default()
        };
        if ok {
            let text = self.turn_text.take().unwrap_or_default();
            turn.text = Some(text.clone());
            if self.core.failure.is_none() {
                self.core.text = Some(text);
            }
        } else {
            let message = record
                .get("error")
                .map(|e| clean_value(e.get("message"), MAX_VALUE_CHARS * 2))
                .unwrap_or_default();
            let reason = if message.is_empty() {
                "codex: the turn failed".to_owned()
            } else {
                format!("codex: the turn failed: {message}")
            };
            self.core.fail(&reason);
            turn.failure = Some(clean(&reason, MAX_REASON_CHARS));
        }
        self.core.close_turn(turn);
    }

    /// `Reconnecting... 2/5` → "attempt 2 of 5".
    fn attempt_of(message: &str) -> String {
        message
            .split_whitespace()
            .find_map(|word| {
                let (a, m) = word.trim_end_matches([',', ')', '.']).split_once('/')?;
                Some(format!(
                    "attempt {} of {}",
                    a.parse::<u32>().ok()?,
                    m.parse::<u32>().ok()?
                ))
            })
            .unwrap_or_default()
    }
}

impl Reducer for CodexStream {
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
        match kind {
            "thread.started" => {
                if let Some(id) = record.get("thread_id").and_then(Value::as_str)
                    && crate::reducer::resumable(id)
                {
                    self.thread_id = Some(id.to_owned());
                }
                self.core.send(Progress::of(ProgressKind::Activity));
            }
            "turn.started" => {
                if self.in_turn {
                    self.protocol("a turn started inside another");
                    return;
                }
                self.in_turn = true;
                self.turns += 1;
                self.turn_text = None;
                self.core.send(Progress::of(ProgressKind::Started));
            }
            "turn.completed" | "turn.failed" if !self.in_turn => {
                self.protocol("a turn ended with no turn open");
            }
            "turn.completed" => self.close_turn(&record, true),
            "turn.failed" => self.close_turn(&record, false),
            "item.started" | "item.updated" | "item.completed" => self.item(kind, &record),
            "error" => {
                self.retries += 1;
                let message = clean_value(record.get("message"), MAX_VALUE_CHARS * 2);
                let detail = Self::attempt_of(&message);
                // "Reconnecting… 2/5": the same words but their count.
                self.core
                    .retried(message.split("...").next().unwrap_or_default());
                self.last_error = Some(message);
                self.core
                    .send(Progress::detail(ProgressKind::ProviderRetry, &detail));
            }
            _ => {
                self.unknown += 1;
                self.core.send(Progress::of(ProgressKind::Activity));
            }
        }
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
        if self.core.failure.is_some() || (!self.in_turn && self.completed > 0) {
            return;
        }
        self.core.exited_early = true;
        let mut reason = if self.in_turn {
            "codex: exited inside a turn that did not complete".to_owned()
        } else {
            "codex: exited without a completed turn".to_owned()
        };
        if let Some(error) = self.last_error.clone().filter(|e| !e.is_empty()) {
            reason.push_str(&format!(" (last error: {error})"));
        }
        self.core.fail(&reason);
    }

    fn drain(&mut self) -> Vec<Step> {
        self.core.drain()
    }

    fn outcome(&self) -> Outcome {
        self.core.outcome(None)
    }

    fn summary(&self) -> Value {
        json!({
            "turns": self.turns,
            "completed_turns": self.completed,
            "records": self.records,
            "oversize_records": self.oversize,
            "unknown_events": self.unknown,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "stream_errors": self.retries,
            "refused": self.core.refusals.count(),
            "input_tokens": self.usage.prompt_total(),
            "output_tokens": self.usage.output,
            "failure": self.core.failure.clone().unwrap_or_default(),
        })
    }
}
