//! The OpenAI Responses request body.

use rein_wire::{ContentBlock, Message, Request, Role};
use serde_json::{Map, Value, json};

use super::{image_url, joined_system, result_text};

/// Whether an item the API counts as output follows a reasoning item.
fn followed(rest: &[ContentBlock]) -> bool {
    rest.iter()
        .any(|b| matches!(b, ContentBlock::Text { .. } | ContentBlock::ToolUse { .. }))
}

/// The body of a streamed `POST /responses`. Nothing is stored on the
/// provider's side (`store: false`): rein's log is the record.
pub fn openai_responses_body(request: &Request) -> Value {
    let mut body = frame(request);
    let input: Vec<Value> = request.messages.iter().flat_map(|m| items(m)).collect();
    if let Some(map) = body.as_object_mut() {
        map.insert("input".into(), Value::Array(input));
    }
    body
}

/// One message's input items (a message with calls becomes several):
/// what the message alone decides, so its bytes can be kept between
/// requests.
pub(super) fn items(m: &Message) -> Vec<Value> {
    let mut input = Vec::new();
    {
        let mut parts = Vec::new();
        for (at, block) in m.content.iter().enumerate() {
            match (m.role, block) {
                (Role::User, ContentBlock::Text { text }) => {
                    parts.push(json!({"type": "input_text", "text": text}));
                }
                (Role::User, ContentBlock::Image { source }) => {
                    parts.push(json!({"type": "input_image", "image_url": image_url(source)}));
                }
                (Role::Assistant, ContentBlock::Text { text }) => {
                    parts.push(json!({"type": "output_text", "text": text}));
                }
                // A reasoning item goes back in its place (before the call
                // it preceded) with its id and encrypted content, so the
                // model keeps its reasoning across the tool loop. Only items
                // Responses itself made (they have an id): another API's
                // signed thinking means nothing here. An item with nothing
                // after it (the output ended while the model reasoned) is
                // refused by the API ("provided without its required
                // following item"), so it stays in the log only.
                (
                    Role::Assistant,
                    ContentBlock::Thinking {
                        thinking,
                        signature: Some(encrypted),
                        id: Some(id),
                    },
                ) if followed(&m.content[at + 1..]) => {
                    flush(&mut input, m.role, &mut parts);
                    let summary: Vec<Value> = if thinking.is_empty() {
                        Vec::new()
                    } else {
                        vec![json!({"type": "summary_text", "text": thinking})]
                    };
                    input.push(json!({"type": "reasoning", "id": id, "encrypted_content": encrypted, "summary": summary}));
                }
                (
                    _,
                    ContentBlock::ToolUse {
                        id,
                        name,
                        input: args,
                    },
                ) => {
                    flush(&mut input, m.role, &mut parts);
                    let arguments = if args.is_object() {
                        args.to_string()
                    } else {
                        "{}".to_owned()
                    };
                    input.push(json!({"type": "function_call", "call_id": id, "name": name, "arguments": arguments}));
                }
                (
                    _,
                    ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    },
                ) => {
                    flush(&mut input, m.role, &mut parts);
                    input.push(json!({"type": "function_call_output", "call_id": tool_use_id, "output": result_text(content)}));
                }
                _ => {}
            }
        }
        flush(&mut input, m.role, &mut parts);
    }
    input
}

/// The body with an empty `input` array: everything but the transcript.
pub(super) fn frame(request: &Request) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("stream".into(), json!(true));
    body.insert("store".into(), json!(false));
    if !request.system.is_empty() {
        body.insert("instructions".into(), json!(joined_system(request)));
    }
    body.insert("input".into(), Value::Array(Vec::new()));
    body.insert("max_output_tokens".into(), json!(request.max_output_tokens));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name, "description": t.description,
                       "parameters": t.input_schema, "strict": t.strict})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = request.tool_choice {
            body.insert(
                "tool_choice".into(),
                json!(super::openai_tool_choice(choice)),
            );
        }
    }
    if let Some(effort) = request.reasoning.and_then(|r| r.effort()) {
        body.insert(
            "reasoning".into(),
            json!({"effort": effort, "summary": "auto"}),
        );
        // Stateless (store: false): the reasoning comes back encrypted so
        // it can be sent again with the next request.
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if let Some(t) = request.sampling.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = request.sampling.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if let Some(schema) = &request.output_schema {
        body.insert(
            "text".into(),
            json!({"format": {"type": "json_schema", "name": schema.name, "schema": schema.schema, "strict": true}}),
        );
    }
    if let Some(key) = &request.metadata.prompt_cache_key {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    // The Responses API keeps a request's metadata (string pairs) with
    // the response: the graph task a call serves is found there. The
    // other APIs have no place for it (Anthropic's takes a user id only;
    // Chat Completions' only with `store`), so they do not send it.
    if let Some(task) = &request.metadata.task_id {
        body.insert("metadata".into(), json!({"task_id": task}));
    }
    Value::Object(body)
}

fn flush(input: &mut Vec<Value>, role: Role, parts: &mut Vec<Value>) {
    if parts.is_empty() {
        return;
    }
    let role = match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    input.push(json!({"role": role, "content": std::mem::take(parts)}));
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_wire::Message;

    /// A graph task's id goes in the request's metadata; a call that
    /// serves no task sends no metadata at all.
    #[test]
    fn a_task_id_is_sent_as_metadata_and_nothing_without_one() {
        let mut request = Request::new("gpt-5", vec![Message::user("hi")]);
        assert!(openai_responses_body(&request).get("metadata").is_none());
        request.metadata.task_id = Some("research".into());
        request.metadata.session_id = Some("s-1".into());
        let body = openai_responses_body(&request);
        assert_eq!(body["metadata"], json!({"task_id": "research"}));
    }
}
