//! The Anthropic Messages request body.

use rein_wire::{CacheTarget, ContentBlock, ImageSource, Message, Request, Role, ToolChoice};
use serde_json::{Map, Value, json};

/// Anthropic honours at most this many `cache_control` markers.
pub const MAX_BREAKPOINTS: usize = 4;

fn image(source: &ImageSource) -> Value {
    match source {
        ImageSource::Base64 { media_type, data } => {
            json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
        }
        ImageSource::Url { url } => json!({"type": "image", "source": {"type": "url", "url": url}}),
    }
}

fn block(block: &ContentBlock) -> Value {
    match block {
        ContentBlock::Text { text } => json!({"type": "text", "text": text}),
        ContentBlock::Image { source } => image(source),
        ContentBlock::ToolUse { id, name, input } => {
            let input = if input.is_object() {
                input.clone()
            } else {
                json!({})
            };
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let parts: Vec<Value> = content
                .iter()
                .filter(|b| matches!(b, ContentBlock::Text { .. } | ContentBlock::Image { .. }))
                .map(self::block)
                .collect();
            let mut v =
                json!({"type": "tool_result", "tool_use_id": tool_use_id, "content": parts});
            if *is_error {
                v["is_error"] = Value::Bool(true);
            }
            v
        }
        ContentBlock::Thinking {
            thinking,
            signature,
            ..
        } => {
            json!({"type": "thinking", "thinking": thinking, "signature": signature})
        }
        ContentBlock::RedactedThinking { data } => {
            json!({"type": "redacted_thinking", "data": data})
        }
    }
}

/// Whether a block of the log goes back to Anthropic. Thinking goes back
/// only as Anthropic signed it: another API's reasoning (a Responses item
/// carries an id; a Chat server's `reasoning_content` has no signature)
/// means nothing here and would be refused, so it stays in the log only.
fn goes_back(block: &ContentBlock) -> bool {
    match block {
        ContentBlock::Thinking { signature, id, .. } => {
            id.is_none() && signature.as_deref().is_some_and(|s| !s.is_empty())
        }
        _ => true,
    }
}

fn mark(value: &mut Value) {
    if let Some(obj) = value.as_object_mut() {
        obj.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

/// The body of a streamed `POST /v1/messages`.
pub fn anthropic_body(request: &Request) -> Value {
    let mut body = frame(request);
    let messages: Vec<Value> = request
        .messages
        .iter()
        .enumerate()
        .map(|(index, m)| message(m, marked(request, index)))
        .collect();
    if let Some(map) = body.as_object_mut() {
        map.insert("messages".into(), Value::Array(messages));
    }
    body
}

/// The breakpoints Anthropic honours: the first [`MAX_BREAKPOINTS`].
fn honoured(request: &Request) -> impl Iterator<Item = CacheTarget> + '_ {
    request
        .cache_breakpoints
        .iter()
        .map(|b| b.target)
        .take(MAX_BREAKPOINTS)
}

/// Whether message `index` carries a cache breakpoint.
pub(super) fn marked(request: &Request, index: usize) -> bool {
    honoured(request).any(|t| t == CacheTarget::Message { index })
}

/// One message as Anthropic takes it (with the breakpoint on its last
/// block when `marked`): what the message alone decides, so its bytes can
/// be kept between requests.
pub(super) fn message(m: &Message, marked: bool) -> Value {
    let mut content: Vec<Value> = m
        .content
        .iter()
        .filter(|b| goes_back(b))
        .map(block)
        .collect();
    if marked && let Some(last) = content.last_mut() {
        mark(last);
    }
    let role = match m.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    json!({"role": role, "content": content})
}

/// The body with an empty `messages` array: everything but the transcript.
pub(super) fn frame(request: &Request) -> Value {
    let honoured: Vec<CacheTarget> = honoured(request).collect();
    if request.cache_breakpoints.len() > MAX_BREAKPOINTS {
        tracing::debug!(
            requested = request.cache_breakpoints.len(),
            "more cache breakpoints than Anthropic allows; the first four are sent"
        );
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    // Thinking counts against max_tokens: the limit grows by the budget so
    // the answer keeps its own room.
    let thinking = request.reasoning.and_then(|r| r.budget_tokens());
    let max_tokens = request
        .max_output_tokens
        .saturating_add(thinking.unwrap_or(0));
    body.insert("max_tokens".into(), json!(max_tokens));
    if let Some(budget) = thinking {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    body.insert("stream".into(), json!(true));
    if !request.system.is_empty() {
        let system: Vec<Value> = request
            .system
            .iter()
            .enumerate()
            .map(|(index, b)| {
                let mut v = json!({"type": "text", "text": b.text});
                if honoured.contains(&CacheTarget::System { index }) {
                    mark(&mut v);
                }
                v
            })
            .collect();
        body.insert("system".into(), Value::Array(system));
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
        if honoured.contains(&CacheTarget::Tools)
            && let Some(last) = tools.last_mut()
        {
            mark(last);
        }
        body.insert("tools".into(), Value::Array(tools));
        // With thinking on, Anthropic takes `auto` and `none` only.
        let choice = match request.tool_choice {
            Some(ToolChoice::Auto) => Some("auto"),
            Some(ToolChoice::None) => Some("none"),
            Some(ToolChoice::Required) if thinking.is_none() => Some("any"),
            Some(ToolChoice::Required) | None => None,
        };
        if let Some(kind) = choice {
            body.insert("tool_choice".into(), json!({"type": kind}));
        }
    }
    body.insert("messages".into(), Value::Array(Vec::new()));
    // With thinking on, Anthropic takes no temperature and a top_p of
    // 0.95 to 1 only.
    if let Some(t) = request.sampling.temperature.filter(|_| thinking.is_none()) {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = request.sampling.top_p {
        let p = if thinking.is_some() {
            p.clamp(0.95, 1.0)
        } else {
            p
        };
        body.insert("top_p".into(), json!(p));
    }
    if !request.stop_sequences.is_empty() {
        body.insert("stop_sequences".into(), json!(request.stop_sequences));
    }
    if let Some(session) = &request.metadata.session_id {
        body.insert("metadata".into(), json!({"user_id": session}));
    }
    Value::Object(body)
}
