//! Request-body writers: one per wire API.
//!
//! Each takes the provider-neutral [`Request`] and writes the JSON body
//! that API expects, with `stream: true`. Writers are pure and total: any
//! request can be written (content a provider has no place for, such as
//! thinking blocks on OpenAI Chat, is left out and logged at debug level).

mod anthropic;
mod kept;
mod openai_chat;
mod openai_responses;

use std::borrow::Cow;

use rein_wire::{ContentBlock, ImageSource, Request};
use serde_json::Value;

use crate::config::{ProviderConfig, WireApi};

pub use anthropic::anthropic_body;
pub use kept::{EncodedCache, MAX_KEPT_BYTES, MAX_SESSIONS};
pub use openai_chat::{ChatDialect, openai_chat_body, openai_chat_bytes};
pub use openai_responses::openai_responses_body;

/// What a text-only model is sent in place of an image.
pub const IMAGE_NOTE: &str = "[an image was here; this model cannot see images]";

/// The JSON body for `request` on `config`'s API (images as a text note
/// where the model takes none).
pub fn body_for(config: &ProviderConfig, request: &Request) -> Value {
    let request = as_the_model_takes_it(config, request);
    match config.api {
        WireApi::AnthropicMessages => anthropic_body(&request),
        WireApi::OpenAiChat => openai_chat_body(&request, config.chat_dialect()),
        WireApi::OpenAiResponses => openai_responses_body(&request),
    }
}

/// The bytes of the body for `request` on `config`'s API: what is sent,
/// written as the body's frame with each message's bytes spliced in.
pub fn body_bytes(
    config: &ProviderConfig,
    request: &Request,
) -> Result<Vec<u8>, serde_json::Error> {
    write_body(config, request, &mut kept::Kept::default())
}

/// [`body_bytes`], reusing the bytes of the messages `cache` kept from
/// the session's last request (and keeping this request's for the next).
pub fn body_bytes_kept(
    config: &ProviderConfig,
    request: &Request,
    cache: &EncodedCache,
) -> Result<Vec<u8>, serde_json::Error> {
    let Some(session) = request.metadata.session_id.clone() else {
        return body_bytes(config, request);
    };
    let mut kept = cache.take(&session);
    let body = write_body(config, request, &mut kept);
    cache.put(session, kept);
    if cfg!(debug_assertions)
        && let Ok(body) = &body
    {
        let plain = serde_json::to_vec(&body_for(config, request)).ok();
        let spliced = serde_json::from_slice::<Value>(body).ok();
        debug_assert_eq!(
            spliced.and_then(|v| serde_json::to_vec(&v).ok()),
            plain,
            "a body spliced from kept messages differs from the plain one"
        );
    }
    body
}

fn write_body(
    config: &ProviderConfig,
    request: &Request,
    kept: &mut kept::Kept,
) -> Result<Vec<u8>, serde_json::Error> {
    let request = as_the_model_takes_it(config, request);
    let messages = request.messages.as_slice();
    match config.api {
        WireApi::OpenAiChat => {
            let frame = openai_chat::frame_bytes(&request, config.chat_dialect())?;
            let mut chunks = vec![Cow::Owned(openai_chat::system_bytes(&request)?)];
            chunks.extend(kept.chunks(
                messages,
                |_| false,
                |m, _| openai_chat::message_bytes(m),
            )?);
            Ok(kept::splice(&frame, "messages", &chunks))
        }
        WireApi::AnthropicMessages => {
            let frame = serde_json::to_vec(&anthropic::frame(&request))?;
            let chunks = kept.chunks(
                messages,
                |i| anthropic::marked(&request, i),
                |m, marked| serde_json::to_vec(&anthropic::message(m, marked)),
            )?;
            Ok(kept::splice(&frame, "messages", &chunks))
        }
        WireApi::OpenAiResponses => {
            let frame = serde_json::to_vec(&openai_responses::frame(&request))?;
            let chunks = kept.chunks(
                messages,
                |_| false,
                |m, _| {
                    let items = openai_responses::items(m);
                    let mut out = serde_json::to_vec(&items)?;
                    // The items without their brackets: spliced into `input`.
                    out.pop();
                    out.remove(0);
                    Ok(out)
                },
            )?;
            Ok(kept::splice(&frame, "input", &chunks))
        }
    }
}

/// `request` itself, or a copy with its images as text notes for a model
/// that takes none (copied only when there is an image to replace).
fn as_the_model_takes_it<'a>(
    config: &ProviderConfig,
    request: &'a Request,
) -> std::borrow::Cow<'a, Request> {
    if !config.images && has_images(request) {
        std::borrow::Cow::Owned(without_images(request))
    } else {
        std::borrow::Cow::Borrowed(request)
    }
}

fn is_image(block: &ContentBlock) -> bool {
    match block {
        ContentBlock::Image { .. } => true,
        ContentBlock::ToolResult { content, .. } => content.iter().any(is_image),
        _ => false,
    }
}

fn has_images(request: &Request) -> bool {
    request
        .messages
        .iter()
        .any(|m| m.content.iter().any(is_image))
}

fn strip(block: &ContentBlock) -> ContentBlock {
    match block {
        ContentBlock::Image { .. } => ContentBlock::Text {
            text: IMAGE_NOTE.into(),
        },
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => ContentBlock::ToolResult {
            tool_use_id: tool_use_id.clone(),
            content: content.iter().map(strip).collect(),
            is_error: *is_error,
        },
        other => other.clone(),
    }
}

