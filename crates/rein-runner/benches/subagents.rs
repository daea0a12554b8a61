//! 100 sub-agents side by side: one turn whose model hands 100 tasks to
//! sub-agents at once, each a conversation in a session of its own on a
//! real SQLite file, every model call real HTTP to `FakeServer` on
//! loopback (answering at once) — what running sub-agents costs, with
//! nothing of a model's time in it.
//!
//! Run with `cargo xtask bench subagents`.

#![expect(
    clippy::unwrap_used,
    reason = "a benchmark harness: a failed set-up should stop it loudly"
)]

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rein_gateway::{HttpProvider, WireApi};
use rein_runner::{Conversation, Delegation, Profile, ToolLoading, TurnOutcome};
use rein_sessions::{SqliteStore, Store};
use rein_testing::{FakeServer, FakeToolBackend, Reply, ScriptedCall, ScriptedMessage};
use serde_json::json;

const CHILDREN: usize = 100;
const PROMPT: &str = "hand every part to a helper";

/// The model: the parent's first call hands out the parts, its second
/// answers; each sub-agent answers at once.
fn reply(request: &rein_testing::RecordedRequest) -> Reply {
    let body = request.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let first = messages
        .first()
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    let message = if !first.contains(PROMPT) {
        ScriptedMessage::text(&["Part done."])
    } else if messages.len() == 1 {
        (0..CHILDREN).fold(
            ScriptedMessage::text(&["Handing out the parts."]),
            |m, i| {
                m.with_call(
                    ScriptedCall::to("delegate", json!({"task": format!("do part {i}")}))
                        .id(&format!("d{i}")),
                )
            },
        )
    } else {
        ScriptedMessage::text(&["All parts are done."])
    };
    Reply::sse(message.anthropic_sse())
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(FakeServer::start(Vec::new())).unwrap();
    server.respond_with(Arc::new(|request, _| reply(request)));
    let provider =
        Arc::new(HttpProvider::new(server.config_for(WireApi::AnthropicMessages)).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(
        runtime
            .block_on(SqliteStore::open(dir.path().join("rein.db")))
            .unwrap(),
    );
    let backend = Arc::new(FakeToolBackend::new(&[]).unwrap());
    let mut group = c.benchmark_group("subagents");
    group.sample_size(10);
    group.throughput(Throughput::Elements(CHILDREN as u64));
    group.bench_function("100_in_parallel/fake_server_sqlite", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let profile = Profile {
                    tools: ToolLoading::Native,
                    max_output_tokens: 256,
                    ..Profile::new("lead", "claude-sonnet-4-5")
                };
                let mut conv = Conversation::open(
                    store.clone(),
                    provider.clone(),
                    backend.clone(),
                    profile,
                    None,
                )
                .await
                .unwrap();
                let mut delegation = Delegation::default();
                delegation.max_per_turn = CHILDREN as u32;
                conv.agent.delegation = Some(delegation);
                // The children's steps are drawn from the parent's budget.
                conv.agent.budgets.max_steps = 1_000;
                let outcome = conv.turn(PROMPT).await.unwrap();
                assert!(
                    matches!(outcome, TurnOutcome::Finished { .. }),
                    "{outcome:?}"
                );
                conv.close().await.unwrap();
            })
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
