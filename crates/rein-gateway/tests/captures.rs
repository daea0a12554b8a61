//! Every real capture in `../shared/fixtures/wire/{anthropic-messages,
//! openai-chat,openai-responses}` goes through the decoder: whole and split
//! into 3-byte chunks (with identical results), never panicking, with tool
//! calls, usage and errors right where the capture shows them.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::path::PathBuf;

use rein_gateway::WireApi;
use rein_wire::{AssembledMessage, Assembler, StopReason, StreamEvent};
use serde_json::json;

fn assemble(events: &[StreamEvent]) -> AssembledMessage {
    let mut a = Assembler::new();
    for e in events {
        a.push(e);
    }
    a.finish()
}

fn files(dir: &std::path::Path, folder: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(folder))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sse"))
        .collect();
    files.sort();
    files
}

/// The outcome of a capture: the assembled message and the code of the
/// first problem (stream error, provider error or malformed call).
fn outcome(api: WireApi, path: &std::path::Path) -> (AssembledMessage, Option<String>) {
    let body = std::fs::read(path).unwrap();
    let (whole, whole_err) = rein_testing::fixtures::decode_chunked(api, &body, body.len().max(1));
    let (split, split_err) = rein_testing::fixtures::decode_chunked(api, &body, 3);
    assert_eq!(
        whole,
        split,
        "{}: chunking changed the events",
        path.display()
    );
    assert_eq!(
        whole_err.as_ref().map(|e| &e.code),
        split_err.as_ref().map(|e| &e.code),
        "{}",
        path.display()
    );
    let message = assemble(&whole);
    let problem = whole_err
        .map(|e| e.code.to_string())
        .or_else(|| message.first_error().map(|e| e.code.to_string()));
    (message, problem)
}

#[test]
fn every_capture_decodes_identically_whole_and_split_without_panic() {
    let Some(dir) = rein_testing::fixtures::wire_dir() else {
        return;
    };
    let mut seen = 0;
    for (folder, api) in [
        ("anthropic-messages", WireApi::AnthropicMessages),
        ("openai-chat", WireApi::OpenAiChat),
        ("openai-responses", WireApi::OpenAiResponses),
    ] {
        for path in files(&dir, folder) {
            let (message, problem) = outcome(api, &path);
            // Whatever happened is either a clean message or a coded error.
            if problem.is_none() {
                assert!(
                    message.stop_reason.is_some(),
                    "{}: no stop reason",
                    path.display()
                );
            }
            seen += 1;
        }
    }
    assert!(seen >= 50, "only {seen} captures found");
}

struct Expect {
    file: &'static str,
    text_starts: &'static str,
    calls: serde_json::Value,
    usage: Option<(u64, u64, u64, u64)>,
    stop: Option<StopReason>,
    problem: Option<&'static str>,
}

fn check(dir: &std::path::Path, folder: &str, api: WireApi, expect: &[Expect]) {
    for e in expect {
        let path = dir.join(folder).join(e.file);
        let (m, problem) = outcome(api, &path);
        assert!(
            m.text().starts_with(e.text_starts),
            "{}: text {:?}",
            e.file,
            m.text()
        );
        let calls: Vec<serde_json::Value> = m
            .tool_calls
            .iter()
            .map(|c| json!({"name": c.name, "arguments": c.arguments}))
            .collect();
        assert_eq!(serde_json::Value::Array(calls), e.calls, "{}", e.file);
        let usage = m
            .usage
            .map(|u| (u.input, u.output, u.cache_read, u.cache_write));
        assert_eq!(usage, e.usage, "{}", e.file);
        assert_eq!(m.stop_reason, e.stop, "{}", e.file);
        assert_eq!(problem.as_deref(), e.problem, "{}", e.file);
    }
}

