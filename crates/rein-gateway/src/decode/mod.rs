//! Stream decoders: one pure reducer per wire API.
//!
//! A decoder takes SSE frames and appends normalised
//! [`StreamEvent`]s. It owns no I/O, so the same code decodes a live HTTP
//! body, a captured file (`rein wire decode`) and a fuzz input.
//!
//! Rules common to all three:
//! - A provider error inside the stream becomes [`StreamEvent::Error`] with a
//!   rein code and ends the stream.
//! - Data that is not JSON (where JSON is due) is `stream_malformed`.
//! - Block and item types rein does not know are passed over.
//! - Each decoder knows its terminal event (`message_stop`, `[DONE]`,
//!   `response.completed` / `.incomplete` / `.failed`); a body that ends
//!   without it is `stream_truncated`.

mod anthropic;
mod openai_chat;
mod openai_responses;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use rein_wire::{AgentError, ErrorCode, StreamEvent, error::codes};
use serde_json::Value;

pub use anthropic::AnthropicDecoder;
pub use openai_chat::OpenAiChatDecoder;
pub use openai_responses::OpenAiResponsesDecoder;

use crate::config::WireApi;
use crate::sse::{SseFrame, SseLimits, frames};

/// A reducer from SSE frames to [`StreamEvent`]s for one wire API.
pub trait StreamDecoder: Send {
    /// Take in one frame, appending any events it produces.
    fn decode(&mut self, frame: &SseFrame, out: &mut Vec<StreamEvent>) -> Result<(), AgentError>;

    /// Whether the terminal event has been seen.
    fn is_finished(&self) -> bool;

    /// The body ended: check that the stream was complete.
    fn finish(&mut self) -> Result<(), AgentError> {
        if self.is_finished() {
            Ok(())
        } else {
            Err(AgentError::new(
                codes::STREAM_TRUNCATED,
                "the stream ended before its terminal event",
            ))
        }
    }
}

/// A fresh decoder for `api`.
pub fn decoder_for(api: WireApi) -> Box<dyn StreamDecoder> {
    match api {
        WireApi::AnthropicMessages => Box::new(AnthropicDecoder::default()),
        WireApi::OpenAiChat => Box::new(OpenAiChatDecoder::default()),
        WireApi::OpenAiResponses => Box::new(OpenAiResponsesDecoder::default()),
    }
}

/// Decode a body (a stream of byte chunks) of `api` into events.
///
/// The stream ends after the terminal event, after a provider error
/// (yielded as [`StreamEvent::Error`]), or with an `Err` for a framing,
/// decoding or truncation problem.
pub fn decode_stream<S>(
    api: WireApi,
    bytes: S,
    limits: SseLimits,
) -> impl Stream<Item = Result<StreamEvent, AgentError>> + Send
where
    S: Stream<Item = Result<Bytes, AgentError>> + Send + 'static,
{
    async_stream::stream! {
        let mut decoder = decoder_for(api);
        let mut framed = Box::pin(frames(bytes, limits));
        let mut out = Vec::new();
        while let Some(frame) = framed.next().await {
            let frame = match frame {
                Ok(frame) => frame,
                Err(err) => { yield Err(err); return; }
            };
            if let Err(err) = decoder.decode(&frame, &mut out) {
                // Broken JSON in an event completed only by the end of the
                // body is a cut-off stream, not a provider bug.
                let err = if frame.at_eof && err.is(&codes::STREAM_MALFORMED) {
                    AgentError::new(codes::STREAM_TRUNCATED, "the stream ended in the middle of an event")
                } else {
                    err
                };
                for event in out.drain(..) { yield Ok(event); }
                yield Err(err);
                return;
            }
            let mut ended = false;
            for event in out.drain(..) {
                ended |= matches!(event, StreamEvent::Error { .. });
                yield Ok(event);
            }
            if ended || decoder.is_finished() {
                return;
            }
        }
        if let Err(err) = decoder.finish() {
            yield Err(err);
        }
    }
}

/// Parse a frame's data as JSON, or say it is malformed.
pub(crate) fn parse_json(frame: &SseFrame) -> Result<Value, AgentError> {
    serde_json::from_str(&frame.data).map_err(|err| {
        let prefix: String = frame.data.chars().take(120).collect();
        AgentError::new(
            codes::STREAM_MALFORMED,
            format!("a stream event is not valid JSON: {err}"),
        )
        .with_field("data_prefix", prefix)
    })
}

/// Map a provider's error type or code to rein's code.
pub(crate) fn classify_provider_error(kind: &str) -> ErrorCode {
    match kind {
        "overloaded_error" | "overloaded" | "529" => codes::PROVIDER_OVERLOADED,
        "rate_limit_error" | "rate_limit_exceeded" | "rate_limited" | "429" => codes::RATE_LIMITED,
        "api_error" | "server_error" | "internal_error" | "500" | "502" | "503" => {
            codes::PROVIDER_UNAVAILABLE
        }
        "authentication_error" | "permission_error" | "invalid_api_key" | "401" | "403" => {
            codes::PROVIDER_AUTH
        }
        "not_found_error" | "model_not_found" | "404" => codes::PROVIDER_NOT_FOUND,
        "invalid_request_error"
        | "request_too_large"
        | "invalid_prompt"
        | "400"
        | "413"
        | "422" => codes::PROVIDER_BAD_REQUEST,
        "insufficient_quota" | "billing_error" | "402" => codes::INSUFFICIENT_QUOTA,
        "context_length_exceeded" | "context_window_exceeded" => codes::CONTEXT_WINDOW_EXCEEDED,
        _ => codes::PROVIDER_ERROR,
    }
}

/// A [`StreamEvent::Error`] from a provider's error type and message.
pub(crate) fn provider_error_event(kind: &str, message: &str) -> StreamEvent {
    let code = if crate::too_long::recognise(Some(kind), message).is_some() {
        codes::CONTEXT_WINDOW_EXCEEDED
    } else {
        classify_provider_error(kind)
    };
    let retryable = AgentError::new(code.clone(), "").retryable;
    StreamEvent::Error {
        code,
        message: if message.is_empty() {
            format!("the provider reported `{kind}`")
        } else {
            message.to_owned()
        },
        retryable,
    }
}

/// A JSON value as a string key: strings as they are, numbers in decimal.
pub(crate) fn kind_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A non-negative integer field, 0 when absent.
pub(crate) fn uint(value: &Value, pointer: &str) -> u64 {
    value.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}
