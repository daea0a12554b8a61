//! Request-body writers: one per wire API.
//!
//! Each takes the provider-neutral [`Request`] and writes the JSON body
//! that API expects, with `stream: true`. Writers are pure and total: any
//! request can be written (content a provider has no place for, such as
//! thinking blocks on OpenAI Chat, is left out and logged at debug level).

mod anthropic;
mod openai_chat;
mod openai_responses;

use rein_wire::{ContentBlock, ImageSource, Request};
use serde_json::Value;

use crate::config::{ProviderConfig, WireApi};

pub use anthropic::anthropic_body;
pub use openai_chat::openai_chat_body;
pub use openai_responses::openai_responses_body;

/// The JSON body for `request` on `config`'s API.
pub fn body_for(config: &ProviderConfig, request: &Request) -> Value {
    match config.api {
        WireApi::AnthropicMessages => anthropic_body(request),
        WireApi::OpenAiChat => openai_chat_body(request, config.legacy_max_tokens),
        WireApi::OpenAiResponses => openai_responses_body(request),
    }
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

/// The system blocks joined with blank lines.
pub(crate) fn joined_system(request: &Request) -> String {
    request
        .system
        .iter()
        .map(|b| b.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}