#[test]
fn anthropic_captures_mean_what_they_show() {
    let Some(dir) = rein_testing::fixtures::wire_dir() else {
        return;
    };
    check(
        &dir,
        "anthropic-messages",
        WireApi::AnthropicMessages,
        &[
            Expect {
                file: "anthropic-sdk-python__text-then-tool-use.sse",
                text_starts: "I'll check the current weather in Paris",
                calls: json!([{"name": "get_weather", "arguments": {"location": "Paris"}}]),
                usage: Some((377, 65, 0, 0)),
                stop: Some(StopReason::ToolUse),
                problem: None,
            },
            Expect {
                file: "vercel-ai__tool-use-no-args.sse",
                text_starts: "I'll update the issue list",
                calls: json!([{"name": "updateIssueList", "arguments": {}}]),
                usage: Some((565, 48, 0, 0)),
                stop: Some(StopReason::ToolUse),
                problem: None,
            },
            Expect {
                file: "vercel-ai__server-tool-code-execution-cache-write.sse",
                text_starts: "The sum of the squares",
                calls: json!([]),
                usage: Some((6, 198, 6289, 3337)),
                stop: Some(StopReason::EndTurn),
                problem: None,
            },
            Expect {
                file: "vercel-ai__message-delta-input-tokens.sse",
                text_starts: "pong",
                calls: json!([]),
                usage: Some((61, 2, 0, 0)),
                stop: Some(StopReason::EndTurn),
                problem: None,
            },
            Expect {
                file: "vercel-ai__duplicate-message-start.sse",
                text_starts: "Hello, World!",
                calls: json!([]),
                usage: Some((17, 227, 0, 0)),
                stop: Some(StopReason::EndTurn),
                problem: None,
            },
            Expect {
                file: "anthropic-sdk-python__tool-use-cut-by-max-tokens.sse",
                text_starts: "I'll create a comprehensive tax guide",
                calls: json!([{"name": "make_file", "arguments": null}]),
                usage: m_usage(450, None),
                stop: Some(StopReason::MaxTokens),
                problem: Some("tool_arguments_malformed"),
            },
            Expect {
                file: "vercel-ai-test__overloaded-error-first-event.sse",
                text_starts: "",
                calls: json!([]),
                usage: None,
                stop: None,
                problem: Some("provider_overloaded"),
            },
            Expect {
                file: "vercel-ai-test__overloaded-error-mid-stream.sse",
                text_starts: "Hello",
                calls: json!([]),
                usage: Some((17, 1, 0, 0)),
                stop: None,
                problem: Some("provider_overloaded"),
            },
            Expect {
                file: "vercel-ai__spliced-message-start.sse",
                text_starts: "",
                calls: json!([{"name": "test-tool", "arguments": null}]),
                usage: Some((17, 1, 0, 0)),
                stop: None,
                problem: Some("stream_malformed"),
            },
            Expect {
                file: "vercel-ai__refusal-no-content.sse",
                text_starts: "",
                calls: json!([]),
                usage: Some((18, 5, 0, 0)),
                stop: Some(StopReason::Refusal),
                problem: None,
            },
            Expect {
                file: "vercel-ai__mcp-tool-use-result.sse",
                text_starts: "The echo tool responded",
                calls: json!([]),
                usage: Some((1250, 83, 0, 0)),
                stop: Some(StopReason::EndTurn),
                problem: None,
            },
        ],
    );
}

/// The cut-by-max-tokens capture reports its final output count late.
fn m_usage(input: u64, _: Option<()>) -> Option<(u64, u64, u64, u64)> {
    let dir = rein_testing::fixtures::wire_dir()?;
    let body = std::fs::read_to_string(
        dir.join("anthropic-messages/anthropic-sdk-python__tool-use-cut-by-max-tokens.sse"),
    )
    .ok()?;
    let output = body
        .lines()
        .filter(|l| l.contains("message_delta"))
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .filter_map(|v| v["usage"]["output_tokens"].as_u64())
        .next_back()?;
    Some((input, output, 0, 0))
}

