//! Scripted messages written as each wire API's SSE body.
//!
//! A [`ScriptedMessage`] is provider-neutral: text pieces, tool calls with
//! their arguments split into fragments, usage, a stop reason. The writers
//! here turn it into the exact event sequence each API streams, so one
//! script checks all three decoders end to end.

use std::sync::atomic::{AtomicU64, Ordering};

use rein_wire::{StopReason, StreamEvent, Usage};
use serde_json::{Value, json};

/// A tool call in a script.
#[derive(Debug, Clone)]
pub struct ScriptedCall {
    /// The call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
    /// Split the arguments into this many fragments (at least 1).
    pub fragments: usize,
}

impl ScriptedCall {
    /// A call of `name` with `arguments`, streamed whole, under an id no
    /// other call made by this process has (`call_1`, `call_2`, …).
    pub fn to(name: &str, arguments: Value) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        ScriptedCall {
            id: format!("call_{}", NEXT.fetch_add(1, Ordering::Relaxed)),
            name: name.into(),
            arguments: arguments.to_string(),
            fragments: 1,
        }
    }

    /// Under the id `id` (a test that names the call later).
    #[must_use]
    pub fn id(mut self, id: &str) -> Self {
        id.clone_into(&mut self.id);
        self
    }

    /// Its arguments streamed in `fragments` pieces (at least 1).
    #[must_use]
    pub fn in_fragments(mut self, fragments: usize) -> Self {
        self.fragments = fragments.max(1);
        self
    }

    fn pieces(&self) -> Vec<String> {
        split_chars(&self.arguments, self.fragments)
    }
}

/// One assistant message to stream.
#[derive(Debug, Clone)]
pub struct ScriptedMessage {
    /// The model name reported.
    pub model: String,
    /// Text, streamed piece by piece.
    pub text: Vec<String>,
    /// Tool calls, after the text.
    pub calls: Vec<ScriptedCall>,
    /// Usage reported.
    pub usage: Usage,
    /// The stop reason (`None`: tool use if there are calls, else end of turn).
    pub stop: Option<StopReason>,
    /// Reasoning before the text and calls: (summary, signature or
    /// encrypted content, Responses item id).
    pub reasoning: Option<(String, String, String)>,
}

impl ScriptedMessage {
    /// A text answer streamed in the given pieces.
    pub fn text(pieces: &[&str]) -> Self {
        ScriptedMessage {
            model: "fake-model".into(),
            text: pieces.iter().map(|p| (*p).to_owned()).collect(),
            calls: Vec::new(),
            usage: Usage {
                input: 10,
                output: 5,
                ..Usage::default()
            },
            stop: None,
            reasoning: None,
        }
    }

    /// Reason first: `summary` streamed, then `signature` (Anthropic's
    /// signature, Responses' encrypted content of item `id`). OpenAI Chat
    /// streams none of it.
    pub fn with_reasoning(mut self, summary: &str, signature: &str, id: &str) -> Self {
        self.reasoning = Some((summary.into(), signature.into(), id.into()));
        self
    }

    /// Add a tool call.
    pub fn with_call(mut self, call: ScriptedCall) -> Self {
        self.calls.push(call);
        self
    }

