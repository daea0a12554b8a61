//! The runner driven over real HTTP through `FakeServer`, in the Anthropic
//! and the OpenAI Chat formats, with the tool-result threading each API
//! requires.

use std::sync::Arc;

use rein_gateway::{HttpProvider, WireApi};
use rein_runner::{Conversation, Profile, TurnOutcome};
use rein_sessions::{SqliteStore, Store};
use rein_testing::{FakeServer, FakeToolBackend, Reply, ScriptedCall, ScriptedMessage};
use serde_json::json;

/// A real HTTP provider for `api` talking to `server` (no retries).
fn provider_for(api: WireApi, server: &FakeServer) -> Arc<HttpProvider> {
    Arc::new(HttpProvider::new(server.config_for(api)).expect("a provider config that builds"))
}

#[tokio::test]
async fn tool_results_are_threaded_the_way_each_api_requires() {
    for api in [WireApi::AnthropicMessages, WireApi::OpenAiChat] {
        let first = ScriptedMessage::text(&["Reading both."])
            .with_call(
                ScriptedCall::to("read_file", json!({"path": "a.rs"}))
                    .id("call_a")
                    .in_fragments(4),
            )
            .with_call(
                ScriptedCall::to("read_file", json!({"path": "b.rs"}))
                    .id("call_b")
                    .in_fragments(2),
            );
        let second = ScriptedMessage::text(&["a.rs has a(), b.rs has b()."]);
        let body = |m: &ScriptedMessage| match api {
            WireApi::AnthropicMessages => m.anthropic_sse(),
            _ => m.openai_chat_sse(),
        };
        let server = FakeServer::start(vec![Reply::sse(body(&first)), Reply::sse(body(&second))])
            .await
            .unwrap();
        let provider = provider_for(api, &server);
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> =
            Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
        let backend = Arc::new(
            FakeToolBackend::new(&[("a.rs", "fn a() {}"), ("b.rs", "fn b() {}")]).unwrap(),
        );
        let profile = Profile {
            max_output_tokens: 512,
            ..Profile::new("Helper", "m").with_system("Be brief.")
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

#[tokio::test]
async fn cache_usage_reported_by_the_server_drives_every_verdict() {
    // Four calls in one turn: tool, tool, tool, answer. The server reports
    // Anthropic-style cache usage: a write, a read of the prefix, a miss, a
    // read of only the template's opening tokens.
    let u = |input, cache_read, cache_write| rein_wire::Usage {
        input,
        output: 5,
        cache_read,
        cache_write,
        reasoning: 0,
    };
    let step = |i: usize, usage| {
        ScriptedMessage::text(&[])
            .with_call(ScriptedCall::to("list_files", json!({})).id(&format!("c{i}")))
            .with_usage(usage)
    };
    let bodies = [
        step(1, u(40, 0, 3000)),
        step(2, u(60, 3000, 0)),
        step(3, u(3100, 0, 0)),
        ScriptedMessage::text(&["done"]).with_usage(u(3100, 20, 0)),
    ];
    let server = FakeServer::start(
        bodies
            .iter()
            .map(|m| Reply::sse(m.anthropic_sse()))
            .collect(),
    )
    .await
    .unwrap();
    let config = server.config_for(WireApi::AnthropicMessages);
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let backend = Arc::new(FakeToolBackend::new(&[("a.rs", "fn a() {}")]).unwrap());
    let profile = Profile {
        max_output_tokens: 512,
        ..Profile::new("Helper", "claude-sonnet-4-5").with_system("Be brief.")
    };
    let mut conv = Conversation::open(
        store.clone(),
        Arc::new(HttpProvider::new(config).unwrap()),
        backend,
        profile,
        None,
    )
    .await
    .unwrap();
    // The repeated list_files calls come from the cache after the first;
    // loop detection allows up to four.
    conv.turn("look").await.unwrap();
    let log = store.read(conv.session_id(), 1, 1000).await.unwrap();
    let verdicts: Vec<String> = log
        .iter()
        .filter_map(|e| match &e.event {
            rein_sessions::Event::ModelCompleted { cache_verdict, .. } => {
                cache_verdict.map(|v| v.as_str().to_owned())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        verdicts,
        ["cold", "hit", "miss", "miss"],
        "the 20-token read is the template's opening, not a hit"
    );
    assert_eq!(
        conv.cache_monitor().warnings(),
        1,
        "a miss is logged once per prefix, then counted"
    );
    // The report counts them and the read share.
    let report = rein_trace::report(conv.session_id(), &log);
    assert_eq!(
        report.totals.cache_verdicts.get(&rein_cache::Verdict::Miss),
        Some(&2)
    );
    assert!(report.totals.cache_read_share > 0.0);
    // Breakpoints landed on the last tool and on the recent user messages.
    let last = server.requests().last().unwrap().json();
    let tools = last["tools"].as_array().unwrap();
    assert_eq!(tools.last().unwrap()["cache_control"]["type"], "ephemeral");
    let marked = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["content"]
                .as_array()
                .is_some_and(|c| c.last().is_some_and(|b| b.get("cache_control").is_some()))
        })
        .count();
    assert_eq!(marked, 2);
    // Every request of the conversation carried the same prefix bytes.
    let prefixes: Vec<String> = server
        .requests()
        .iter()
        .map(|r| {
            let mut tools = r.json()["tools"].clone();
            for t in tools.as_array_mut().unwrap() {
                t.as_object_mut().unwrap().remove("cache_control");
            }
            format!("{}{}", r.json()["system"], tools)
        })
        .collect();
    assert!(prefixes.windows(2).all(|w| w[0] == w[1]));
}

#[tokio::test]
async fn a_provider_that_never_caches_is_uncached_and_gets_a_cache_key() {
    let step = |i: usize| {
        ScriptedMessage::text(&[])
            .with_call(ScriptedCall::to("read_file", json!({"path": "a.rs"})).id(&format!("c{i}")))
            .with_usage(rein_wire::Usage {
                input: 900,
                output: 5,
                ..rein_wire::Usage::default()
            })
    };
    let bodies = [step(1), step(2), ScriptedMessage::text(&["ok"])];
    let server = FakeServer::start(
        bodies
            .iter()
            .map(|m| Reply::sse(m.openai_chat_sse()))
            .collect(),
    )
    .await
    .unwrap();
    let config = server.config_for(WireApi::OpenAiChat);
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let backend = Arc::new(FakeToolBackend::new(&[("a.rs", "fn a() {}")]).unwrap());
    let profile = Profile {
        max_output_tokens: 512,
        ..Profile::new("Helper", "gpt-4.1-mini").with_system("Be brief.")
    };
    let mut conv = Conversation::open(
        store.clone(),
        Arc::new(HttpProvider::new(config).unwrap()),
        backend,
        profile,
        None,
    )
    .await
    .unwrap();
    conv.turn("look").await.unwrap();
    let log = store.read(conv.session_id(), 1, 1000).await.unwrap();
    let verdicts: Vec<String> = log
        .iter()
        .filter_map(|e| match &e.event {
            rein_sessions::Event::ModelCompleted { cache_verdict, .. } => {
                cache_verdict.map(|v| v.as_str().to_owned())
            }
            _ => None,
        })
        .collect();
    assert_eq!(verdicts, ["cold", "uncached", "uncached"]);
    assert_eq!(conv.cache_monitor().warnings(), 0, "uncached is not a miss");
    let keys: Vec<serde_json::Value> = server
        .requests()
        .iter()
        .map(|r| r.json()["prompt_cache_key"].clone())
        .collect();
    assert!(keys[0].as_str().is_some_and(|k| k.len() == 16));
    assert!(
        keys.windows(2).all(|w| w[0] == w[1]),
        "one key for the conversation's prefix"
    );
}

#[tokio::test]
async fn the_cache_read_share_over_a_200_step_session() {
    let cache = Arc::new(rein_testing::AnthropicCache::new());
    let server = FakeServer::start(Vec::new()).await.unwrap();
    let sim = cache.clone();
    server.respond_with(Arc::new(move |request, position| {
        let mut usage = sim.usage(&request.json());
        usage.output = 20;
        let message = if position < 199 {
            ScriptedMessage::text(&["Next file."]).with_call(
                ScriptedCall::to("read_file", json!({"path": format!("src/f{position}.rs")}))
                    .id(&format!("c{position}")),
            )
        } else {
            ScriptedMessage::text(&["Read them all."])
        };
        Reply::sse(message.with_usage(usage).anthropic_sse())
    }));
    let config = server.config_for(WireApi::AnthropicMessages);
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let backend = Arc::new(FakeToolBackend::new(&[("a.rs", "fn a() {}")]).unwrap());
    let profile = Profile {
        max_output_tokens: 512,
        ..Profile::new("Reader", "claude-sonnet-4-5")
            .with_system("Read every file you are asked about.")
    };
    let mut conv = Conversation::open(
        store.clone(),
        Arc::new(HttpProvider::new(config).unwrap()),
        backend,
        profile,
        None,
    )
    .await
    .unwrap();
    conv.agent.budgets.max_steps = 250;
    let outcome = conv.turn("read src/f0.rs to src/f198.rs").await.unwrap();
    assert_eq!(
        outcome,
        TurnOutcome::Finished {
            reply: "Read them all.".into()
        }
    );
    let log = store.read(conv.session_id(), 1, 100_000).await.unwrap();
    let report = rein_trace::report(conv.session_id(), &log);
    let share = report.totals.cache_read_share;
    eprintln!(
        "cache read share over 200 steps: {:.3} ({:?})",
        share, report.totals.cache_verdicts
    );
    // With the prefix and rolling breakpoints, almost every prompt token of
    // a later step was written by an earlier one.
    assert!(share > 0.9, "read share {share}");
    assert_eq!(
        report.totals.cache_verdicts.get(&rein_cache::Verdict::Miss),
        None,
        "{:?}",
        report.totals.cache_verdicts
    );
}

#[tokio::test]
async fn near_the_window_the_providers_count_is_used_and_a_failing_count_falls_back() {
    for count_works in [true, false] {
        let server = FakeServer::start(Vec::new()).await.unwrap();
        server.respond_with(Arc::new(move |request, _| {
            if request.path.ends_with("/count_tokens") {
                return if count_works {
                    Reply::status(200, r#"{"input_tokens": 200}"#)
                } else {
                    Reply::status(
                        500,
                        r#"{"type":"error","error":{"type":"api_error","message":"down"}}"#,
                    )
                };
            }
            Reply::sse(ScriptedMessage::text(&["fits"]).anthropic_sse())
        }));
        let config = server.config_for(WireApi::AnthropicMessages);
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> =
            Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
        let backend = Arc::new(FakeToolBackend::new(&[("a.rs", "fn a() {}")]).unwrap());
        let profile = Profile {
            max_output_tokens: 512,
            ..Profile::new("Helper", "claude-sonnet-4-5").with_system("Be brief.")
        };
        let mut conv = Conversation::open(
            store.clone(),
            Arc::new(HttpProvider::new(config).unwrap()),
            backend,
            profile,
            None,
        )
        .await
        .unwrap();
        // The local estimate (tool schemas count heavily) says this does not fit.
        conv.agent.context.window = Some(1200);
        let outcome = conv.turn("hi").await.unwrap();
        let counted = server
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/count_tokens"))
            .count();
        assert!(counted >= 1, "the count endpoint was asked");
        let count_body = server
            .requests()
            .iter()
            .find(|r| r.path.ends_with("/count_tokens"))
            .unwrap()
            .json();
        assert!(count_body.get("stream").is_none() && count_body["messages"].is_array());
        // Either way the request is inside the window by the count used,
        // and is sent; the record says which count that was.
        assert_eq!(
            outcome,
            TurnOutcome::Finished {
                reply: "fits".into()
            }
        );
        let log = store.read(conv.session_id(), 1, 1000).await.unwrap();
        let method = log
            .iter()
            .find_map(|e| match &e.event {
                rein_sessions::Event::ModelRequested {
                    pressure: Some(p), ..
                } => Some(p.method),
                _ => None,
            })
            .unwrap();
        let expected = if count_works {
            rein_wire::CountMethod::Provider
        } else {
            rein_wire::CountMethod::Estimate
        };
        assert_eq!(method, expected, "fell back to the estimate");
    }
}

/// An interrupt cuts a model stream that is open and stalled: the turn ends
/// `interrupted` then, not at the stream's idle timeout, and a stale stop
/// posted before a turn began does not end that turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_cuts_an_open_stream_and_a_stale_stop_ends_nothing() {
    let body = ScriptedMessage::text(&["Thinking it", " over"]).openai_chat_sse();
    let parts: Vec<String> = body.split_inclusive("\n\n").map(str::to_owned).collect();
    let stalling = Reply::sse_chunks(parts).delay_before(2, std::time::Duration::from_secs(600));
    let done = Reply::sse(ScriptedMessage::text(&["Done."]).openai_chat_sse());
    let server = FakeServer::start(vec![stalling, done]).await.unwrap();
    let provider = provider_for(WireApi::OpenAiChat, &server);
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let backend = Arc::new(FakeToolBackend::new(&[]).unwrap());
    let mut conv = Conversation::open(
        store.clone(),
        provider,
        backend,
        Profile::new("Helper", "m"),
        None,
    )
    .await
    .unwrap();
    let steering = conv.steering();
    let mut ui = conv.subscribe();
    let interrupter = tokio::spawn(async move {
        // Interrupt once the answer has begun to stream.
        while let Ok(event) = ui.recv().await {
            if matches!(event.kind, rein_runner::UiKind::TextDelta { .. }) {
                steering.interrupt();
                return true;
            }
        }
        false
    });
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(60), conv.turn("think"))
        .await
        .expect("the interrupt cut the stream")
        .unwrap();
    assert_eq!(outcome, TurnOutcome::Interrupted);
    assert!(interrupter.await.unwrap());

    // A stop posted while no turn is open is passed over by the next turn.
    let session = conv.session_id().to_owned();
    store
        .post(
            &session,
            rein_sessions::InboxItem::Stop { by: "stale".into() },
        )
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let outcome = conv.turn("again").await.unwrap();
    assert_eq!(
        outcome,
        TurnOutcome::Finished {
            reply: "Done.".into()
        }
    );
}

/// A message past the bound is refused before anything is recorded.
#[tokio::test]
async fn a_message_past_the_bound_is_refused_and_nothing_is_recorded() {
    let server = FakeServer::start(vec![]).await.unwrap();
    let provider = provider_for(WireApi::OpenAiChat, &server);
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let backend = Arc::new(FakeToolBackend::new(&[]).unwrap());
    let mut conv = Conversation::open(
        store.clone(),
        provider,
        backend,
        Profile::new("Helper", "m"),
        None,
    )
    .await
    .unwrap();
    let huge = "x".repeat(rein_runner::MAX_PROMPT_BYTES + 1);
    let err = conv.turn(&huge).await.expect_err("refused");
    assert_eq!(err.code.as_str(), "invalid_input");
    let session = conv.session_id().to_owned();
    assert!(store.turns(&session).await.unwrap().is_empty());
    assert!(server.requests().is_empty());
}