#[test]
#[expect(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn openai_chat_captures_mean_what_they_show() {
    let Some(dir) = rein_testing::fixtures::wire_dir() else {
        return;
    };
    check(
        &dir,
        "openai-chat",
        WireApi::OpenAiChat,
        &[
            Expect {
                file: "openai-python__parallel-tool-calls.sse",
                text_starts: "",
                calls: json!([{"name": "GetWeatherArgs", "arguments": {"city": "Edinburgh", "country": "GB", "units": "c"}},
                          {"name": "get_stock_price", "arguments": {"exchange": "NASDAQ", "ticker": "AAPL"}}]),
                usage: m_openai(&dir, "openai-python__parallel-tool-calls.sse"),
                stop: Some(StopReason::ToolUse),
                problem: None,
            },
            Expect {
                file: "vercel-ai__anthropic-openai-compat-tool-call.sse",
                text_starts: "Reading it.",
                calls: json!([{"name": "read_file", "arguments": {"path": "a.txt"}}]),
                usage: None,
                stop: Some(StopReason::ToolUse),
                problem: None,
            },
            Expect {
                file: "vercel-ai-test__llama-usage-in-every-chunk-trailing-empty-args.sse",
                text_starts: "",
                calls: json!([{"name": "searchGoogle", "arguments": {"query": "latest news on ai"}}]),
                usage: Some((226, 20, 0, 0)),
                stop: Some(StopReason::ToolUse),
                problem: None,
            },
            Expect {
                file: "vercel-ai-test__usage-cached-tokens-cache-write.sse",
                text_starts: "",
                calls: json!([]),
                usage: Some((592, 20, 1152, 256)),
                stop: Some(StopReason::EndTurn),
                problem: None,
            },
            Expect {
                file: "vercel-ai__deepseek-reasoner-tool-call.sse",
                text_starts: "",
                calls: json!([{"name": "weather", "arguments": {"location": "San Francisco"}}]),
                usage: Some((19, 83, 320, 0)),
                stop: Some(StopReason::ToolUse),
                problem: None,
            },
            Expect {
                file: "vercel-ai__xai-grok3mini-reasoning-tool-call.sse",
                text_starts: "",
                calls: json!([{"name": "weather", "arguments": {"location": "San Francisco"}}]),
                usage: Some((1, 26, 306, 0)),
                stop: Some(StopReason::ToolUse),
                problem: None,
            },
            Expect {
                file: "vercel-ai-test__azure-content-filter-prefix-and-trailer.sse",
                text_starts: "Hello",
                calls: json!([]),
                usage: None,
                stop: Some(StopReason::EndTurn),
                problem: None,
            },
            Expect {
                file: "vercel-ai-test__error-as-first-chunk.sse",
                text_starts: "",
                calls: json!([]),
                usage: None,
                stop: None,
                problem: Some("provider_unavailable"),
            },
            Expect {
                file: "vercel-ai-test__error-first-chunk-numeric-code.sse",
                text_starts: "",
                calls: json!([]),
                usage: None,
                stop: None,
                problem: Some("provider_bad_request"),
            },
            Expect {
                file: "vercel-ai-test__error-after-output.sse",
                text_starts: "Hello",
                calls: json!([]),
                usage: None,
                stop: None,
                problem: Some("provider_unavailable"),
            },
            Expect {
                file: "vercel-ai-test__unparsable-chunk.sse",
                text_starts: "",
                calls: json!([]),
                usage: None,
                stop: None,
                problem: Some("stream_malformed"),
            },
            // Not executed early: the whole argument string is not JSON.
            Expect {
                file: "vercel-ai-test__tool-args-coincidentally-parsable.sse",
                text_starts: "",
                calls: json!([{"name": "search", "arguments": null}]),
                usage: None,
                stop: Some(StopReason::ToolUse),
                problem: Some("tool_arguments_malformed"),
            },
            Expect {
                file: "openai-python__finish-reason-length.sse",
                text_starts: "{\"",
                calls: json!([]),
                usage: m_openai(&dir, "openai-python__finish-reason-length.sse"),
                stop: Some(StopReason::MaxTokens),
                problem: None,
            },
        ],
    );
}

/// Usage as the capture's last usage object states it (no cache fields).
fn m_openai(dir: &std::path::Path, file: &str) -> Option<(u64, u64, u64, u64)> {
    let body = std::fs::read_to_string(dir.join("openai-chat").join(file)).ok()?;
    let v = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .rfind(|v| v["usage"].is_object())?;
    Some((
        v["usage"]["prompt_tokens"].as_u64()?,
        v["usage"]["completion_tokens"].as_u64()?,
        0,
        0,
    ))
}

