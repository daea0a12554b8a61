//! OpenAI Responses stream decoder.
//!
//! Handles `response.created` (model, id), output items (`function_call`,
//! `custom_tool_call`, `reasoning`, `message`), `response.output_text.delta`,
//! refusal deltas, reasoning summary and reasoning text deltas,
//! `response.function_call_arguments.delta` / `.done`,
//! `response.custom_tool_call_input.delta` (free-form input, delivered as
//! `{"input": "…"}`), and the terminal `response.completed`,
//! `response.incomplete` and `response.failed` with usage. An `error` event
//! ends the stream (the `response.failed` that follows it adds nothing).
//! Items rein does not know (`tool_search_call`, web search, …) are passed
//! over. A reasoning item's `encrypted_content` becomes the thinking
//! signature, so it can be sent back.

use std::borrow::Cow;
use std::collections::HashMap;

use rein_wire::{AgentError, StopReason, StreamEvent, Usage};
use serde::Deserialize;
use serde_json::Value;

use super::{StreamDecoder, kind_of, parse_json, provider_error_event, uint};
use crate::sse::SseFrame;

#[derive(Debug)]
struct Call {
    index: u32,
    custom: bool,
    fragments: bool,
    input: String,
    open: bool,
}

/// The delta events that make most of a stream (`response.output_text.delta`,
/// `response.function_call_arguments.delta`), read straight into borrowed
/// fields instead of a JSON tree. Any other shape falls back to the tree.
#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    output_index: u64,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
}

const TEXT_DELTA: &str = "response.output_text.delta";
const ARGS_DELTA: &str = "response.function_call_arguments.delta";

