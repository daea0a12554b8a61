//! The runner driven over real HTTP through `FakeServer`, in the Anthropic
//! and the OpenAI Chat formats, with the tool-result threading each API
//! requires.

#![allow(clippy::unwrap_used)] // Tests fail loudly on purpose.

use std::sync::Arc;

use rein_gateway::{ApiKey, HttpProvider, ProviderConfig, RetryPolicy, WireApi};
use rein_runner::{Conversation, Profile, ToolLoading, TurnOutcome};
use rein_sessions::{SqliteStore, Store};
use rein_testing::{FakeServer, FakeToolBackend, Reply, ScriptedCall, ScriptedMessage};
use serde_json::json;

#[tokio::test]
async fn tool_results_are_threaded_the_way_each_api_requires() {
    for api in [WireApi::AnthropicMessages, WireApi::OpenAiChat] {
        let first = ScriptedMessage::text(&["Reading both."])
            .with_call(ScriptedCall::new(
                "call_a",
                "read_file",
                json!({"path": "a.rs"}),
                4,
            ))
            .with_call(ScriptedCall::new(
                "call_b",
                "read_file",
                json!({"path": "b.rs"}),
                2,
            ));
        let second = ScriptedMessage::text(&["a.rs has a(), b.rs has b()."]);
        let body = |m: &ScriptedMessage| match api {
            WireApi::AnthropicMessages => m.anthropic_sse(),
            _ => m.openai_chat_sse(),
        };
        let server = FakeServer::start(vec![Reply::sse(body(&first)), Reply::sse(body(&second))])
            .await
            .unwrap();
        let base = if api == WireApi::AnthropicMessages {
            server.base_url()
        } else {
            format!("{}/v1", server.base_url())
        };
        let mut config = ProviderConfig::new(api)
            .with_base_url(base)
            .with_api_key(ApiKey::new("sk-test"));
        config.offline = Some(false);
        config.retry = RetryPolicy::none();
        let provider = Arc::new(HttpProvider::new(config).unwrap());
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> =
            Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
        let backend = Arc::new(
            FakeToolBackend::new(&[("a.rs", "fn a() {}"), ("b.rs", "fn b() {}")]).unwrap(),
        );
        let profile = Profile {
            name: "Helper".into(),
            system: vec!["Be brief.".into()],
            model: "m".into(),
            max_output_tokens: 512,
            tools: ToolLoading::default(),
            wording: rein_runner::Wording::default(),
        };
        let mut conv = Conversation::open(store, provider, backend.clone(), profile, None)
            .await
            .unwrap();
        let outcome = conv.turn("what do a.rs and b.rs define?").await.unwrap();
        assert_eq!(
            outcome,
            TurnOutcome::Finished {
                reply: "a.rs has a(), b.rs has b().".into()
            },
            "{api}"
        );
        assert_eq!(backend.invocations("read_file"), 2);

        let sent = server.requests();
        assert_eq!(sent.len(), 2, "{api}");
        let body = sent[1].json();
        match api {
            WireApi::AnthropicMessages => {
                let messages = body["messages"].as_array().unwrap();
                assert_eq!(messages.len(), 3);
                assert_eq!(messages[1]["role"], "assistant");
                assert_eq!(messages[1]["content"][1]["type"], "tool_use");
                assert_eq!(messages[1]["content"][1]["input"], json!({"path": "a.rs"}));
                assert_eq!(messages[2]["role"], "user");
                let results = messages[2]["content"].as_array().unwrap();
                assert_eq!(results[0]["type"], "tool_result");
                assert_eq!(results[0]["tool_use_id"], "call_a");
                assert_eq!(results[1]["tool_use_id"], "call_b");
                assert!(
                    results[0]["content"][0]["text"]
                        .as_str()
                        .unwrap()
                        .contains("fn a() {}")
                );
                assert_eq!(
                    body["tools"].as_array().unwrap().len(),
                    9,
                    "seven tools, read_result and read_skill"
                );
                assert_eq!(body["system"][0]["text"], "Be brief.");
            }
            _ => {
                let messages = body["messages"].as_array().unwrap();
                assert_eq!(messages[0]["role"], "system");
                assert_eq!(messages[2]["role"], "assistant");
                assert_eq!(messages[2]["tool_calls"][0]["id"], "call_a");
                assert_eq!(
                    messages[2]["tool_calls"][1]["function"]["name"],
                    "read_file"
                );
                assert_eq!(messages[3]["role"], "tool");
                assert_eq!(messages[3]["tool_call_id"], "call_a");
                assert_eq!(messages[4]["role"], "tool");
                assert_eq!(messages[4]["tool_call_id"], "call_b");
                assert!(
                    messages[4]["content"]
                        .as_str()
                        .unwrap()
                        .contains("fn b() {}")
                );
                assert_eq!(body["tools"][0]["type"], "function");
            }
        }
    }
}