#[test]
fn openai_responses_captures_mean_what_they_show() {
    let Some(dir) = rein_testing::fixtures::wire_dir() else {
        return;
    };
    check(
        &dir,
        "openai-responses",
        WireApi::OpenAiResponses,
        &[
            Expect {
                file: "vercel-ai__openai-reasoning-summary-function-calls.sse",
                text_starts: "",
                calls: json!([{"name": "calculator", "arguments": {"a": 12, "b": 7, "op": "add"}}]),
                usage: Some((134, 28, 0, 0)),
                stop: Some(StopReason::ToolUse),
                problem: None,
            },
            Expect {
                file: "vercel-ai__azure-function-call-arguments.sse",
                text_starts: "",
                calls: json!([{"name": "weather", "arguments": {"location": "San Francisco"}}]),
                usage: Some((45, 24, 0, 0)),
                stop: Some(StopReason::ToolUse),
                problem: None,
            },
            Expect {
                file: "vercel-ai__openai-custom-tool-input-delta.sse",
                text_starts: "",
                calls: json!([{"name": "write_sql", "arguments": {"input": "SELECT * FROM users WHERE age > 25"}}]),
                usage: Some((50, 20, 0, 0)),
                stop: Some(StopReason::ToolUse),
                problem: None,
            },
            Expect {
                file: "vercel-ai__openai-text-phase-cached-tokens.sse",
                // The deltas of this capture were cut short; each completed
                // item's text is authoritative.
                text_starts: "Got it \u{2014} I\u{2019}ll quickly check reliable, up-to-date sources for AI headlines from **today (February 25, 2026)** and then summarize the key items with links.\n\nHere are a few **AI headlines for today",
                calls: json!([]),
                usage: Some((4040, 463, 3072, 0)),
                stop: Some(StopReason::EndTurn),
                problem: None,
            },
            Expect {
                file: "vercel-ai__openai-tool-search-then-function-call.sse",
                text_starts: "",
                calls: json!([{"name": "get_weather", "arguments": {"location": "San Francisco, CA", "unit": "fahrenheit"}}]),
                usage: Some((640, 46, 0, 0)),
                stop: Some(StopReason::ToolUse),
                problem: None,
            },
            Expect {
                file: "codex__codex-core-cli-responses-fixture.sse",
                text_starts: "fixture hello",
                calls: json!([]),
                usage: None,
                stop: Some(StopReason::EndTurn),
                problem: None,
            },
            Expect {
                file: "codex-test__codex-response-failed-context-window.sse",
                text_starts: "",
                calls: json!([]),
                usage: None,
                stop: None,
                problem: Some("context_window_exceeded"),
            },
            Expect {
                file: "codex-test__codex-response-failed-insufficient-quota.sse",
                text_starts: "",
                calls: json!([]),
                usage: None,
                stop: None,
                problem: Some("insufficient_quota"),
            },
            Expect {
                file: "codex-test__codex-response-failed-rate-limit.sse",
                text_starts: "",
                calls: json!([]),
                usage: None,
                stop: None,
                problem: Some("rate_limited"),
            },
            Expect {
                file: "vercel-ai__openai-error-insufficient-quota.sse",
                text_starts: "",
                calls: json!([]),
                usage: None,
                stop: None,
                problem: Some("insufficient_quota"),
            },
        ],
    );
}

#[test]
fn thinking_and_its_signature_are_kept() {
    let Some(dir) = rein_testing::fixtures::wire_dir() else {
        return;
    };
    let (m, problem) = outcome(
        WireApi::AnthropicMessages,
        &dir.join("anthropic-messages/vercel-ai__thinking-signature-text.sse"),
    );
    assert!(problem.is_none());
    let thinking = m.content.iter().find_map(|b| match b {
        rein_wire::ContentBlock::Thinking {
            thinking,
            signature,
            ..
        } => Some((thinking.clone(), signature.clone())),
        _ => None,
    });
    let (text, signature) = thinking.expect("a thinking block");
    assert!(!text.is_empty());
    assert!(signature.is_some_and(|s| s.len() > 10));
    assert_eq!(m.text(), "925 ÷ 5 = 185");
}

