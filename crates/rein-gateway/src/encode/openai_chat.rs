//! The OpenAI Chat Completions request body.

use rein_wire::{ContentBlock, Request, Role};
use serde_json::{Map, Value, json};

use super::{image_url, joined_system, result_text};

fn user_messages(content: &[ContentBlock], out: &mut Vec<Value>) {
    // Tool results are messages of their own, and must come right after
    // the assistant message that called them.
    let mut parts = Vec::new();
    for block in content {
        match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                ..
            } => {
                out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": result_text(content)}));
                // Tool messages carry text only; images follow as user content.
                for block in content {
                    if let ContentBlock::Image { source } = block {
                        parts.push(
                            json!({"type": "image_url", "image_url": {"url": image_url(source)}}),
                        );
                    }
                }
            }
            ContentBlock::Text { text } => parts.push(json!({"type": "text", "text": text})),
            ContentBlock::Image { source } => {
                parts.push(json!({"type": "image_url", "image_url": {"url": image_url(source)}}));
            }
            _ => {}
        }
    }
    if parts.is_empty() {
        return;
    }
    if let [only] = parts.as_slice()
        && let Some(text) = only.get("text")
    {
        out.push(json!({"role": "user", "content": text}));
        return;
    }
    out.push(json!({"role": "user", "content": parts}));
}

fn assistant_message(content: &[ContentBlock]) -> Value {
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in content {
        match block {
            ContentBlock::Text { text: t } => text.push_str(t),
            ContentBlock::ToolUse { id, name, input } => {
                let arguments = if input.is_object() {
                    input.to_string()
                } else {
                    "{}".to_owned()
                };
                calls.push(json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}));
            }
            _ => {}
        }
    }
    let mut m = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text) }});
    if !calls.is_empty() {
        m["tool_calls"] = Value::Array(calls);
    }
    m
}

/// The body of a streamed `POST /chat/completions`.
pub fn openai_chat_body(request: &Request, legacy_max_tokens: bool) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": joined_system(request)}));
    }
    for m in &request.messages {
        match m.role {
            Role::User => user_messages(&m.content, &mut messages),
            Role::Assistant => messages.push(assistant_message(&m.content)),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    body.insert("messages".into(), Value::Array(messages));
    let limit_field = if legacy_max_tokens {
        "max_tokens"
    } else {
        "max_completion_tokens"
    };
    body.insert(limit_field.into(), json!(request.max_output_tokens));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                let mut f = json!({"name": t.name, "description": t.description, "parameters": t.input_schema});
                if t.strict {
                    f["strict"] = Value::Bool(true);
                }
                json!({"type": "function", "function": f})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(t) = request.sampling.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = request.sampling.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if !request.stop_sequences.is_empty() {
        body.insert("stop".into(), json!(request.stop_sequences));
    }
    if let Some(schema) = &request.output_schema {
        body.insert(
            "response_format".into(),
            json!({"type": "json_schema", "json_schema": {"name": schema.name, "schema": schema.schema, "strict": true}}),
        );
    }
    if let Some(key) = &request.metadata.prompt_cache_key {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    Value::Object(body)
}
