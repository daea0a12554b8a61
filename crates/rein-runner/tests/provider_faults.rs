//! The provider fault matrix: every fault a model server can make, for
//! every wire API, through a whole turn of the library over real HTTP on
//! loopback (`FakeServer`). A refused connection, 429 with and without
//! Retry-After, 500, 529 overloaded, a stream cut before its first event,
//! mid-text, mid-tool-arguments and before its final usage, a stall before
//! and after output, garbage, a 10 MB line, a success that is not an event
//! stream. Each turn must end typed — answered after a retry, or with the
//! fault's own code — within its bounds, with nothing recorded twice and
//! no tool run for a message that never arrived whole.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::sync::Arc;
use std::time::Duration;

use rein_gateway::{ApiKey, HttpProvider, ProviderConfig, RetryPolicy, Timeouts, WireApi};
use rein_runner::{Conversation, Profile, TurnOutcome};
use rein_sessions::{Event, SqliteStore, Store};
use rein_testing::{FakeServer, FakeToolBackend, Reply, ScriptedCall, ScriptedMessage};
use rein_wire::error::codes;
use serde_json::json;

const APIS: [WireApi; 3] = [
    WireApi::AnthropicMessages,
    WireApi::OpenAiChat,
    WireApi::OpenAiResponses,
];

/// How a faulted turn must end.
#[derive(Debug, Clone, PartialEq)]
enum Ends {
    /// Answered, after this many requests in all.
    Answered(usize),
    /// With this code, after this many requests.
    Fails(String, usize),
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
    ScriptedMessage::text(&["Reading. "]).with_call(ScriptedCall::new(
        "call_1",
        "read_file",
        json!({"path": "a.rs", "note": "long enough to be cut in the middle"}),
        4,
    ))
}

/// The server's replies for `fault` in `api`, and how the turn must end.
fn fault(name: &str, api: WireApi) -> (Vec<Reply>, Ends) {
    let good = body(api, &answer());
    let overloaded = match api {
        WireApi::AnthropicMessages => {
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
        }
        _ => r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
    };
    match name {
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
            let at = good.find("second part").unwrap() - 5;
            (
                vec![Reply::sse(good[..at].to_owned()).cut()],
                Ends::Fails(codes::STREAM_TRUNCATED.as_str().into(), 1),
            )
        }
        "cut mid-tool-arguments" => {
            let called = body(api, &with_call());
            let at = called.find("the middle").unwrap();
            (
                vec![Reply::sse(called[..at].to_owned()).cut()],
                Ends::Fails(codes::STREAM_TRUNCATED.as_str().into(), 1),
            )
        }
        "cut before the final usage" => {
            // Everything up to the last event, then the connection goes.
            let trimmed = good.trim_end_matches('\n');
            let at = trimmed.rfind("\n\n").unwrap() + 2;
            (
                vec![Reply::sse(good[..at].to_owned()).cut()],
                Ends::Fails(codes::STREAM_TRUNCATED.as_str().into(), 1),
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
            let at = good.find("second part").unwrap();
            let at = good[..at].rfind("\n\n").unwrap() + 2;
            let reply = Reply::sse_chunks(vec![good[..at].to_owned(), good[at..].to_owned()])
                .delay_before(1, Duration::from_secs(5));
            (
                vec![reply],
                Ends::Fails(codes::TIMEOUT_IDLE.as_str().into(), 1),
            )
        }
        "garbage JSON" => (
            vec![Reply::sse("data: {not json at all\n\n")],
            Ends::Fails(codes::STREAM_MALFORMED.as_str().into(), 1),
        ),
        "garbage bytes" => (
            vec![Reply::sse(
                String::from_utf8_lossy(&[0xff, 0x00, 0xfe, b'\n', b'\n']).into_owned(),
            )],
            Ends::Fails(codes::STREAM_NOT_SSE.as_str().into(), 1),
        ),
        "a 10 MB line" => (
            vec![Reply::sse_split(
                &format!("data: {{\"x\":\"{}\"}}\n\n", "a".repeat(10 << 20)),
                64 * 1024,
            )],
            Ends::Fails(codes::STREAM_LINE_TOO_LONG.as_str().into(), 1),
        ),
        "not an event stream" => {
            let mut reply = Reply::sse(good);
            reply.headers = vec![("content-type".into(), "application/json".into())];
            (
                vec![reply],
                Ends::Fails(codes::STREAM_NOT_SSE.as_str().into(), 1),
            )
        }
        other => panic!("no fault {other}"),
    }
}

