//! The gateway end to end: `HttpProvider` against `FakeServer` over TCP on
//! loopback, for each wire API, with every injected fault.

use std::time::Duration;

use futures::StreamExt;
use rein_gateway::{
    ApiKey, HttpProvider, Provider, ProviderConfig, RetryPolicy, Timeouts, WireApi,
};
use rein_testing::wire::anthropic_error_event;
use rein_testing::{FakeServer, Reply, ScriptedCall, ScriptedMessage};
use rein_wire::error::codes;
use rein_wire::{
    AgentError, AssembledMessage, Assembler, Message, Request, StopReason, StreamEvent, Usage,
};
use serde_json::json;

const APIS: [WireApi; 3] = [
    WireApi::AnthropicMessages,
    WireApi::OpenAiChat,
    WireApi::OpenAiResponses,
];

fn body_for(api: WireApi, message: &ScriptedMessage) -> String {
    match api {
        WireApi::AnthropicMessages => message.anthropic_sse(),
        WireApi::OpenAiChat => message.openai_chat_sse(),
        WireApi::OpenAiResponses => message.openai_responses_sse(),
    }
}

fn config(api: WireApi, server: &FakeServer) -> ProviderConfig {
    let base = match api {
        WireApi::AnthropicMessages => server.base_url(),
        _ => format!("{}/v1", server.base_url()),
    };
    let mut config = ProviderConfig::new(api)
        .with_base_url(base)
        .with_api_key(ApiKey::new("sk-test-key-1234"));
    config.offline = Some(false);
    config.retry = RetryPolicy {
        max_retries: 3,
        min_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(5),
    };
    config.timeouts = Timeouts {
        connect: Duration::from_secs(5),
        first_byte: Duration::from_secs(10),
        idle: Duration::from_secs(10),
        total: Duration::from_secs(60),
    };
    config
}

fn request() -> Request {
    Request::new("fake-model", vec![Message::user("hello")])
}

/// Everything the stream yielded: the events and the error, if any.
async fn collect(provider: &HttpProvider) -> (Vec<StreamEvent>, Option<AgentError>) {
    let mut stream = provider.stream(request());
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(err) => {
                assert!(stream.next().await.is_none(), "nothing may follow an error");
                return (events, Some(err));
            }
        }
    }
    (events, None)
}

fn assemble(events: &[StreamEvent]) -> AssembledMessage {
    let mut a = Assembler::new();
    for e in events {
        a.push(e);
    }
    a.finish()
}

fn three_calls() -> ScriptedMessage {
    ScriptedMessage::text(&["Let me ", "check ", "three things."])
        .with_call(
            ScriptedCall::to(
                "read_file",
                json!({"path": "src/main.rs", "lines": [1, 2, 3]}),
            )
            .id("call_a")
            .in_fragments(17),
        )
        .with_call(
            ScriptedCall::to(
                "search",
                json!({"query": "naïve \"quoted\" ünïcode ✓", "limit": 10}),
            )
            .id("call_b")
            .in_fragments(23),
        )
        .with_call(ScriptedCall::to("list_dir", json!({})).id("call_c"))
        .with_usage(Usage {
            input: 120,
            output: 45,
            cache_read: 3000,
            cache_write: 512,
            reasoning: 0,
        })
}