    /// Set the usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    fn stop_reason(&self) -> StopReason {
        self.stop.clone().unwrap_or(if self.calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        })
    }

    /// The normalised events a decoder should produce for this message
    /// (what [`FakeProvider`](crate::FakeProvider) yields).
    pub fn events(&self) -> Vec<StreamEvent> {
        let mut events = vec![StreamEvent::MessageStart {
            id: Some("msg_fake".into()),
            model: self.model.clone(),
        }];
        if let Some((summary, signature, _)) = &self.reasoning {
            events.push(StreamEvent::ThinkingDelta {
                text: summary.clone(),
            });
            events.push(StreamEvent::ThinkingSignature {
                signature: signature.clone(),
                id: None,
            });
        }
        for piece in &self.text {
            events.push(StreamEvent::TextDelta {
                text: piece.clone(),
            });
        }
        for (index, call) in self.calls.iter().enumerate() {
            let index = index as u32;
            events.push(StreamEvent::ToolCallStart {
                index,
                id: call.id.clone(),
                name: call.name.clone(),
            });
            for fragment in call.pieces() {
                events.push(StreamEvent::ToolCallDelta { index, fragment });
            }
            events.push(StreamEvent::ToolCallEnd { index });
        }
        events.push(StreamEvent::Stop {
            reason: self.stop_reason(),
        });
        events.push(StreamEvent::Usage { usage: self.usage });
        events
    }

    /// The body Anthropic Messages would stream.
    pub fn anthropic_sse(&self) -> String {
        let mut out = String::new();
        let u = &self.usage;
        event(
            &mut out,
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant",
                "model": self.model, "content": [], "stop_reason": null,
                "usage": {"input_tokens": u.input, "cache_creation_input_tokens": u.cache_write,
                          "cache_read_input_tokens": u.cache_read, "output_tokens": 1}}}),
        );
        event(&mut out, "ping", json!({"type": "ping"}));
        let mut index = 0;
        if let Some((summary, signature, _)) = &self.reasoning {
            event(
                &mut out,
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": ""}}),
            );
            event(
                &mut out,
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": summary}}),
            );
            event(
                &mut out,
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}}),
            );
            event(
                &mut out,
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            );
            index += 1;
        }
        if !self.text.is_empty() {
            event(
                &mut out,
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
            );
            for piece in &self.text {
                event(
                    &mut out,
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}),
                );
            }
            event(
                &mut out,
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            );
            index += 1;
        }
        for call in &self.calls {
            event(
                &mut out,
                "content_block_start",
                json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
            );
            for piece in call.pieces() {
                event(
                    &mut out,
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece}}),
                );
            }
            event(
                &mut out,
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            );
            index += 1;
        }
        let stop = match self.stop_reason() {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            _ => "end_turn",
        };
        event(
            &mut out,
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": u.output}}),
        );
        event(&mut out, "message_stop", json!({"type": "message_stop"}));
        out
    }

    /// The body OpenAI Chat Completions would stream (with usage).
    pub fn openai_chat_sse(&self) -> String {
        let mut out = String::new();
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": self.model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        data(
            &mut out,
            &chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        );
        for piece in &self.text {
            data(&mut out, &chunk(json!({"content": piece}), Value::Null));
        }
        for (index, call) in self.calls.iter().enumerate() {
            data(
                &mut out,
                &chunk(
                    json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                "function": {"name": call.name, "arguments": ""}}]}),
                    Value::Null,
                ),
            );
            for piece in call.pieces() {
                data(
                    &mut out,
                    &chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                        Value::Null,
                    ),
                );
            }
        }
        let finish = match self.stop_reason() {
            StopReason::ToolUse => "tool_calls",
            StopReason::MaxTokens => "length",
            _ => "stop",
        };
        data(&mut out, &chunk(json!({}), json!(finish)));
        let u = &self.usage;
        data(
            &mut out,
            &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": self.model,
            "choices": [], "usage": {"prompt_tokens": u.prompt_total(), "completion_tokens": u.output,
            "total_tokens": u.prompt_total() + u.output,
            "prompt_tokens_details": {"cached_tokens": u.cache_read, "cache_write_tokens": u.cache_write},
            "completion_tokens_details": {"reasoning_tokens": u.reasoning}}}),
        );
        out.push_str("data: [DONE]\n\n");
        out
    }

    /// The body OpenAI Responses would stream.
    pub fn openai_responses_sse(&self) -> String {
        let mut out = String::new();
        let mut seq = 0u64;
        let mut emit = |out: &mut String, mut v: Value| {
            let kind = v["type"].as_str().unwrap_or_default().to_owned();
            v["sequence_number"] = json!(seq);
            seq += 1;
            event(out, &kind, v);
        };
        let response = json!({"id": "resp_fake", "object": "response", "status": "in_progress", "model": self.model, "output": []});
        emit(
            &mut out,
            json!({"type": "response.created", "response": response}),
        );
        let mut output_index = 0;
        if let Some((summary, encrypted, id)) = &self.reasoning {
            emit(
                &mut out,
                json!({"type": "response.output_item.added", "output_index": output_index,
                "item": {"id": id, "type": "reasoning", "summary": []}}),
            );
            emit(
                &mut out,
                json!({"type": "response.reasoning_summary_text.delta", "item_id": id,
                "output_index": output_index, "summary_index": 0, "delta": summary}),
            );
            emit(
                &mut out,
                json!({"type": "response.output_item.done", "output_index": output_index,
                "item": {"id": id, "type": "reasoning", "encrypted_content": encrypted,
                         "summary": [{"type": "summary_text", "text": summary}]}}),
            );
            output_index += 1;
        }
        if !self.text.is_empty() {
            emit(
                &mut out,
                json!({"type": "response.output_item.added", "output_index": output_index,
                "item": {"id": "msg_fake", "type": "message", "role": "assistant", "content": []}}),
            );
            for piece in &self.text {
                emit(
                    &mut out,
                    json!({"type": "response.output_text.delta", "item_id": "msg_fake",
                    "output_index": output_index, "content_index": 0, "delta": piece}),
                );
            }
            emit(
                &mut out,
                json!({"type": "response.output_item.done", "output_index": output_index,
                "item": {"id": "msg_fake", "type": "message", "role": "assistant",
                         "content": [{"type": "output_text", "text": self.text.concat()}]}}),
            );
            output_index += 1;
        }
        for call in &self.calls {
            let item_id = format!("fc_{}", call.id);
            emit(
                &mut out,
                json!({"type": "response.output_item.added", "output_index": output_index,
                "item": {"id": item_id, "type": "function_call", "call_id": call.id, "name": call.name, "arguments": ""}}),
            );
            for piece in call.pieces() {
                emit(
                    &mut out,
                    json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                    "output_index": output_index, "delta": piece}),
                );
            }
            emit(
                &mut out,
                json!({"type": "response.function_call_arguments.done", "item_id": item_id,
                "output_index": output_index, "arguments": call.arguments}),
            );
            emit(
                &mut out,
                json!({"type": "response.output_item.done", "output_index": output_index,
                "item": {"id": item_id, "type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments}}),
            );
            output_index += 1;
        }
        let u = &self.usage;
        let (kind, status) = if self.stop_reason() == StopReason::MaxTokens {
            ("response.incomplete", "incomplete")
        } else {
            ("response.completed", "completed")
        };
        emit(
            &mut out,
            json!({"type": kind, "response": {"id": "resp_fake", "object": "response", "status": status,
            "model": self.model, "incomplete_details": if status == "incomplete" { json!({"reason": "max_output_tokens"}) } else { Value::Null },
            "usage": {"input_tokens": u.input + u.cache_read, "input_tokens_details": {"cached_tokens": u.cache_read},
                      "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": u.reasoning},
                      "total_tokens": u.input + u.cache_read + u.output}}}),
        );
        out
    }
}

fn event(out: &mut String, name: &str, value: Value) {
    out.push_str("event: ");
    out.push_str(name);
    out.push_str("\ndata: ");
    out.push_str(&value.to_string());
    out.push_str("\n\n");
}

fn data(out: &mut String, value: &Value) {
    out.push_str("data: ");
    out.push_str(&value.to_string());
    out.push_str("\n\n");
}

/// Split `text` into `n` pieces of about equal length, on char boundaries.
pub fn split_chars(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let n = n.clamp(1, chars.len().max(1));
    let size = chars.len().div_ceil(n).max(1);
    let pieces: Vec<String> = chars.chunks(size).map(|c| c.iter().collect()).collect();
    if pieces.is_empty() {
        vec![String::new()]
    } else {
        pieces
    }
}

/// An Anthropic `error` event body of this type (e.g. `overloaded_error`).
pub fn anthropic_error_event(kind: &str, message: &str) -> String {
    let mut out = String::new();
    event(
        &mut out,
        "error",
        json!({"type": "error", "error": {"type": kind, "message": message}}),
    );
    out
}