const FAULTS: &[&str] = &[
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

fn config(api: WireApi, base: &str) -> ProviderConfig {
    let base = match api {
        WireApi::AnthropicMessages => base.to_owned(),
        _ => format!("{base}/v1"),
    };
    let mut config = ProviderConfig::new(api)
        .with_base_url(base)
        .with_api_key(ApiKey::new("sk-test-fault-1234"));
    config.offline = Some(false);
    config.retry = RetryPolicy {
        max_retries: 2,
        min_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(5),
    };
    config.timeouts = Timeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_secs(2),
        idle: Duration::from_millis(500),
        total: Duration::from_secs(30),
    };
    config
}

/// One turn against `base` for `api`; its outcome and the log's counts
/// (model answers recorded, turns finished, tools run).
async fn turn(api: WireApi, base: &str) -> (TurnOutcome, usize, usize, u64) {
    let provider = Arc::new(HttpProvider::new(config(api, base)).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let backend = Arc::new(FakeToolBackend::new(&[("a.rs", "fn a() {}")]).unwrap());
    let profile = Profile {
        max_output_tokens: 256,
        ..Profile::new("Helper", "m")
    };
    let mut conv = Conversation::open(store, provider, backend.clone(), profile, None)
        .await
        .unwrap();
    // A hang guard, not a measurement: every bound above is far shorter.
    let outcome = tokio::time::timeout(Duration::from_secs(120), conv.turn("hello"))
        .await
        .expect("the turn ended within its bounds")
        .unwrap();
    let log = conv.log_events().await.unwrap();
    let count = |f: fn(&Event) -> bool| log.iter().filter(|e| f(&e.event)).count();
    (
        outcome,
        count(|e| matches!(e, Event::ModelCompleted { .. })),
        count(|e| matches!(e, Event::TurnFinished { .. })),
        backend.invocations("read_file"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_of_every_api_ends_typed_with_nothing_recorded_twice() {
    let mut broken = Vec::new();
    let mut table = Vec::new();
    for api in APIS {
        for name in FAULTS {
            let (replies, ends) = fault(name, api);
            let server = FakeServer::start(replies).await.unwrap();
            let (outcome, answers, finished, ran) = turn(api, &server.base_url()).await;
            let requests = server.requests().len();
            let got = match &outcome {
                TurnOutcome::Finished { reply } if reply == "first part second part" => {
                    Ends::Answered(requests)
                }
                TurnOutcome::Error { error } => Ends::Fails(error.code.as_str().into(), requests),
                other => panic!("{api} {name}: {other:?}"),
            };
            table.push(format!("{api} | {name} | {got:?}"));
            if got != ends {
                broken.push(format!(
                    "{api} {name}: ended {got:?}, not {ends:?} ({outcome:?})"
                ));
            }
            let wanted_answers = usize::from(matches!(ends, Ends::Answered(_)));
            if answers != wanted_answers || finished != 1 || ran != 0 {
                broken.push(format!(
                    "{api} {name}: {answers} answers recorded, {finished} turns finished, {ran} tools run"
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "{}\n\n{}",
        broken.join("\n"),
        table.join("\n")
    );
}

#[tokio::test]
async fn a_refused_connection_ends_typed_for_every_api() {
    for api in APIS {
        // A port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let (outcome, answers, finished, _) = turn(api, &format!("http://127.0.0.1:{port}")).await;
        match outcome {
            TurnOutcome::Error { error } => {
                assert_eq!(error.code, codes::CONNECT_FAILED, "{api}: {error:?}");
                // Tried again, within the retry bound, then given up.
                assert_eq!(error.detail.unwrap()["attempts"], 3, "{api}");
            }
            other => panic!("{api}: {other:?}"),
        }
        assert_eq!((answers, finished), (0, 1), "{api}");
    }
}
