//! Request assembly per step at 10, 100 and 1,000 steps of history: read
//! what is new in the log, project the transcript, and serialise the body
//! once (the physical floor of a step).
//!
//! Run with `cargo xtask bench assembly`.

#![expect(
    clippy::unwrap_used,
    reason = "a benchmark harness: a failed set-up should stop it loudly"
)]

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use rein_runner::{Conversation, Profile, ToolLoading};
use rein_sessions::{Event, MemoryStore, NewEvent, ResultSource, Store, ToolStatus};
use rein_testing::{FakeProvider, FakeToolBackend};
use rein_wire::{ContentBlock, Message, Role};
use serde_json::json;

async fn session(steps: usize) -> (Arc<dyn Store>, String) {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let s = store.create_session(json!({})).await.unwrap();
    let lease = store
        .acquire(&s.id, "bench", Duration::from_secs(3600))
        .await
        .unwrap();
    let mut events = vec![NewEvent::main(Event::TurnStarted {
        turn_id: "t".into(),
        parent: None,
        prompt: "work".into(),
    })];
    for i in 0..steps {
        let id = format!("c{i}");
        events.push(NewEvent::main(Event::ModelRequested {
            call_id: format!("m{i}"),
            prefix_fingerprint: "0".into(),
            request_digest: "0".into(),
            estimated_tokens: 0,
            pressure: None,
        }));
        events.push(NewEvent::main(Event::ModelCompleted {
            call_id: format!("m{i}"),
            model: "m".into(),
            message: Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::text("Reading the next file."),
                    ContentBlock::ToolUse {
                        id: id.clone(),
                        name: "read_file".into(),
                        input: json!({"path": format!("src/f{i}.rs")}),
                    },
                ],
            },
            usage: None,
            cost_micro_usd: None,
            reasoning_cost_micro_usd: None,
            stop_reason: None,
            cache_verdict: None,
            latency_ms: 0,
            repaired: Vec::new(),
        }));
        events.push(NewEvent::main(Event::ToolCalled {
            call_id: id.clone(),
            tool: "read_file".into(),
            arguments: json!({"path": format!("src/f{i}.rs")}),
            permission: Some(rein_wire::permission::PermissionClass::Read),
        }));
        events.push(NewEvent::main(Event::ToolResult {
            call_id: id,
            status: ToolStatus::Ok,
            source: ResultSource::Live,
            content: json!({"path": format!("src/f{i}.rs"), "content": "fn main() { println!(\"a typical small source file\"); }\n".repeat(8)}),
            artifact: None,
            operation_id: None,
            undo: false,
            duration_ms: 1,
            seen: None,
        }));
    }
    store.append(&lease, events).await.unwrap();
    store.release(&lease).await.unwrap();
    (store, s.id)
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("assembly");
    group.sample_size(20);
    for steps in [10usize, 100, 1000] {
        let (store, id) = rt.block_on(session(steps));
        let profile = Profile {
            max_output_tokens: 1024,
            tools: ToolLoading::Native,
            ..Profile::new("b", "m").with_system("You help.")
        };
        let backend = Arc::new(FakeToolBackend::new(&[]).unwrap());
        let mut conv = rt
            .block_on(Conversation::open(
                store,
                Arc::new(FakeProvider::new(vec![])),
                backend,
                profile,
                Some(&id),
            ))
            .unwrap();
        group.bench_function(format!("request_and_body/{steps}_steps"), |b| {
            b.iter(|| {
                rt.block_on(async {
                    let request = conv.next_request().await.unwrap();
                    serde_json::to_vec(&rein_gateway::encode::anthropic_body(&request))
                        .unwrap()
                        .len()
                })
            })
        });
        group.bench_function(format!("body_only/{steps}_steps"), |b| {
            let request = rt.block_on(conv.next_request()).unwrap();
            b.iter(|| {
                serde_json::to_vec(&rein_gateway::encode::anthropic_body(&request))
                    .unwrap()
                    .len()
            })
        });
    }
    group.finish();

    // Compaction of a long history (the summary call answered at once, so
    // this is rein's own cost: the derived state, the summary request, the
    // record).
    let mut group = c.benchmark_group("compaction");
    group.sample_size(10);
    for steps in [100usize, 1000] {
        group.bench_function(format!("compact/{steps}_steps"), |b| {
            b.iter_batched(
                || {
                    rt.block_on(async {
                        let (store, id) = session(steps).await;
                        let profile = Profile {
                            max_output_tokens: 1024,
                            tools: ToolLoading::Native,
                            ..Profile::new("b", "m").with_system("You help.")
                        };
                        let backend = Arc::new(FakeToolBackend::new(&[]).unwrap());
                        let summary = vec![Ok(rein_wire::StreamEvent::TextDelta {
                            text: "Read many files.".into(),
                        })];
                        Conversation::open(
                            store,
                            Arc::new(FakeProvider::new(vec![summary])),
                            backend,
                            profile,
                            Some(&id),
                        )
                        .await
                        .unwrap()
                    })
                },
                |mut conv| rt.block_on(conv.compact_now()).unwrap(),
                criterion::BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
