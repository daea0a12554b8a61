//! Anthropic Messages stream decoder.
//!
//! Handles `message_start` (model, id, prompt usage with cache read and
//! write), `content_block_start/delta/stop` for text, thinking (with its
//! signature), redacted thinking and `tool_use` (`input_json_delta`
//! fragments), `message_delta` (stop reason, output usage, and input usage
//! where a server reports it late), `ping`, `error` and `message_stop`.
//!
//! Server-side tool blocks (`server_tool_use`, `mcp_tool_use`, their
//! results), `compaction`, citations and any block type rein does not know
//! are passed over: the provider ran them, the harness must not.
//!
//! A repeated `message_start` for the same message before any content is
//! ignored; a `message_start` for another message mid-stream (two answers
//! spliced together) is `stream_malformed`.

use std::borrow::Cow;
use std::collections::HashMap;

use rein_wire::{AgentError, StopReason, StreamEvent, Usage, error::codes};
use serde::Deserialize;
use serde_json::Value;

use super::{StreamDecoder, parse_json, provider_error_event, uint};
use crate::sse::SseFrame;

#[derive(Debug)]
enum Block {
    Text,
    Thinking,
    Tool {
        index: u32,
        fragments: bool,
        initial: Option<String>,
        open: bool,
    },
    Ignored,
}

/// `content_block_delta`, nearly every event of a stream, read straight
/// into borrowed fields instead of a JSON tree (the decode benchmark's
/// hot path). Any other shape falls back to the tree.
#[derive(Deserialize)]
struct BlockDelta<'a> {
    index: u64,
    #[serde(borrow)]
    delta: DeltaBody<'a>,
}

#[derive(Deserialize)]
struct DeltaBody<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
}

impl<'a> DeltaBody<'a> {
    /// The same fields from a JSON tree (absent ones empty).
    fn of(delta: &'a Value) -> Self {
        let field = |name: &str| delta.get(name).and_then(Value::as_str).map(Cow::Borrowed);
        DeltaBody {
            kind: field("type").unwrap_or_default(),
            text: field("text"),
            thinking: field("thinking"),
            signature: field("signature"),
            partial_json: field("partial_json"),
        }
    }
}

/// Decoder for Anthropic Messages streams.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    message_id: Option<String>,
    started: bool,
    emitted_output: bool,
    blocks: HashMap<u64, Block>,
    next_tool: u32,
    usage: Usage,
    finished: bool,
}

impl AnthropicDecoder {
    fn close_open_tools(&mut self, out: &mut Vec<StreamEvent>) {
        let mut open: Vec<u32> = Vec::new();
        for block in self.blocks.values_mut() {
            if let Block::Tool { index, open: o, .. } = block
                && *o
            {
                *o = false;
                open.push(*index);
            }
        }
        open.sort_unstable();
        out.extend(
            open.into_iter()
                .map(|index| StreamEvent::ToolCallEnd { index }),
        );
    }

    fn merge_usage(&mut self, usage: &Value) {
        if let Some(n) = usage.get("input_tokens").and_then(Value::as_u64) {
            self.usage.input = n;
        }
        if let Some(n) = usage.get("output_tokens").and_then(Value::as_u64) {
            self.usage.output = n;
        }
        if let Some(n) = usage.get("cache_read_input_tokens").and_then(Value::as_u64) {
            self.usage.cache_read = n;
        }
        if let Some(n) = usage
            .get("cache_creation_input_tokens")
            .and_then(Value::as_u64)
        {
            self.usage.cache_write = n;
        }
        if let Some(n) = usage
            .pointer("/output_tokens_details/thinking_tokens")
            .and_then(Value::as_u64)
        {
            self.usage.reasoning = n;
        }
    }

    fn on_message_start(
        &mut self,
        v: &Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), AgentError> {
        let message = v.get("message").unwrap_or(&Value::Null);
        let id = message.get("id").and_then(Value::as_str).map(str::to_owned);
        if self.started {
            if id == self.message_id && !self.emitted_output {
                return Ok(());
            }
            return Err(AgentError::new(
                codes::STREAM_MALFORMED,
                "a second message began before the first one ended",
            )
            .with_field("first", self.message_id.clone().unwrap_or_default())
            .with_field("second", id.unwrap_or_default()));
        }
        self.started = true;
        self.message_id.clone_from(&id);
        let model = message
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        out.push(StreamEvent::MessageStart { id, model });
        if let Some(usage) = message.get("usage") {
            self.merge_usage(usage);
            out.push(StreamEvent::Usage { usage: self.usage });
        }
        Ok(())
    }