/// Whether `frame` is one of the hot delta events, by its SSE name or the
/// start of its data.
fn hot(frame: &SseFrame) -> bool {
    let named = |kind: &str| {
        frame.event.as_deref() == Some(kind)
            || frame
                .data
                .strip_prefix(r#"{"type":""#)
                .is_some_and(|rest| rest.starts_with(kind) && rest[kind.len()..].starts_with('"'))
    };
    named(TEXT_DELTA) || named(ARGS_DELTA)
}

/// Decoder for OpenAI Responses streams.
#[derive(Debug, Default)]
pub struct OpenAiResponsesDecoder {
    started: bool,
    /// Output index -> call.
    calls: HashMap<u64, Call>,
    next_tool: u32,
    summary_parts: HashMap<String, u64>,
    /// Each message item's text as streamed so far (output index, text),
    /// in the order their text began, to check against the completed
    /// item's (authoritative) text. A list searched from its end: a stream
    /// has a handful of items and the one being streamed is nearly always
    /// the last, where hashing the index on every delta cost more.
    streamed: Vec<(u64, String)>,
    finished: bool,
}

fn usage_of(usage: &Value) -> Usage {
    let input = uint(usage, "/input_tokens");
    let cache_read = uint(usage, "/input_tokens_details/cached_tokens");
    Usage {
        input: input.saturating_sub(cache_read),
        output: uint(usage, "/output_tokens"),
        cache_read,
        cache_write: 0,
        reasoning: uint(usage, "/output_tokens_details/reasoning_tokens"),
    }
}

impl OpenAiResponsesDecoder {
    fn start(&mut self, response: &Value, out: &mut Vec<StreamEvent>) {
        if self.started {
            return;
        }
        self.started = true;
        out.push(StreamEvent::MessageStart {
            id: response
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_owned),
            model: response
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        });
    }

    fn item_added(&mut self, v: &Value, out: &mut Vec<StreamEvent>) {
        let output_index = uint(v, "/output_index");
        let item = v.get("item").unwrap_or(&Value::Null);
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
        let custom = match kind {
            "function_call" => false,
            "custom_tool_call" => true,
            _ => return,
        };
        if self.calls.contains_key(&output_index) {
            return;
        }
        let index = self.next_tool;
        self.next_tool += 1;
        let id = item
            .get("call_id")
            .or_else(|| item.get("id"))
            .and_then(Value::as_str)
            .map_or_else(|| format!("call_{index}"), str::to_owned);
        let name = item
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        out.push(StreamEvent::ToolCallStart { index, id, name });
        self.calls.insert(
            output_index,
            Call {
                index,
                custom,
                fragments: false,
                input: String::new(),
                open: true,
            },
        );
    }

    /// Close a call, delivering its arguments if none were streamed.
    fn close_call(&mut self, output_index: u64, full: Option<&str>, out: &mut Vec<StreamEvent>) {
        let Some(call) = self.calls.get_mut(&output_index) else {
            return;
        };
        if !call.open {
            return;
        }
        call.open = false;
        if call.custom {
            let input = if call.fragments {
                call.input.clone()
            } else {
                full.unwrap_or_default().to_owned()
            };
            out.push(StreamEvent::ToolCallDelta {
                index: call.index,
                fragment: serde_json::json!({ "input": input }).to_string(),
            });
        } else if !call.fragments
            && let Some(full) = full.filter(|f| !f.is_empty())
        {
            out.push(StreamEvent::ToolCallDelta {
                index: call.index,
                fragment: full.to_owned(),
            });
        }
        out.push(StreamEvent::ToolCallEnd { index: call.index });
    }

    /// Text of the message item at `output_index`; separate items are
    /// joined with a blank line.
    /// A piece of a call's arguments (or a custom tool's free-form input).
    fn args_delta(&mut self, output_index: u64, fragment: String, out: &mut Vec<StreamEvent>) {
        let Some(call) = self.calls.get_mut(&output_index) else {
            return;
        };
        if fragment.is_empty() {
            return;
        }
        call.fragments = true;
        if call.custom {
            call.input.push_str(&fragment);
        } else {
            out.push(StreamEvent::ToolCallDelta {
                index: call.index,
                fragment,
            });
        }
    }

    fn text(&mut self, output_index: u64, text: String, out: &mut Vec<StreamEvent>) {
        if text.is_empty() {
            return;
        }
        let at = match self.streamed.iter().rposition(|(i, _)| *i == output_index) {
            Some(at) => at,
            None => {
                if !self.streamed.is_empty() {
                    out.push(StreamEvent::TextDelta {
                        text: "\n\n".into(),
                    });
                }
                self.streamed.push((output_index, String::new()));
                self.streamed.len() - 1
            }
        };
        self.streamed[at].1.push_str(&text);
        out.push(StreamEvent::TextDelta { text });
    }

    /// A message item is complete with `text`: where the deltas fell short
    /// of it the rest is sent; where they disagree, it replaces them.
    fn settle_text(&mut self, output_index: u64, text: String, out: &mut Vec<StreamEvent>) {
        let Some((_, streamed)) = self.streamed.iter_mut().rfind(|(i, _)| *i == output_index)
        else {
            return self.text(output_index, text, out);
        };
        // An empty final text says nothing (some servers leave it out).
        if *streamed == text || text.is_empty() {
            return;
        }
        if let Some(rest) = text.strip_prefix(streamed.as_str()) {
            out.push(StreamEvent::TextDelta {
                text: rest.to_owned(),
            });
        } else {
            out.push(StreamEvent::TextReplaced {
                streamed: streamed.clone(),
                text: text.clone(),
            });
        }
        *streamed = text;
    }

    fn item_done(&mut self, v: &Value, out: &mut Vec<StreamEvent>) {
        let output_index = uint(v, "/output_index");
        let item = v.get("item").unwrap_or(&Value::Null);
        match item.get("type").and_then(Value::as_str).unwrap_or_default() {
            "function_call" => {
                // A call seen only at its end (no `added`) still counts.
                self.item_added(v, out);
                let args = item.get("arguments").and_then(Value::as_str);
                self.close_call(output_index, args, out);
            }
            "custom_tool_call" => {
                self.item_added(v, out);
                let input = item.get("input").and_then(Value::as_str);
                self.close_call(output_index, input, out);
            }
            "message" => {
                // Some servers send a message whole, with no deltas; others'
                // deltas fall short of (or differ from) the final text.
                let text: String = item
                    .get("content")
                    .and_then(Value::as_array)
                    .map(|parts| {
                        parts
                            .iter()
                            .filter_map(|p| p.get("text").or_else(|| p.get("refusal")))
                            .filter_map(Value::as_str)
                            .collect()
                    })
                    .unwrap_or_default();
                self.settle_text(output_index, text, out);
            }
            "reasoning" => {
                if let Some(sig) = item.get("encrypted_content").and_then(Value::as_str) {
                    out.push(StreamEvent::ThinkingSignature {
                        signature: sig.to_owned(),
                        id: item.get("id").and_then(Value::as_str).map(str::to_owned),
                    });
                }
            }
            _ => {}
        }
    }

    fn terminal(&mut self, v: &Value, kind: &str, out: &mut Vec<StreamEvent>) {
        let response = v.get("response").unwrap_or(&Value::Null);
        self.start(response, out);
        let open: Vec<u64> = self
            .calls
            .iter()
            .filter(|(_, c)| c.open)
            .map(|(k, _)| *k)
            .collect();
        for output_index in open {
            self.close_call(output_index, None, out);
        }
        match kind {
            "response.failed" => {
                let error = response.get("error").unwrap_or(&Value::Null);
                let code = kind_of(error.get("code")).unwrap_or_else(|| "error".to_owned());
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                out.push(provider_error_event(&code, message));
            }
            "response.incomplete" => {
                let reason = response
                    .pointer("/incomplete_details/reason")
                    .and_then(Value::as_str)
                    .unwrap_or("max_output_tokens");
                out.push(StreamEvent::Stop {
                    reason: StopReason::from_provider(reason),
                });
            }
            _ => {
                let reason = if self.calls.is_empty() {
                    StopReason::EndTurn
                } else {
                    StopReason::ToolUse
                };
                out.push(StreamEvent::Stop { reason });
            }
        }
        if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
            out.push(StreamEvent::Usage {
                usage: usage_of(usage),
            });
        }
        self.finished = true;
    }
}