#[tokio::test]
async fn each_api_decodes_fragmented_parallel_calls_and_cache_usage_over_tcp() {
    let message = three_calls();
    for api in APIS {
        // Split the body every 7 bytes: JSON, UTF-8 and line ends all cut.
        let server = FakeServer::start(vec![Reply::sse_split(&body_for(api, &message), 7)])
            .await
            .unwrap();
        let provider = HttpProvider::new(config(api, &server)).unwrap();
        let (events, err) = collect(&provider).await;
        assert!(err.is_none(), "{api}: {err:?}");
        let is_fragment = |e: &&StreamEvent| matches!(e, StreamEvent::ToolCallDelta { .. });
        let sent_fragments = message.events().iter().filter(is_fragment).count();
        assert!(sent_fragments > 20);
        assert_eq!(
            events.iter().filter(is_fragment).count(),
            sent_fragments,
            "{api}"
        );
        let m = assemble(&events);
        assert_eq!(m.text(), "Let me check three things.", "{api}");
        assert_eq!(m.tool_calls.len(), 3, "{api}");
        assert_eq!(
            m.tool_calls[0].arguments,
            Some(json!({"path": "src/main.rs", "lines": [1, 2, 3]})),
            "{api}"
        );
        assert_eq!(
            m.tool_calls[1].arguments,
            Some(json!({"query": "naïve \"quoted\" ünïcode ✓", "limit": 10})),
            "{api}"
        );
        assert_eq!(m.tool_calls[2].arguments, Some(json!({})), "{api}");
        assert_eq!(
            m.tool_calls
                .iter()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>(),
            ["call_a", "call_b", "call_c"],
            "{api}"
        );
        assert_eq!(m.stop_reason, Some(StopReason::ToolUse), "{api}");
        let usage = m.usage.unwrap();
        assert_eq!(
            (usage.input, usage.output, usage.cache_read),
            (120, 45, 3000),
            "{api}"
        );
        // Responses reports no cache writes; the others do.
        let expected_write = if api == WireApi::OpenAiResponses {
            0
        } else {
            512
        };
        assert_eq!(usage.cache_write, expected_write, "{api}");

        // What was sent: one POST to the API's path with the key in its header.
        let sent = server.requests();
        assert_eq!(sent.len(), 1);
        let path = match api {
            WireApi::AnthropicMessages => "/v1/messages",
            WireApi::OpenAiChat => "/v1/chat/completions",
            WireApi::OpenAiResponses => "/v1/responses",
        };
        assert_eq!(sent[0].path, path);
        assert_eq!(sent[0].json()["stream"], true);
        let key_header = match api {
            WireApi::AnthropicMessages => sent[0].header("x-api-key").map(str::to_owned),
            _ => sent[0].header("authorization").map(str::to_owned),
        };
        assert!(key_header.unwrap().ends_with("sk-test-key-1234"));
    }
}

