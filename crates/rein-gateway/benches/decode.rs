//! SSE decode + event mapping throughput for each wire API, beside
//! `serde_json`'s raw parse of the same payloads (the floor: any decoder
//! must at least parse each event's JSON once).
//!
//! Run with `cargo xtask bench decode`.

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use rein_gateway::{WireApi, decode_stream, sse::SseLimits};
use rein_testing::{ScriptedCall, ScriptedMessage};
use rein_wire::AgentError;
use serde_json::json;

const CHUNK: usize = 16 * 1024;

fn synthetic() -> ScriptedMessage {
    let pieces: Vec<String> = (0..20_000)
        .map(|i| format!("word{i} and some more streamed text, "))
        .collect();
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let mut message = ScriptedMessage::text(&refs);
    for i in 0..20 {
        let args = json!({"path": format!("src/file_{i}.rs"), "content": "x".repeat(4000)});
        message = message.with_call(
            ScriptedCall::to("write_file", args)
                .id(&format!("call_{i}"))
                .in_fragments(200),
        );
    }
    message
}

fn chunks(body: &Bytes) -> Vec<Result<Bytes, AgentError>> {
    (0..body.len())
        .step_by(CHUNK)
        .map(|at| Ok(body.slice(at..(at + CHUNK).min(body.len()))))
        .collect()
}

fn data_payloads(body: &str) -> Vec<&str> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .collect()
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let message = synthetic();
    let bodies = [
        (WireApi::AnthropicMessages, message.anthropic_sse()),
        (WireApi::OpenAiChat, message.openai_chat_sse()),
        (WireApi::OpenAiResponses, message.openai_responses_sse()),
    ];
    let mut group = c.benchmark_group("sse_decode");
    group.sample_size(20);
    for (api, body) in &bodies {
        let bytes = Bytes::from(body.clone());
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(format!("rein/{api}"), |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let stream = decode_stream(
                        *api,
                        futures::stream::iter(chunks(&bytes)),
                        SseLimits::default(),
                    );
                    let count = stream
                        .filter(|e| futures::future::ready(e.is_ok()))
                        .count()
                        .await;
                    assert!(count > 20_000);
                    count
                })
            })
        });
        let payloads = data_payloads(body);
        group.bench_function(format!("serde_json_floor/{api}"), |b| {
            b.iter(|| {
                let mut n = 0usize;
                for p in &payloads {
                    let v: serde_json::Value = serde_json::from_str(p).expect("json");
                    n += usize::from(v.is_object());
                }
                n
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
