//! The provider fault matrix's faults: what a model server replies for
//! each fault a server can make, in each wire API, and how a turn must end
//! — shared by the library's matrix (`rein-runner/tests/provider_faults.rs`)
//! and the same through the `rein` binary (`rein-cli`).
//!
//! HTTP/2 resets are their own list (`H2_FAULTS`, `h2_fault`): they need
//! the TLS stand-in, `FakeH2Server`.
//!
//! Not here: a refused connection (no server at all), the servers
//! themselves (`fake_server`, `fake_h2`).

use std::time::Duration;

use rein_gateway::WireApi;
use rein_wire::error::codes;
use serde_json::json;

use crate::{FakeServer, H2Reply, Reason, Reply, ScriptedCall, ScriptedMessage};

/// The wire APIs the matrix covers.
pub const APIS: [WireApi; 3] = [
    WireApi::AnthropicMessages,
    WireApi::OpenAiChat,
    WireApi::OpenAiResponses,
];

/// What the scripted answer says, whole.
pub const ANSWER: &str = "first part second part";

/// How a faulted turn must end.
#[derive(Debug, Clone, PartialEq)]
pub enum Ends {
    /// Answered, after this many requests in all.
    Answered(usize),
    /// With this code, after this many requests.
    Fails(rein_wire::ErrorCode, usize),
}

fn body(api: WireApi, message: &ScriptedMessage) -> String {
    match api {
        WireApi::AnthropicMessages => message.anthropic_sse(),
        WireApi::OpenAiChat => message.openai_chat_sse(),
        WireApi::OpenAiResponses => message.openai_responses_sse(),
    }
}

fn answer() -> ScriptedMessage {
    ScriptedMessage::text(&["first part ", "second part"])
}

fn with_call() -> ScriptedMessage {
    ScriptedMessage::text(&["Reading. "]).with_call(
        ScriptedCall::to(
            "read_file",
            json!({"path": "a.rs", "note": "long enough to be cut in the middle"}),
        )
        .id("call_1")
        .in_fragments(4),
    )
}