    fn on_block_start(&mut self, v: &Value, out: &mut Vec<StreamEvent>) {
        let index = uint(v, "/index");
        let block = v.get("content_block").unwrap_or(&Value::Null);
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let state = match kind {
            "text" => {
                if let Some(text) = block.get("text").and_then(Value::as_str)
                    && !text.is_empty()
                {
                    out.push(StreamEvent::TextDelta {
                        text: text.to_owned(),
                    });
                }
                Block::Text
            }
            "thinking" => {
                if let Some(text) = block.get("thinking").and_then(Value::as_str)
                    && !text.is_empty()
                {
                    out.push(StreamEvent::ThinkingDelta {
                        text: text.to_owned(),
                    });
                }
                Block::Thinking
            }
            "redacted_thinking" => {
                let data = block
                    .get("data")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                out.push(StreamEvent::RedactedThinking {
                    data: data.to_owned(),
                });
                Block::Ignored
            }
            "tool_use" => {
                let our = self.next_tool;
                self.next_tool += 1;
                out.push(StreamEvent::ToolCallStart {
                    index: our,
                    id: block
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    name: block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                });
                // Some proxies send the whole input in the start block.
                let initial = block
                    .get("input")
                    .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                    .map(Value::to_string);
                Block::Tool {
                    index: our,
                    fragments: false,
                    initial,
                    open: true,
                }
            }
            _ => Block::Ignored,
        };
        self.blocks.insert(index, state);
    }

    fn on_block_delta(&mut self, index: u64, delta: DeltaBody<'_>, out: &mut Vec<StreamEvent>) {
        let text = |field: Option<Cow<'_, str>>| field.map(Cow::into_owned).unwrap_or_default();
        match (self.blocks.get_mut(&index), delta.kind.as_ref()) {
            (Some(Block::Text), "text_delta") => {
                let t = text(delta.text);
                if !t.is_empty() {
                    out.push(StreamEvent::TextDelta { text: t });
                }
            }
            (Some(Block::Thinking), "thinking_delta") => {
                let t = text(delta.thinking);
                if !t.is_empty() {
                    out.push(StreamEvent::ThinkingDelta { text: t });
                }
            }
            (Some(Block::Thinking), "signature_delta") => {
                out.push(StreamEvent::ThinkingSignature {
                    signature: text(delta.signature),
                    id: None,
                });
            }
            (
                Some(Block::Tool {
                    index, fragments, ..
                }),
                "input_json_delta",
            ) => {
                let fragment = text(delta.partial_json);
                if !fragment.is_empty() {
                    *fragments = true;
                    out.push(StreamEvent::ToolCallDelta {
                        index: *index,
                        fragment,
                    });
                }
            }
            _ => {}
        }
    }

    fn on_block_stop(&mut self, v: &Value, out: &mut Vec<StreamEvent>) {
        let index = uint(v, "/index");
        if let Some(Block::Tool {
            index,
            fragments,
            initial,
            open,
        }) = self.blocks.get_mut(&index)
            && *open
        {
            if !*fragments && let Some(initial) = initial.take() {
                out.push(StreamEvent::ToolCallDelta {
                    index: *index,
                    fragment: initial,
                });
            }
            *open = false;
            out.push(StreamEvent::ToolCallEnd { index: *index });
        }
    }
}

impl StreamDecoder for AnthropicDecoder {
    fn decode(&mut self, frame: &SseFrame, out: &mut Vec<StreamEvent>) -> Result<(), AgentError> {
        if self.finished {
            return Ok(());
        }
        let before = out.len();
        let hot = frame.event.as_deref() == Some("content_block_delta")
            || frame.data.starts_with(r#"{"type":"content_block_delta""#);
        if hot && let Ok(BlockDelta { index, delta }) = serde_json::from_str(&frame.data) {
            self.on_block_delta(index, delta, out);
            self.emitted_output |= out[before..].iter().any(StreamEvent::is_output);
            return Ok(());
        }
        let v = parse_json(frame)?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .or(frame.event.as_deref())
            .unwrap_or_default();
        match kind {
            "message_start" => self.on_message_start(&v, out)?,
            "content_block_start" => self.on_block_start(&v, out),
            // A shape the fast path could not read (a missing index, …).
            "content_block_delta" => {
                let delta = v.get("delta").unwrap_or(&Value::Null);
                self.on_block_delta(uint(&v, "/index"), DeltaBody::of(delta), out);
            }
            "content_block_stop" => self.on_block_stop(&v, out),
            "message_delta" => {
                if let Some(reason) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.close_open_tools(out);
                    out.push(StreamEvent::Stop {
                        reason: StopReason::from_provider(reason),
                    });
                }
                if let Some(usage) = v.get("usage") {
                    self.merge_usage(usage);
                    out.push(StreamEvent::Usage { usage: self.usage });
                }
            }
            "message_stop" => {
                self.close_open_tools(out);
                self.finished = true;
            }
            "error" => {
                let kind = v
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("error");
                let message = v
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                out.push(provider_error_event(kind, message));
                self.finished = true;
            }
            _ => {} // ping and anything new
        }
        self.emitted_output |= out[before..].iter().any(StreamEvent::is_output);
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.finished
    }
}