#[tokio::test]
async fn anthropic_cache_control_lands_where_breakpoints_say() {
    let server = FakeServer::start(vec![Reply::sse(
        ScriptedMessage::text(&["ok"]).anthropic_sse(),
    )])
    .await
    .unwrap();
    let provider = HttpProvider::new(config(WireApi::AnthropicMessages, &server)).unwrap();
    let mut req = Request::new(
        "claude-x",
        vec![
            Message::user("one"),
            Message::assistant("two"),
            Message::user("three"),
        ],
    );
    req.system = vec![
        rein_wire::SystemBlock {
            text: "sys A".into(),
        },
        rein_wire::SystemBlock {
            text: "sys B".into(),
        },
    ];
    req.tools = vec![rein_wire::ToolSpec {
        name: "t".into(),
        description: "d".into(),
        input_schema: json!({"type": "object"}),
        strict: false,
    }];
    use rein_wire::{CacheBreakpoint, CacheTarget};
    req.cache_breakpoints = [
        CacheTarget::Tools,
        CacheTarget::System { index: 1 },
        CacheTarget::Message { index: 2 },
    ]
    .into_iter()
    .map(|target| CacheBreakpoint { target })
    .collect();
    let mut stream = provider.stream(req);
    while let Some(item) = stream.next().await {
        item.unwrap();
    }
    let body = server.requests()[0].json();
    assert_eq!(body["tools"][0]["cache_control"]["type"], "ephemeral");
    assert!(body["system"][0].get("cache_control").is_none());
    assert_eq!(body["system"][1]["cache_control"]["type"], "ephemeral");
    assert!(
        body["messages"][0]["content"][0]
            .get("cache_control")
            .is_none()
    );
    assert_eq!(
        body["messages"][2]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
    assert_eq!(
        server.requests()[0].header("anthropic-version"),
        Some("2023-06-01")
    );
}

#[tokio::test]
async fn http_429_with_retry_after_is_waited_for_then_succeeds() {
    let ok = ScriptedMessage::text(&["fine"]);
    for api in APIS {
        let server = FakeServer::start(vec![
            Reply::status(
                429,
                r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#,
            )
            .header("retry-after", "1"),
            Reply::sse(body_for(api, &ok)),
        ])
        .await
        .unwrap();
        let provider = HttpProvider::new(config(api, &server)).unwrap();
        let (events, err) = collect(&provider).await;
        assert!(err.is_none(), "{api}: {err:?}");
        assert_eq!(assemble(&events).text(), "fine");
        let sent = server.requests();
        assert_eq!(sent.len(), 2);
        // The second attempt waited for Retry-After (1 s), not the 1-5 ms backoff.
        let gap = sent[1].received_at - sent[0].received_at;
        assert!(
            gap >= Duration::from_millis(950),
            "{api}: retried after {gap:?}"
        );
    }
}

#[tokio::test]
async fn retry_after_beyond_the_bound_is_not_waited_for() {
    let server = FakeServer::start(vec![
        Reply::status(
            429,
            r#"{"error":{"message":"come back in an hour","type":"rate_limit_error"}}"#,
        )
        .header("retry-after", "3600"),
    ])
    .await
    .unwrap();
    let provider = HttpProvider::new(config(WireApi::OpenAiChat, &server)).unwrap();
    let (_, err) = collect(&provider).await;
    let err = err.unwrap();
    assert_eq!(err.code, codes::RATE_LIMITED);
    assert_eq!(err.detail.as_ref().unwrap()["retry_after_s"], 3600.0);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    let ok = ScriptedMessage::text(&["recovered"]);
    for api in APIS {
        let server = FakeServer::start(vec![
            Reply::status(500, r#"{"error":{"message":"boom","type":"server_error"}}"#),
            Reply::status(503, "upstream unavailable"),
            Reply::status(
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ),
            Reply::sse(body_for(api, &ok)),
        ])
        .await
        .unwrap();
        let provider = HttpProvider::new(config(api, &server)).unwrap();
        let (events, err) = collect(&provider).await;
        assert!(err.is_none(), "{api}: {err:?}");
        assert_eq!(assemble(&events).text(), "recovered");
        assert_eq!(server.requests().len(), 4);
    }
}

#[tokio::test]
async fn retries_are_bounded_and_the_last_error_says_how_many() {
    let server = FakeServer::start(vec![
        Reply::status(503, "a"),
        Reply::status(503, "b"),
        Reply::status(503, "c"),
        Reply::status(503, "d"),
        Reply::status(503, "e"),
    ])
    .await
    .unwrap();
    let provider = HttpProvider::new(config(WireApi::OpenAiChat, &server)).unwrap();
    let (events, err) = collect(&provider).await;
    assert!(events.is_empty());
    let err = err.unwrap();
    assert_eq!(err.code, codes::PROVIDER_UNAVAILABLE);
    assert_eq!(err.detail.as_ref().unwrap()["attempts"], 4);
    assert_eq!(err.detail.as_ref().unwrap()["status"], 503);
    assert_eq!(server.requests().len(), 4, "one attempt and three retries");
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    for (status, code) in [
        (400, codes::PROVIDER_BAD_REQUEST),
        (401, codes::PROVIDER_AUTH),
        (404, codes::PROVIDER_NOT_FOUND),
    ] {
        let server = FakeServer::start(vec![Reply::status(
            status,
            r#"{"error":{"message":"no","type":"invalid_request_error"}}"#,
        )])
        .await
        .unwrap();
        let provider = HttpProvider::new(config(WireApi::AnthropicMessages, &server)).unwrap();
        let (_, err) = collect(&provider).await;
        let err = err.unwrap();
        assert_eq!(err.code, code);
        assert!(!err.retryable);
        assert!(err.message.contains("no"), "{}", err.message);
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn overloaded_as_first_event_is_retried() {
    let server = FakeServer::start(vec![
        Reply::sse(anthropic_error_event("overloaded_error", "Overloaded")),
        Reply::sse(ScriptedMessage::text(&["second try"]).anthropic_sse()),
    ])
    .await
    .unwrap();
    let provider = HttpProvider::new(config(WireApi::AnthropicMessages, &server)).unwrap();
    let (events, err) = collect(&provider).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(assemble(&events).text(), "second try");
    // Only one message start reached the caller: the failed attempt's
    // metadata was held back.
    let starts = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::MessageStart { .. }))
        .count();
    assert_eq!(starts, 1);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn overloaded_after_message_start_but_before_output_is_retried() {
    let body = ScriptedMessage::text(&["x"]).anthropic_sse();
    let start: String = body.split("\n\n").take(1).collect::<Vec<_>>().join("") + "\n\n";
    let server = FakeServer::start(vec![
        Reply::sse(start + &anthropic_error_event("overloaded_error", "Overloaded")),
        Reply::sse(ScriptedMessage::text(&["ok"]).anthropic_sse()),
    ])
    .await
    .unwrap();
    let provider = HttpProvider::new(config(WireApi::AnthropicMessages, &server)).unwrap();
    let (events, err) = collect(&provider).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(assemble(&events).text(), "ok");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn overloaded_mid_stream_after_output_is_not_retried() {
    let body = ScriptedMessage::text(&["Hello", " world"]).anthropic_sse();
    // Keep everything up to and including the first text delta.
    let upto = body.find("content_block_delta").unwrap();
    let end = upto + body[upto..].find("\n\n").unwrap() + 2;
    let partial = body[..end].to_owned() + &anthropic_error_event("overloaded_error", "Overloaded");
    let server = FakeServer::start(vec![Reply::sse(partial), Reply::sse(body)])
        .await
        .unwrap();
    let provider = HttpProvider::new(config(WireApi::AnthropicMessages, &server)).unwrap();
    let (events, err) = collect(&provider).await;
    let err = err.unwrap();
    assert_eq!(err.code, codes::PROVIDER_OVERLOADED);
    assert!(!err.retryable);
    assert_eq!(err.detail.as_ref().unwrap()["output_delivered"], true);
    assert!(err.message.contains("not retried"));
    assert_eq!(assemble(&events).text(), "Hello");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn openai_error_inside_a_200_stream_is_typed() {
    let server = FakeServer::start(vec![Reply::sse(
        "data: {\"error\":{\"message\":\"bad things\",\"type\":\"invalid_request_error\",\"code\":null}}\n\ndata: [DONE]\n\n",
    )])
    .await
    .unwrap();
    let provider = HttpProvider::new(config(WireApi::OpenAiChat, &server)).unwrap();
    let (_, err) = collect(&provider).await;
    let err = err.unwrap();
    assert_eq!(err.code, codes::PROVIDER_BAD_REQUEST);
    assert_eq!(err.message, "bad things");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_connection_cut_before_output_is_retried() {
    for api in APIS {
        let body = body_for(api, &ScriptedMessage::text(&["whole"]));
        // Cut inside the first event: nothing has reached the caller.
        let server = FakeServer::start(vec![
            Reply::sse(body[..30].to_owned()).cut(),
            Reply::sse(body),
        ])
        .await
        .unwrap();
        let provider = HttpProvider::new(config(api, &server)).unwrap();
        let (events, err) = collect(&provider).await;
        assert!(err.is_none(), "{api}: {err:?}");
        assert_eq!(assemble(&events).text(), "whole");
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn a_connection_cut_mid_chunk_after_output_is_a_typed_error() {
    for api in APIS {
        let body = body_for(api, &ScriptedMessage::text(&["first part ", "second part"]));
        let cut_at = body.find("second part").unwrap() - 5;
        let server = FakeServer::start(vec![Reply::sse(body[..cut_at].to_owned()).cut()])
            .await
            .unwrap();
        let provider = HttpProvider::new(config(api, &server)).unwrap();
        let (events, err) = collect(&provider).await;
        let err = err.unwrap();
        assert_eq!(err.code, codes::STREAM_TRUNCATED, "{api}: {err:?}");
        assert_eq!(err.detail.as_ref().unwrap()["output_delivered"], true);
        assert_eq!(assemble(&events).text(), "first part ");
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn a_clean_end_without_the_terminal_event_is_truncated_and_retried_if_nothing_was_delivered()
{
    for api in APIS {
        let body = body_for(api, &ScriptedMessage::text(&["done"]));
        // Only the first event, then a clean end of body.
        let first = body.split("\n\n").next().unwrap().to_owned() + "\n\n";
        let server = FakeServer::start(vec![Reply::sse(first.clone()), Reply::sse(first)])
            .await
            .unwrap();
        let mut cfg = config(api, &server);
        cfg.retry.max_retries = 1;
        let provider = HttpProvider::new(cfg).unwrap();
        let (_, err) = collect(&provider).await;
        let err = err.unwrap();
        assert_eq!(err.code, codes::STREAM_TRUNCATED, "{api}");
        assert_eq!(server.requests().len(), 2, "{api}: retried once");
    }
}

#[tokio::test]
async fn a_chunk_slower_than_the_idle_timeout_ends_in_timeout_idle() {
    let body = ScriptedMessage::text(&["a", "b"]).openai_chat_sse();
    let after_a = body.find("\"content\":\"a\"").unwrap();
    let pos = after_a + body[after_a..].find("\n\n").unwrap() + 2;
    let reply = Reply::sse_chunks(vec![body[..pos].to_owned(), body[pos..].to_owned()])
        .delay_before(1, Duration::from_secs(5));
    let server = FakeServer::start(vec![reply.clone(), reply]).await.unwrap();
    let mut cfg = config(WireApi::OpenAiChat, &server);
    cfg.timeouts.idle = Duration::from_millis(300);
    cfg.retry.max_retries = 1;
    let provider = HttpProvider::new(cfg).unwrap();
    let (_, err) = collect(&provider).await;
    let err = err.unwrap();
    assert_eq!(err.code, codes::TIMEOUT_IDLE, "{err:?}");
    // The stall came after "a" reached the caller, so no retry.
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stall_before_any_output_is_retried() {
    let body = ScriptedMessage::text(&["late"]).openai_chat_sse();
    let stalled = Reply::sse_split(&body, 10_000).delay_before(0, Duration::from_secs(5));
    let server = FakeServer::start(vec![stalled, Reply::sse(body)])
        .await
        .unwrap();
    let mut cfg = config(WireApi::OpenAiChat, &server);
    cfg.timeouts.idle = Duration::from_millis(300);
    let provider = HttpProvider::new(cfg).unwrap();
    let (events, err) = collect(&provider).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(assemble(&events).text(), "late");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn an_oversized_line_is_refused() {
    let huge = format!("data: {{\"x\":\"{}\"}}\n\n", "a".repeat(200_000));
    let server = FakeServer::start(vec![Reply::sse_split(&huge, 8192)])
        .await
        .unwrap();
    let mut cfg = config(WireApi::OpenAiChat, &server);
    cfg.sse.max_line_bytes = 64 * 1024;
    let provider = HttpProvider::new(cfg).unwrap();
    let (_, err) = collect(&provider).await;
    let err = err.unwrap();
    assert_eq!(err.code, codes::STREAM_LINE_TOO_LONG);
    assert_eq!(
        server.requests().len(),
        1,
        "not retried: the same server would send it again"
    );
}

#[tokio::test]
async fn non_json_data_is_stream_malformed() {
    for api in APIS {
        let server = FakeServer::start(vec![Reply::sse("data: {not json at all\n\n")])
            .await
            .unwrap();
        let provider = HttpProvider::new(config(api, &server)).unwrap();
        let (_, err) = collect(&provider).await;
        let err = err.unwrap();
        assert_eq!(err.code, codes::STREAM_MALFORMED, "{api}");
        assert!(!err.retryable);
    }
}

#[tokio::test]
async fn malformed_tool_arguments_are_a_clear_error_on_the_call() {
    let message = ScriptedMessage::text(&[]).with_call(ScriptedCall {
        id: "c1".into(),
        name: "write".into(),
        arguments: "{\"path\": \"a.txt\", ".into(),
        fragments: 3,
    });
    for api in APIS {
        let server = FakeServer::start(vec![Reply::sse(body_for(api, &message))])
            .await
            .unwrap();
        let provider = HttpProvider::new(config(api, &server)).unwrap();
        let (events, err) = collect(&provider).await;
        assert!(err.is_none(), "{api}: the stream itself is fine");
        let m = assemble(&events);
        let call_err = m.tool_calls[0].error.as_ref().unwrap();
        assert_eq!(call_err.code, codes::TOOL_ARGUMENTS_MALFORMED, "{api}");
        assert!(call_err.message.contains("write"));
    }
}

#[tokio::test]
async fn dropping_the_stream_cancels_the_request() {
    let body = ScriptedMessage::text(&["one", "two"]).anthropic_sse();
    let reply = Reply::sse_split(&body, 200).delay_before(4, Duration::from_secs(600));
    let server = FakeServer::start(vec![reply]).await.unwrap();
    let provider = HttpProvider::new(config(WireApi::AnthropicMessages, &server)).unwrap();
    let mut stream = provider.stream(request());
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(
        first,
        StreamEvent::MessageStart { .. } | StreamEvent::TextDelta { .. }
    ));
    drop(stream);
    // The server sees its response body dropped: the connection was closed
    // long before the 600 s pause would have ended.
    tokio::time::timeout(Duration::from_secs(30), server.bodies_ended(1))
        .await
        .expect("the server's response was not cancelled");
}

#[tokio::test]
async fn retry_after_as_an_http_date_is_honoured_and_capped() {
    // An hour ahead: beyond the bound, so not waited for — and read as
    // about 3,600 s, not ignored.
    let later = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(3600));
    let server = FakeServer::start(vec![
        Reply::status(
            429,
            r#"{"error":{"message":"later","type":"rate_limit_error"}}"#,
        )
        .header("retry-after", &later),
    ])
    .await
    .unwrap();
    let provider = HttpProvider::new(config(WireApi::OpenAiChat, &server)).unwrap();
    let (_, err) = collect(&provider).await;
    let err = err.unwrap();
    assert_eq!(err.code, codes::RATE_LIMITED);
    let waited = err.detail.as_ref().unwrap()["retry_after_s"]
        .as_f64()
        .unwrap();
    assert!((3500.0..=3601.0).contains(&waited), "{waited}");
    assert_eq!(server.requests().len(), 1);
    // A date already past means "now": retried, and it succeeds.
    let past = httpdate::fmt_http_date(std::time::SystemTime::now() - Duration::from_secs(60));
    let server = FakeServer::start(vec![
        Reply::status(503, "busy").header("retry-after", &past),
        Reply::sse(body_for(
            WireApi::OpenAiChat,
            &ScriptedMessage::text(&["ok"]),
        )),
    ])
    .await
    .unwrap();
    let provider = HttpProvider::new(config(WireApi::OpenAiChat, &server)).unwrap();
    let (events, err) = collect(&provider).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(assemble(&events).text(), "ok");
}

#[tokio::test]
async fn a_success_that_is_not_an_event_stream_is_its_own_error_and_not_retried() {
    let not_streams = [
        Reply::status(200, "<!DOCTYPE html><html><body>Sign in</body></html>")
            .header("content-type", "text/html; charset=utf-8"),
        // Declared as SSE, but random bytes.
        Reply::sse(
            String::from_utf8_lossy(&[0x9c, 0x00, 0x13, 0xfe, 0x41, 0x0a, 0x42]).into_owned(),
        ),
        Reply::sse("<html><body>proxy error</body></html>\n"),
        Reply::sse("{\"id\":\"x\",\"object\":\"chat.completion\"}"),
    ];
    for reply in not_streams {
        for api in APIS {
            let mut reply = reply.clone();
            // `Reply::status` adds a JSON content type first; keep the last.
            if reply.headers.len() > 1 {
                reply.headers.remove(0);
            }
            let server = FakeServer::start(vec![reply.clone(), reply]).await.unwrap();
            let provider = HttpProvider::new(config(api, &server)).unwrap();
            let (events, err) = collect(&provider).await;
            let err = err.unwrap();
            assert_eq!(err.code, codes::STREAM_NOT_SSE, "{api}: {err:?}");
            assert!(!err.retryable, "{api}");
            assert!(events.is_empty(), "{api}");
            assert_eq!(server.requests().len(), 1, "{api}: not retried");
        }
    }
}

#[tokio::test]
async fn an_openai_base_url_works_with_or_without_its_version_path() {
    for suffix in ["", "/", "/v1"] {
        let server = FakeServer::start(vec![Reply::sse(
            ScriptedMessage::text(&["hi"]).openai_chat_sse(),
        )])
        .await
        .unwrap();
        let mut cfg = config(WireApi::OpenAiChat, &server);
        cfg.base_url = format!("{}{suffix}", server.base_url());
        let provider = HttpProvider::new(cfg).unwrap();
        let (events, err) = collect(&provider).await;
        assert!(err.is_none(), "{suffix:?}: {err:?}");
        assert_eq!(assemble(&events).text(), "hi");
        assert_eq!(
            server.requests()[0].path,
            "/v1/chat/completions",
            "{suffix:?}"
        );
    }
}