impl StreamDecoder for OpenAiResponsesDecoder {
    fn decode(&mut self, frame: &SseFrame, out: &mut Vec<StreamEvent>) -> Result<(), AgentError> {
        if self.finished {
            return Ok(());
        }
        if hot(frame)
            && let Ok(Delta {
                kind,
                output_index,
                delta,
            }) = serde_json::from_str(&frame.data)
        {
            let delta = delta.map(Cow::into_owned).unwrap_or_default();
            match kind.as_ref() {
                TEXT_DELTA => self.text(output_index, delta, out),
                ARGS_DELTA => self.args_delta(output_index, delta, out),
                _ => {}
            }
            return Ok(());
        }
        let v = parse_json(frame)?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .or(frame.event.as_deref())
            .unwrap_or_default()
            .to_owned();
        let delta = || {
            v.get("delta")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match kind.as_str() {
            "response.created" | "response.in_progress" => {
                self.start(v.get("response").unwrap_or(&Value::Null), out);
            }
            "response.output_item.added" => self.item_added(&v, out),
            "response.output_item.done" => self.item_done(&v, out),
            "response.output_text.delta" | "response.refusal.delta" => {
                let text = delta();
                self.text(uint(&v, "/output_index"), text, out);
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let text = delta();
                if !text.is_empty() {
                    out.push(StreamEvent::ThinkingDelta { text });
                }
            }
            "response.reasoning_summary_part.added" => {
                // Separate summary parts of one item with a blank line.
                let item = v
                    .get("item_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let seen = self.summary_parts.entry(item).or_insert(0);
                if *seen > 0 {
                    out.push(StreamEvent::ThinkingDelta {
                        text: "\n\n".into(),
                    });
                }
                *seen += 1;
            }
            "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
                self.args_delta(uint(&v, "/output_index"), delta(), out);
            }
            "response.function_call_arguments.done" => {
                let output_index = uint(&v, "/output_index");
                let args = v
                    .get("arguments")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                self.close_call(output_index, args.as_deref(), out);
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                self.terminal(&v, &kind, out);
            }
            "error" => {
                let code = kind_of(v.get("code"))
                    .or_else(|| kind_of(v.pointer("/error/code")))
                    .or_else(|| kind_of(v.pointer("/error/type")))
                    .unwrap_or_else(|| "error".to_owned());
                let message = v
                    .get("message")
                    .or_else(|| v.pointer("/error/message"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                out.push(provider_error_event(&code, message));
                self.finished = true;
            }
            _ => {}
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.finished
    }
}