#[test]
fn responses_reasoning_goes_back_before_the_call_it_preceded() {
    let Some(dir) = rein_testing::fixtures::wire_dir() else {
        return;
    };
    let (m, problem) = outcome(
        WireApi::OpenAiResponses,
        &dir.join("openai-responses/vercel-ai__openai-reasoning-summary-function-calls.sse"),
    );
    assert!(problem.is_none());
    // The next request of the tool loop: the question, this answer, the
    // call's result.
    let call_id = m.tool_calls[0].id.clone();
    let request = rein_wire::Request::new(
        "m",
        vec![
            rein_wire::Message::user("what is 12 + 7?"),
            m.to_message(),
            rein_wire::Message {
                role: rein_wire::Role::User,
                content: vec![rein_wire::ContentBlock::ToolResult {
                    tool_use_id: call_id.clone(),
                    content: vec![rein_wire::ContentBlock::text("19")],
                    is_error: false,
                }],
            },
        ],
    );
    let body = rein_gateway::encode::openai_responses_body(&request);
    let input = body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input
        .iter()
        .map(|i| i["type"].as_str().unwrap_or("message"))
        .collect();
    let at = kinds
        .iter()
        .position(|k| *k == "reasoning")
        .expect("the reasoning item is sent back");
    assert_eq!(kinds[at + 1], "function_call", "{kinds:?}");
    assert_eq!(input[at + 1]["call_id"], call_id.as_str());
    let item = &input[at];
    assert!(item["id"].as_str().unwrap().starts_with("rs_"), "{item}");
    assert!(
        item["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAA"),
        "{item}"
    );
    assert_eq!(item["summary"][0]["type"], "summary_text");
    assert!(!item["summary"][0]["text"].as_str().unwrap().is_empty());
    // The same message sent to Anthropic carries no foreign reasoning.
    let anthropic = rein_gateway::encode::anthropic_body(&request);
    assert!(!anthropic.to_string().contains("gAAAA"), "{anthropic}");
}

/// A Responses stream whose completed message item says `done` after
/// deltas `deltas`: the events it decodes to.
fn responses_text(deltas: &[&str], done: &str) -> Vec<StreamEvent> {
    let mut body = String::from(
        "data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"model\":\"m\"}}\n\n\
         data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"i\"}}\n\n",
    );
    for d in deltas {
        body.push_str(&format!(
            "data: {}\n\n",
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": d})
        ));
    }
    body.push_str(&format!(
        "data: {}\n\n",
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"type": "message", "id": "i", "content": [{"type": "output_text", "text": done}]}})
    ));
    body.push_str("data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        use futures::StreamExt as _;
        let chunks = futures::stream::iter([Ok(bytes::Bytes::from(body))]);
        rein_gateway::decode_stream(WireApi::OpenAiResponses, chunks, Default::default())
            .map(|e| e.expect("decodes"))
            .collect::<Vec<_>>()
            .await
    })
}

#[test]
fn a_completed_responses_item_is_authoritative_over_its_deltas() {
    // Deltas that fall short: the rest arrives as text.
    let events = responses_text(&["Got", " it"], "Got it, all of it.");
    assert_eq!(assemble(&events).text(), "Got it, all of it.");
    assert!(events.contains(&StreamEvent::TextDelta {
        text: ", all of it.".into()
    }));
    // Deltas that disagree: the final text replaces them.
    let events = responses_text(&["Hello wrld"], "Hello world");
    assert_eq!(assemble(&events).text(), "Hello world");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::TextReplaced { .. }))
    );
    // Agreement adds nothing; an empty final text takes nothing away.
    for (deltas, done) in [(&["same"][..], "same"), (&["kept"][..], "")] {
        let events = responses_text(deltas, done);
        assert_eq!(assemble(&events).text(), deltas[0]);
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, StreamEvent::TextDelta { .. }))
                .count(),
            1
        );
    }
}