/// The server's replies for the fault named `name` in `api`, and how the
/// turn must end (`None`: no such fault).
pub fn fault(name: &str, api: WireApi) -> Option<(Vec<Reply>, Ends)> {
    let good = body(api, &answer());
    let overloaded = match api {
        WireApi::AnthropicMessages => {
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
        }
        _ => r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
    };
    Some(match name {
        "429 with Retry-After" => (
            vec![
                Reply::status(429, r#"{"error":{"message":"slow down"}}"#)
                    .header("retry-after", "1"),
                Reply::sse(good),
            ],
            Ends::Answered(2),
        ),
        "429 without Retry-After" => (
            vec![
                Reply::status(429, r#"{"error":{"message":"slow down"}}"#),
                Reply::sse(good),
            ],
            Ends::Answered(2),
        ),
        "500" => (
            vec![Reply::status(500, "oops"), Reply::sse(good)],
            Ends::Answered(2),
        ),
        "529 overloaded" => (
            vec![Reply::status(529, overloaded), Reply::sse(good)],
            Ends::Answered(2),
        ),
        "cut before the first event" => (
            vec![Reply::sse(good[..20].to_owned()).cut(), Reply::sse(good)],
            Ends::Answered(2),
        ),
        "cut mid-text" => {
            let at = find(&good, "second part").saturating_sub(5);
            (
                vec![Reply::sse(good[..at].to_owned()).cut()],
                Ends::Fails(codes::STREAM_TRUNCATED, 1),
            )
        }
        "cut mid-tool-arguments" => {
            let called = body(api, &with_call());
            let at = find(&called, "the middle");
            (
                vec![Reply::sse(called[..at].to_owned()).cut()],
                Ends::Fails(codes::STREAM_TRUNCATED, 1),
            )
        }
        "cut before the final usage" => {
            // Everything up to the last event, then the connection goes.
            let trimmed = good.trim_end_matches('\n');
            let at = trimmed.rfind("\n\n").map_or(good.len(), |at| at + 2);
            (
                vec![Reply::sse(good[..at].to_owned()).cut()],
                Ends::Fails(codes::STREAM_TRUNCATED, 1),
            )
        }
        "stall before output" => (
            vec![
                Reply::sse(good.clone()).delay_before(0, Duration::from_secs(5)),
                Reply::sse(good),
            ],
            Ends::Answered(2),
        ),
        "stall after output" => {
            let at = find(&good, "second part");
            let at = good[..at].rfind("\n\n").map_or(at, |at| at + 2);
            let reply = Reply::sse_chunks(vec![good[..at].to_owned(), good[at..].to_owned()])
                .delay_before(1, Duration::from_secs(5));
            (vec![reply], Ends::Fails(codes::TIMEOUT_IDLE, 1))
        }
        "garbage JSON" => (
            vec![Reply::sse("data: {not json at all\n\n")],
            Ends::Fails(codes::STREAM_MALFORMED, 1),
        ),
        "garbage bytes" => (
            vec![Reply::sse(
                String::from_utf8_lossy(&[0xff, 0x00, 0xfe, b'\n', b'\n']).into_owned(),
            )],
            Ends::Fails(codes::STREAM_NOT_SSE, 1),
        ),
        "a 10 MB line" => (
            vec![Reply::sse_split(
                &format!("data: {{\"x\":\"{}\"}}\n\n", "a".repeat(10 << 20)),
                64 * 1024,
            )],
            Ends::Fails(codes::STREAM_LINE_TOO_LONG, 1),
        ),
        "not an event stream" => {
            let mut reply = Reply::sse(good);
            reply.headers = vec![("content-type".into(), "application/json".into())];
            (vec![reply], Ends::Fails(codes::STREAM_NOT_SSE, 1))
        }
        _ => return None,
    })
}

/// Where `pattern` starts in `text` — the end when it is not there, so a
/// fault cut there is no fault and the matrix says so.
fn find(text: &str, pattern: &str) -> usize {
    text.find(pattern).unwrap_or(text.len())
}

/// Every fault a server makes, by name (`fault` gives each).
pub const FAULTS: &[&str] = &[
    "429 with Retry-After",
    "429 without Retry-After",
    "500",
    "529 overloaded",
    "cut before the first event",
    "cut mid-text",
    "cut mid-tool-arguments",
    "cut before the final usage",
    "stall before output",
    "stall after output",
    "garbage JSON",
    "garbage bytes",
    "a 10 MB line",
    "not an event stream",
];

/// The faults that take a stall: their bound is the idle timeout, which the
/// library's matrix sets short.
pub const STALLS: &[&str] = &["stall before output", "stall after output"];

/// The server's base URL for `api` as a provider config names it.
pub fn base_for(api: WireApi, server: &FakeServer) -> String {
    base_at(api, &server.base_url())
}

/// The base URL for `api` of a server at `url`.
pub fn base_at(api: WireApi, url: &str) -> String {
    match api {
        WireApi::AnthropicMessages => url.to_owned(),
        _ => format!("{url}/v1"),
    }
}

/// Every HTTP/2 reset the matrix makes, by name (`h2_fault` gives each).
pub const H2_FAULTS: &[&str] = &[
    "reset before headers (refused stream)",
    "reset before headers (internal error)",
    "reset mid-text",
    "reset mid-tool-arguments",
    "reset before the final usage",
];

/// The HTTP/2 server's replies for the reset named `name` in `api`, and
/// how the turn must end (`None`: no such fault). A stream refused or
/// reset before any output is tried again; one reset after output reached
/// the caller ends `stream_truncated`, and a half-made call never runs.
pub fn h2_fault(name: &str, api: WireApi) -> Option<(Vec<H2Reply>, Ends)> {
    let good = body(api, &answer());
    let reset_at = |text: &str, at: usize, reason: Reason| H2Reply::Reset {
        sent: Some(text[..at].to_owned()),
        reason,
    };
    let truncated = || Ends::Fails(codes::STREAM_TRUNCATED, 1);
    Some(match name {
        "reset before headers (refused stream)" => (
            vec![
                H2Reply::Reset {
                    sent: None,
                    reason: Reason::REFUSED_STREAM,
                },
                H2Reply::Sse(good),
            ],
            Ends::Answered(2),
        ),
        "reset before headers (internal error)" => (
            vec![
                H2Reply::Reset {
                    sent: None,
                    reason: Reason::INTERNAL_ERROR,
                },
                H2Reply::Sse(good),
            ],
            Ends::Answered(2),
        ),
        "reset mid-text" => {
            let at = find(&good, "second part").saturating_sub(5);
            (
                vec![reset_at(&good, at, Reason::INTERNAL_ERROR)],
                truncated(),
            )
        }
        "reset mid-tool-arguments" => {
            let called = body(api, &with_call());
            let at = find(&called, "the middle");
            (vec![reset_at(&called, at, Reason::CANCEL)], truncated())
        }
        "reset before the final usage" => {
            let trimmed = good.trim_end_matches('\n');
            let at = trimmed.rfind("\n\n").map_or(good.len(), |at| at + 2);
            (
                vec![reset_at(&good, at, Reason::INTERNAL_ERROR)],
                truncated(),
            )
        }
        _ => return None,
    })
}
