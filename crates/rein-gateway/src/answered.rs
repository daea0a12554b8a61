//! What a provider's answer means when it is not an event stream: a
//! non-2xx status with the provider's own message (its code, and the
//! window it states when it refuses a request as too long), or a 2xx page
//! that is not SSE. Only the first [`ERROR_BODY_LIMIT`] bytes are read.
//!
//! Not here: sending, retrying and timing out (`http_provider`), reading a
//! too-long message's numbers (`too_long`).

use futures::StreamExt;
use rein_wire::{AgentError, error::codes};
use serde_json::Value;
use tokio::time::Instant;

use crate::config::ProviderConfig;

/// How much of an error response body is read.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// The first [`ERROR_BODY_LIMIT`] bytes of a body that is not a stream
/// (an error or something else), read under the idle timeout.
async fn body_head(
    response: reqwest::Response,
    config: &ProviderConfig,
    deadline: Instant,
) -> Vec<u8> {
    let idle = Instant::now() + config.timeouts.idle;
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while body.len() < ERROR_BODY_LIMIT {
        match tokio::time::timeout_at(idle.min(deadline), stream.next()).await {
            Ok(Some(Ok(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(ERROR_BODY_LIMIT);
    body
}

/// The media type of a response that declares one other than
/// `text/event-stream` (`None`: SSE, or nothing declared — then the
/// framing's own check decides).
pub(crate) fn not_event_stream(headers: &http::HeaderMap) -> Option<String> {
    let declared = headers.get(http::header::CONTENT_TYPE)?;
    let media = declared
        .to_str()
        .unwrap_or("(unreadable)")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    (media != "text/event-stream").then_some(media)
}

/// The error for a 2xx answer that is not an event stream: a web page, a
/// proxy's login form, a JSON document. Not retryable: asking again gets
/// the same page.
pub(crate) async fn not_sse_error(
    media: String,
    response: reqwest::Response,
    config: &ProviderConfig,
    deadline: Instant,
) -> AgentError {
    let status = response.status().as_u16();
    let body = body_head(response, config, deadline).await;
    let quoted: String = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&body).chars().take(120).collect());
    AgentError::new(
        codes::STREAM_NOT_SSE,
        format!(
            "the provider answered HTTP {status} with `{media}`, not an event stream: {}",
            rein_wire::visible::visible(quoted.trim())
        ),
    )
    .with_field("status", status)
    .with_field("content_type", media)
}

/// The error for a non-2xx answer, with the provider's message.
pub(crate) async fn status_error(
    response: reqwest::Response,
    config: &ProviderConfig,
    deadline: Instant,
) -> AgentError {
    let status = response.status().as_u16();
    let body = body_head(response, config, deadline).await;
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let kind = error
        .and_then(|e| {
            e.get("code")
                .filter(|c| !c.is_null())
                .or_else(|| e.get("type"))
        })
        .and_then(|k| {
            k.as_str()
                .map(str::to_owned)
                .or_else(|| k.as_u64().map(|n| n.to_string()))
        });
    let provider_message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| String::from_utf8_lossy(&body).chars().take(300).collect());
    let too_long = crate::too_long::recognise(kind.as_deref(), &provider_message);
    let by_kind = kind.as_deref().map(crate::decode::classify_provider_error);
    let code = match (status, by_kind) {
        _ if too_long.is_some() => codes::CONTEXT_WINDOW_EXCEEDED,
        (_, Some(code))
            if code == codes::INSUFFICIENT_QUOTA || code == codes::CONTEXT_WINDOW_EXCEEDED =>
        {
            code
        }
        (401 | 403, _) => codes::PROVIDER_AUTH,
        (404, _) => codes::PROVIDER_NOT_FOUND,
        (408, _) => codes::TIMEOUT_FIRST_BYTE,
        (429, _) => codes::RATE_LIMITED,
        (529, _) => codes::PROVIDER_OVERLOADED,
        (500..=599, Some(code)) if code == codes::PROVIDER_OVERLOADED => code,
        (500..=599, _) => codes::PROVIDER_UNAVAILABLE,
        (400 | 413 | 422, _) => codes::PROVIDER_BAD_REQUEST,
        _ => codes::PROVIDER_ERROR,
    };
    let mut err = AgentError::new(
        code,
        format!("the provider answered HTTP {status}: {provider_message}"),
    )
    .with_field("status", status);
    if let Some(kind) = kind {
        err = err.with_field("provider_code", kind);
    }
    if let Some(limit) = too_long.and_then(|t| t.limit) {
        err = err.with_field("limit", limit);
    }
    if let Some(requested) = too_long.and_then(|t| t.requested) {
        err = err.with_field("requested", requested);
    }
    err
}
