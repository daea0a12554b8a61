//! Reasoning models through the runner over real HTTP: the reasoning of
//! each step goes back in the tool loop and after a resume, a model known
//! not to reason is not sent the setting, and the report says what the
//! reasoning cost.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::sync::Arc;

use rein_gateway::{HttpProvider, WireApi};
use rein_runner::{Conversation, Profile, TurnOutcome};
use rein_sessions::{SqliteStore, Store};
use rein_testing::{FakeServer, FakeToolBackend, Reply, ScriptedCall, ScriptedMessage};
use rein_wire::{ModelPrice, PriceTable, Reasoning, Usage};
use serde_json::json;

/// A real HTTP provider for `api` talking to `server` (no retries).
fn provider_for(api: WireApi, server: &FakeServer) -> Arc<HttpProvider> {
    Arc::new(HttpProvider::new(server.config_for(api)).unwrap())
}

async fn store_in(dir: &tempfile::TempDir) -> Arc<dyn Store> {
    Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap())
}

/// Where each piece of reasoning sits in a request body: the signatures or
/// encrypted contents in the order they are sent.
fn reasoning_sent(api: WireApi, body: &serde_json::Value) -> Vec<String> {
    let mut found = Vec::new();
    match api {
        WireApi::AnthropicMessages => {
            for m in body["messages"].as_array().unwrap() {
                for block in m["content"].as_array().into_iter().flatten() {
                    if block["type"] == "thinking" {
                        found.push(block["signature"].as_str().unwrap().to_owned());
                    }
                }
            }
        }
        _ => {
            let input = body["input"].as_array().unwrap();
            for (i, item) in input.iter().enumerate() {
                if item["type"] == "reasoning" {
                    // Each item goes back right before the call it preceded.
                    assert_eq!(input[i + 1]["type"], "function_call", "{body}");
                    found.push(item["encrypted_content"].as_str().unwrap().to_owned());
                }
            }
        }
    }
    found
}

#[tokio::test]
async fn reasoning_comes_back_in_a_three_step_tool_loop_and_after_a_resume() {
    for api in [WireApi::AnthropicMessages, WireApi::OpenAiResponses] {
        let step = |n: u32| {
            ScriptedMessage::text(&[])
                .with_reasoning(
                    &format!("think {n}"),
                    &format!("sig-{n}"),
                    &format!("rs_{n}"),
                )
                .with_call(
                    ScriptedCall::to("read_file", json!({"path": "a.rs"})).id(&format!("call_{n}")),
                )
        };
        let last = ScriptedMessage::text(&["a.rs defines a()."]);
        let body = |m: &ScriptedMessage| match api {
            WireApi::AnthropicMessages => m.anthropic_sse(),
            _ => m.openai_responses_sse(),
        };
        let server = FakeServer::start(vec![
            Reply::sse(body(&step(1))),
            Reply::sse(body(&step(2))),
            Reply::sse(body(&last)),
        ])
        .await
        .unwrap();
        let provider = provider_for(api, &server);
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(&dir).await;
        let backend = Arc::new(FakeToolBackend::new(&[("a.rs", "fn a() {}")]).unwrap());
        let profile = Profile::new("Helper", "m").with_reasoning(Reasoning::Medium);
        let mut conv = Conversation::open(
            store.clone(),
            provider.clone(),
            backend.clone(),
            profile.clone(),
            None,
        )
        .await
        .unwrap();
        let outcome = conv
            .turn("what does a.rs define? look twice")
            .await
            .unwrap();
        assert!(
            matches!(outcome, TurnOutcome::Finished { .. }),
            "{api}: {outcome:?}"
        );
        let sent = server.requests();
        assert_eq!(sent.len(), 3, "{api}");
        assert_eq!(
            reasoning_sent(api, &sent[0].json()),
            Vec::<String>::new(),
            "{api}"
        );
        assert_eq!(reasoning_sent(api, &sent[1].json()), ["sig-1"], "{api}");
        assert_eq!(
            reasoning_sent(api, &sent[2].json()),
            ["sig-1", "sig-2"],
            "{api}"
        );
        let session = conv.session_id().to_owned();
        conv.close().await.unwrap();
        // Reopened from the store, the next request still carries them.
        let mut again = Conversation::open(store, provider, backend, profile, Some(&session))
            .await
            .unwrap();
        let next = again.next_request().await.unwrap();
        let body = match api {
            WireApi::AnthropicMessages => rein_gateway::encode::anthropic_body(&next),
            _ => rein_gateway::encode::openai_responses_body(&next),
        };
        assert_eq!(
            reasoning_sent(api, &body),
            ["sig-1", "sig-2"],
            "{api} after a resume"
        );
        again.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_model_known_not_to_reason_is_not_sent_the_setting() {
    for (model, sent) in [
        ("gpt-4o-mini", false),
        ("o4-mini", true),
        ("my-model", true),
    ] {
        let server = FakeServer::start(vec![Reply::sse(
            ScriptedMessage::text(&["ok"]).openai_chat_sse(),
        )])
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let backend = Arc::new(FakeToolBackend::new(&[]).unwrap());
        let profile = Profile::new("Helper", model).with_reasoning(Reasoning::High);
        let mut conv = Conversation::open(
            store_in(&dir).await,
            provider_for(WireApi::OpenAiChat, &server),
            backend,
            profile,
            None,
        )
        .await
        .unwrap();
        conv.turn("hi").await.unwrap();
        let body = server.requests()[0].json();
        let effort = body.get("reasoning_effort");
        assert_eq!(effort.is_some(), sent, "{model}: {body}");
        if sent {
            assert_eq!(effort.unwrap(), "high", "{model}");
        }
        conv.close().await.unwrap();
    }
}

#[tokio::test]
async fn the_report_says_what_reasoning_cost() {
    let usage = Usage {
        input: 1_000,
        output: 2_000,
        reasoning: 1_500,
        ..Usage::default()
    };
    let answer = ScriptedMessage::text(&["42"])
        .with_reasoning("sum it", "enc-1", "rs_1")
        .with_usage(usage);
    let server = FakeServer::start(vec![Reply::sse(answer.openai_responses_sse())])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir).await;
    let backend = Arc::new(FakeToolBackend::new(&[]).unwrap());
    let mut conv = Conversation::open(
        store.clone(),
        provider_for(WireApi::OpenAiResponses, &server),
        backend,
        Profile::new("Helper", "m").with_reasoning(Reasoning::Medium),
        None,
    )
    .await
    .unwrap();
    // $1 / MTok in, $10 / MTok out for the model that answered (the
    // scripted server says `fake-model`): reasoning is billed as output.
    conv.set_prices(PriceTable::empty().with("fake-model", ModelPrice::usd_per_mtok(1.0, 10.0)));
    conv.turn("what is 6 × 7?").await.unwrap();
    let id = conv.session_id().to_owned();
    conv.close().await.unwrap();
    let log = store.read(&id, 1, 1000).await.unwrap();
    let report = rein_trace::report(&id, &log);
    // 1,000 × $1 + 2,000 × $10 per million; of it 1,500 × $10.
    assert_eq!(report.totals.cost_micro_usd, 21_000);
    assert_eq!(report.totals.reasoning_cost_micro_usd, 15_000);
    let text = report.render();
    assert!(
        text.contains("reasoning   $0.015000 (1500 tokens, billed as output)"),
        "{text}"
    );
}
