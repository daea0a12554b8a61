//! One reasoning setting, sent the way each API takes it: over real HTTP
//! on loopback to a fake server, the request body checked as it arrived.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use futures::StreamExt;
use rein_gateway::{ApiKey, HttpProvider, Provider, ProviderConfig, WireApi};
use rein_testing::{FakeServer, Reply, ScriptedMessage};
use rein_wire::{ContentBlock, Message, Reasoning, Request, Role};
use serde_json::{Value, json};

fn sse(api: WireApi) -> String {
    let message = ScriptedMessage::text(&["ok"]);
    match api {
        WireApi::AnthropicMessages => message.anthropic_sse(),
        WireApi::OpenAiChat => message.openai_chat_sse(),
        WireApi::OpenAiResponses => message.openai_responses_sse(),
    }
}

/// The body `config` sends for a request with `reasoning` (and a
/// temperature and top_p a thinking model may not take as they are).
async fn sent(api: WireApi, compatible: bool, reasoning: Option<Reasoning>) -> Value {
    let server = FakeServer::start(vec![Reply::sse(sse(api))]).await.unwrap();
    let base = format!("{}/v1", server.base_url());
    let mut config = if compatible {
        ProviderConfig::openai_compatible(base)
    } else {
        ProviderConfig::new(api).with_base_url(base)
    };
    config.api_key = Some(ApiKey::new("sk-test-key-1234"));
    config.offline = Some(false);
    let provider = HttpProvider::new(config).unwrap();
    let mut request = Request::new("m", vec![Message::user("think")]);
    request.max_output_tokens = 1_000;
    request.sampling.temperature = Some(0.2);
    request.sampling.top_p = Some(0.5);
    request.reasoning = reasoning;
    let mut stream = provider.stream(request);
    while let Some(event) = stream.next().await {
        event.unwrap();
    }
    server.requests()[0].json()
}

#[tokio::test]
async fn anthropic_gets_a_thinking_budget_with_room_for_the_answer() {
    let body = sent(WireApi::AnthropicMessages, false, Some(Reasoning::Medium)).await;
    assert_eq!(body["thinking"]["type"], "enabled");
    assert_eq!(body["thinking"]["budget_tokens"], 8_192);
    // The answer keeps its 1,000 tokens beside the budget.
    assert_eq!(body["max_tokens"], 9_192);
    // Thinking takes no temperature and a top_p of at least 0.95.
    assert!(body.get("temperature").is_none(), "{body}");
    assert_eq!(body["top_p"], 0.95);
    // A budget below Anthropic's minimum is raised to it.
    let body = sent(
        WireApi::AnthropicMessages,
        false,
        Some(Reasoning::Budget(10)),
    )
    .await;
    assert_eq!(body["thinking"]["budget_tokens"], 1_024);
}

#[tokio::test]
async fn openai_chat_gets_an_effort_and_a_compatible_server_only_when_it_takes_one() {
    let body = sent(WireApi::OpenAiChat, false, Some(Reasoning::High)).await;
    assert_eq!(body["reasoning_effort"], "high");
    let body = sent(WireApi::OpenAiChat, true, Some(Reasoning::High)).await;
    assert!(body.get("reasoning_effort").is_none(), "{body}");
    let body = sent(WireApi::OpenAiChat, false, Some(Reasoning::Budget(3_000))).await;
    assert_eq!(body["reasoning_effort"], "medium");
}

#[tokio::test]
async fn responses_get_an_effort_a_summary_and_the_reasoning_back_encrypted() {
    let body = sent(WireApi::OpenAiResponses, false, Some(Reasoning::Low)).await;
    assert_eq!(body["reasoning"]["effort"], "low");
    assert_eq!(body["reasoning"]["summary"], "auto");
    assert_eq!(body["include"][0], "reasoning.encrypted_content");
}

#[tokio::test]
async fn without_reasoning_or_with_it_off_nothing_is_sent() {
    for reasoning in [None, Some(Reasoning::Off)] {
        let body = sent(WireApi::AnthropicMessages, false, reasoning).await;
        assert!(body.get("thinking").is_none(), "{body}");
        assert_eq!(body["max_tokens"], 1_000);
        assert_eq!(body["temperature"], 0.2);
        let body = sent(WireApi::OpenAiChat, false, reasoning).await;
        assert!(body.get("reasoning_effort").is_none(), "{body}");
        let body = sent(WireApi::OpenAiResponses, false, reasoning).await;
        assert!(body.get("reasoning").is_none(), "{body}");
        assert!(body.get("include").is_none(), "{body}");
    }
}

#[test]
fn a_level_is_read_from_a_word_or_a_number() {
    assert_eq!("High".parse::<Reasoning>().unwrap(), Reasoning::High);
    assert_eq!(
        "5000".parse::<Reasoning>().unwrap(),
        Reasoning::Budget(5_000)
    );
    assert_eq!("off".parse::<Reasoning>().unwrap(), Reasoning::Off);
    let err = "lots".parse::<Reasoning>().unwrap_err();
    assert_eq!(err.code, rein_wire::error::codes::INVALID_INPUT);
}

fn thinking(text: &str, signature: Option<&str>, id: Option<&str>) -> ContentBlock {
    ContentBlock::Thinking {
        thinking: text.to_owned(),
        signature: signature.map(str::to_owned),
        id: id.map(str::to_owned),
    }
}

fn call(id: &str) -> ContentBlock {
    ContentBlock::ToolUse {
        id: id.to_owned(),
        name: "read_file".to_owned(),
        input: json!({"path": "a.rs"}),
    }
}

/// A log that mixed APIs (a session resumed on another provider) and a
/// reasoning item the output ended on.
fn mixed_log() -> Request {
    let assistant = |content| Message {
        role: Role::Assistant,
        content,
    };
    Request::new(
        "m",
        vec![
            Message::user("go"),
            assistant(vec![
                thinking("chat server's reasoning", None, None),
                thinking("responses item", Some("enc-1"), Some("rs_1")),
                thinking("anthropic's", Some("sig-1"), None),
                call("c1"),
            ]),
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "c1".to_owned(),
                    content: vec![ContentBlock::text("fn a() {}")],
                    is_error: false,
                }],
            },
            // The output ended while the model reasoned: nothing followed.
            assistant(vec![thinking("cut short", Some("enc-2"), Some("rs_2"))]),
            Message::user("go on"),
        ],
    )
}

#[test]
fn only_reasoning_an_api_can_take_back_is_sent_and_never_an_orphan_item() {
    let request = mixed_log();
    // Anthropic: its own signed thinking, nothing unsigned, no Responses item.
    let body = rein_gateway::encode::anthropic_body(&request);
    let thinking: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter(|b| b["type"] == "thinking")
        .collect();
    assert_eq!(thinking.len(), 1, "{body}");
    assert_eq!(thinking[0]["signature"], "sig-1");
    // Responses: the item before its call; the item nothing followed stays
    // in the log (the API refuses an item without its following item).
    let body = rein_gateway::encode::openai_responses_body(&request);
    let input = body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input
        .iter()
        .map(|i| i["type"].as_str().or(i["role"].as_str()).unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "user",
            "reasoning",
            "function_call",
            "function_call_output",
            "user"
        ],
        "{body}"
    );
    assert_eq!(input[1]["id"], "rs_1");
    // Chat sends no reasoning back at all.
    let body = rein_gateway::encode::openai_chat_body(
        &request,
        rein_gateway::encode::ChatDialect::default(),
    );
    assert!(!body.to_string().contains("reasoning"), "{body}");
    assert!(!body.to_string().contains("sig-1"), "{body}");
}
