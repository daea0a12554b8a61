//! OpenAI Chat Completions stream decoder (and every compatible server).
//!
//! Handles text and refusal deltas, reasoning deltas under the names
//! compatible servers use (`reasoning_content`, `reasoning`), `tool_calls`
//! deltas spread over chunks with several calls in parallel, usage in a
//! final chunk (`stream_options.include_usage`) or on every chunk (vLLM),
//! cached tokens (`prompt_tokens_details.cached_tokens`, DeepSeek's
//! `prompt_cache_hit_tokens`), errors sent as `data: {"error": …}` inside a
//! 200 stream, and the `[DONE]` terminator.
//!
//! Quirks handled: tool-call indexes that do not start at 0, a whole call
//! in one delta, a call without `id` (one is made up from its position),
//! empty trailing argument fragments, Azure's chunks with no choices, an
//! integer `stop_reason` beside `finish_reason`. Only choice 0 is decoded
//! (rein never asks for `n > 1`).

use std::collections::HashMap;

use rein_wire::{AgentError, StopReason, StreamEvent, Usage};
use serde_json::Value;

use super::{StreamDecoder, kind_of, parse_json, provider_error_event, uint};
use crate::sse::SseFrame;

/// Decoder for OpenAI Chat Completions streams.
#[derive(Debug, Default)]
pub struct OpenAiChatDecoder {
    started: bool,
    /// Provider tool index -> (our index, still open).
    calls: HashMap<u64, (u32, bool)>,
    next_tool: u32,
    stopped: bool,
    finished: bool,
}

impl OpenAiChatDecoder {
    fn close_calls(&mut self, out: &mut Vec<StreamEvent>) {
        let mut open: Vec<u32> = Vec::new();
        for (index, is_open) in self.calls.values_mut() {
            if *is_open {
                *is_open = false;
                open.push(*index);
            }
        }
        open.sort_unstable();
        out.extend(
            open.into_iter()
                .map(|index| StreamEvent::ToolCallEnd { index }),
        );
    }

    fn on_tool_calls(&mut self, calls: &[Value], out: &mut Vec<StreamEvent>) {
        for (position, call) in calls.iter().enumerate() {
            let provider_index = call
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(position as u64);
            let function = call.get("function").unwrap_or(&Value::Null);
            let our = match self.calls.get(&provider_index) {
                Some((our, _)) => *our,
                None => {
                    let our = self.next_tool;
                    self.next_tool += 1;
                    self.calls.insert(provider_index, (our, true));
                    let id = call
                        .get("id")
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        .map_or_else(|| format!("call_{our}"), str::to_owned);
                    let name = function
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    out.push(StreamEvent::ToolCallStart {
                        index: our,
                        id,
                        name,
                    });
                    our
                }
            };
            if let Some(fragment) = function.get("arguments").and_then(Value::as_str)
                && !fragment.is_empty()
            {
                out.push(StreamEvent::ToolCallDelta {
                    index: our,
                    fragment: fragment.to_owned(),
                });
            }
        }
    }
}

fn usage_of(usage: &Value) -> Usage {
    let prompt = uint(usage, "/prompt_tokens");
    let cache_read = usage
        .pointer("/prompt_tokens_details/cached_tokens")
        .or_else(|| usage.get("prompt_cache_hit_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let cache_write = uint(usage, "/prompt_tokens_details/cache_write_tokens");
    Usage {
        input: prompt
            .saturating_sub(cache_read)
            .saturating_sub(cache_write),
        output: uint(usage, "/completion_tokens"),
        cache_read,
        cache_write,
        reasoning: uint(usage, "/completion_tokens_details/reasoning_tokens"),
    }
}

impl StreamDecoder for OpenAiChatDecoder {
    fn decode(&mut self, frame: &SseFrame, out: &mut Vec<StreamEvent>) -> Result<(), AgentError> {
        if self.finished {
            return Ok(());
        }
        if frame.data.trim() == "[DONE]" {
            self.close_calls(out);
            self.finished = true;
            return Ok(());
        }
        let v = parse_json(frame)?;
        if let Some(error) = v.get("error").filter(|e| !e.is_null()) {
            let kind = kind_of(error.get("code"))
                .filter(|k| k != "null")
                .or_else(|| kind_of(error.get("type")))
                .unwrap_or_else(|| "error".to_owned());
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default();
            out.push(provider_error_event(&kind, message));
            self.finished = true;
            return Ok(());
        }
        // Azure's first chunk (content-filter results) has an empty model.
        if !self.started
            && let Some(model) = v
                .get("model")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
        {
            self.started = true;
            out.push(StreamEvent::MessageStart {
                id: v.get("id").and_then(Value::as_str).map(str::to_owned),
                model: model.to_owned(),
            });
        }
        let choice = v
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| {
                choices
                    .iter()
                    .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
            });
        if let Some(choice) = choice {
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            for field in ["reasoning_content", "reasoning"] {
                if let Some(text) = delta.get(field).and_then(Value::as_str)
                    && !text.is_empty()
                {
                    out.push(StreamEvent::ThinkingDelta {
                        text: text.to_owned(),
                    });
                }
            }
            for field in ["content", "refusal"] {
                if let Some(text) = delta.get(field).and_then(Value::as_str)
                    && !text.is_empty()
                {
                    out.push(StreamEvent::TextDelta {
                        text: text.to_owned(),
                    });
                }
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                self.on_tool_calls(calls, out);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str)
                && !self.stopped
            {
                self.stopped = true;
                self.close_calls(out);
                out.push(StreamEvent::Stop {
                    reason: StopReason::from_provider(reason),
                });
            }
        }
        if let Some(usage) = v.get("usage").filter(|u| u.is_object()) {
            out.push(StreamEvent::Usage {
                usage: usage_of(usage),
            });
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.finished
    }
}