/// `request` with every image replaced by [`IMAGE_NOTE`] (the messages
/// without one are shared, not copied).
pub fn without_images(request: &Request) -> Request {
    let mut out = request.clone();
    for message in &mut out.messages {
        if message.content.iter().any(is_image) {
            std::sync::Arc::make_mut(message).content = message.content.iter().map(strip).collect();
        }
    }
    out
}

/// The text of tool-result content, images left as a marker.
pub(crate) fn result_text(content: &[ContentBlock]) -> String {
    let mut out = String::new();
    for block in content {
        match block {
            ContentBlock::Text { text } => out.push_str(text),
            ContentBlock::Image { .. } => out.push_str("[image]"),
            _ => {}
        }
    }
    out
}

/// An image as a URL: its own, or a `data:` URL for inline bytes.
pub(crate) fn image_url(source: &ImageSource) -> String {
    match source {
        ImageSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
        ImageSource::Url { url } => url.clone(),
    }
}

/// A tool choice as both OpenAI APIs take it.
pub(crate) fn openai_tool_choice(choice: rein_wire::ToolChoice) -> &'static str {
    match choice {
        rein_wire::ToolChoice::Auto => "auto",
        rein_wire::ToolChoice::None => "none",
        rein_wire::ToolChoice::Required => "required",
    }
}

/// The system blocks joined with blank lines.
pub(crate) fn joined_system(request: &Request) -> String {
    request
        .system
        .iter()
        .map(|b| b.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {

    use rein_wire::{Message, Role};

    use super::*;

    fn with_image() -> Request {
        let image = ContentBlock::Image {
            source: ImageSource::Base64 {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            },
        };
        let mut request = Request::new("m", vec![Message::user("look")]);
        request.messages.push(std::sync::Arc::new(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "c1".into(),
                name: "snapshot".into(),
                input: serde_json::json!({}),
            }],
        }));
        request.messages.push(std::sync::Arc::new(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "c1".into(),
                content: vec![ContentBlock::text("the window"), image],
                is_error: false,
            }],
        }));
        request
    }

    #[test]
    fn a_tool_choice_is_sent_as_each_api_takes_it_and_only_with_tools() {
        let mut request = with_image();
        request.tool_choice = Some(rein_wire::ToolChoice::None);
        let apis = [
            (
                WireApi::AnthropicMessages,
                serde_json::json!({"type": "none"}),
            ),
            (WireApi::OpenAiChat, serde_json::json!("none")),
            (WireApi::OpenAiResponses, serde_json::json!("none")),
        ];
        // No tools offered: nothing to choose among, nothing sent.
        for (api, _) in &apis {
            let body = body_for(&ProviderConfig::new(*api), &request);
            assert!(body.get("tool_choice").is_none(), "{api}: {body}");
        }
        request.tools = vec![rein_wire::ToolSpec {
            name: "snapshot".into(),
            description: "Look.".into(),
            input_schema: serde_json::json!({"type": "object"}),
            strict: false,
        }];
        for (api, want) in &apis {
            let body = body_for(&ProviderConfig::new(*api), &request);
            assert_eq!(body["tool_choice"], *want, "{api}");
            assert_eq!(body["tools"].as_array().map(Vec::len), Some(1), "{api}");
        }
        // Anthropic thinking takes `auto` and `none` only: `required` is
        // left to the model there.
        request.tool_choice = Some(rein_wire::ToolChoice::Required);
        let anthropic = ProviderConfig::new(WireApi::AnthropicMessages);
        assert_eq!(body_for(&anthropic, &request)["tool_choice"]["type"], "any");
        request.reasoning = Some(rein_wire::Reasoning::High);
        let body = body_for(&anthropic, &request);
        assert!(body.get("tool_choice").is_none(), "{body}");
        let chat = body_for(&ProviderConfig::new(WireApi::OpenAiChat), &request);
        assert_eq!(chat["tool_choice"], "required");
    }

    #[test]
    fn a_text_only_model_gets_a_note_instead_of_an_image() {
        // (Responses never sends images inside a call's output.)
        for api in [WireApi::AnthropicMessages, WireApi::OpenAiChat] {
            let mut config = ProviderConfig::new(api);
            let seen = body_for(&config, &with_image()).to_string();
            assert!(seen.contains("iVBORw0KGgo="), "{api}: {seen}");
            config.images = false;
            let text_only = body_for(&config, &with_image()).to_string();
            let sent: Value =
                serde_json::from_slice(&body_bytes(&config, &with_image()).unwrap()).unwrap();
            assert_eq!(sent.to_string(), text_only, "{api}");
            assert!(!text_only.contains("iVBORw0KGgo="), "{api}: {text_only}");
            assert!(text_only.contains(IMAGE_NOTE), "{api}: {text_only}");
            assert!(text_only.contains("the window"), "{api}: {text_only}");
        }
        // Without images nothing is copied or changed.
        let mut config = ProviderConfig::new(WireApi::OpenAiChat);
        config.images = false;
        let plain = Request::new("m", vec![Message::user("hi")]);
        assert_eq!(
            body_for(&config, &plain),
            openai_chat_body(&plain, config.chat_dialect())
        );
    }
}
