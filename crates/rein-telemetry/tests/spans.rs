//! A real turn (a model call and a tool call) observed through the
//! OpenTelemetry layer into an in-memory exporter and through the JSONL
//! sink: the gen_ai spans and attributes are there; a canary in the
//! prompt, in a tool's result and a canary key appear in neither; the
//! file is owner-only. A product that opts in gets the prompt.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use rein_runner::{Conversation, Profile};
use rein_sessions::MemoryStore;
use rein_telemetry::{DEFAULT_MAX_BYTES, JsonlSink, otel_layer};
use rein_testing::{FakeProvider, ScriptedCall, ScriptedMessage};
use rein_tools::{Outcome, PermissionClass, Registry, tool_fn};
use rein_wire::Usage;
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

const PROMPT_CANARY: &str = "prompt-canary-7c1d";
const RESULT_CANARY: &str = "result-canary-91ab";
const KEY_CANARY: &str = "sk-canary-key-0123456789abcdef";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    /// What to look up.
    what: String,
}

async fn a_turn(content: bool) {
    let tools = Registry::new()
        .with(tool_fn(
            "lookup",
            "Look something up.",
            PermissionClass::Read,
            |input: Lookup| async move {
                Outcome::ok(json!({"found": format!("{RESULT_CANARY} for {}", input.what)}))
            },
        ))
        .expect("tool");
    let usage = Usage {
        input: 120,
        output: 30,
        ..Usage::default()
    };
    let provider = Arc::new(FakeProvider::from_messages(&[
        ScriptedMessage::text(&[])
            .with_call(ScriptedCall::to("lookup", json!({"what": PROMPT_CANARY})).id("c1"))
            .with_usage(usage),
        ScriptedMessage::text(&["Found it."]).with_usage(usage),
    ]));
    let mut conversation = Conversation::open(
        Arc::new(MemoryStore::new()),
        provider,
        Arc::new(tools),
        Profile::new("helper", "fake-model"),
        None,
    )
    .await
    .expect("open");
    conversation.agent.guards.telemetry_content = content;
    conversation
        .turn(&format!("look up {PROMPT_CANARY} with key {KEY_CANARY}"))
        .await
        .expect("turn");
}

#[tokio::test]
async fn spans_carry_gen_ai_attributes_and_no_secret() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("telemetry.jsonl");
    let sink = JsonlSink::create(&path, DEFAULT_MAX_BYTES, vec![KEY_CANARY.into()]).expect("sink");
    let subscriber = tracing_subscriber::registry()
        .with(otel_layer(provider.tracer("rein-test")))
        .with(sink);
    {
        let _guard = tracing::subscriber::set_default(subscriber);
        a_turn(false).await;
    }
    provider.force_flush().expect("flush");
    let spans = exporter.get_finished_spans().expect("spans");
    let names: Vec<String> = spans.iter().map(|s| s.name.to_string()).collect();
    for expected in [
        "invoke_agent helper",
        "chat fake-model",
        "execute_tool lookup",
    ] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }
    let attr = |span: &str, key: &str| {
        spans
            .iter()
            .find(|s| s.name == span)
            .and_then(|s| s.attributes.iter().find(|kv| kv.key.as_str() == key))
            .map(|kv| kv.value.to_string())
    };
    assert_eq!(
        attr("chat fake-model", "gen_ai.operation.name").as_deref(),
        Some("chat")
    );
    assert_eq!(
        attr("chat fake-model", "gen_ai.usage.input_tokens").as_deref(),
        Some("120")
    );
    assert_eq!(
        attr("chat fake-model", "gen_ai.usage.output_tokens").as_deref(),
        Some("30")
    );
    assert_eq!(
        attr("execute_tool lookup", "gen_ai.tool.call.id").as_deref(),
        Some("c1")
    );
    let everything = format!("{spans:?}");
    for canary in [PROMPT_CANARY, RESULT_CANARY, KEY_CANARY] {
        assert!(!everything.contains(canary), "{canary} reached a span");
    }

    let file = std::fs::read_to_string(&path).expect("sink file");
    assert!(file.contains("\"span\":\"chat fake-model\""), "{file}");
    assert!(
        file.contains("gen_ai.client.token.usage"),
        "metric events are written: {file}"
    );
    for canary in [PROMPT_CANARY, RESULT_CANARY, KEY_CANARY] {
        assert!(!file.contains(canary), "{canary} reached the file");
    }
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "owner-only");
}

#[tokio::test]
async fn a_product_may_opt_in_to_the_prompt_and_the_sink_still_masks_keys() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("telemetry.jsonl");
    let sink = JsonlSink::create(&path, DEFAULT_MAX_BYTES, vec![KEY_CANARY.into()]).expect("sink");
    {
        let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(sink));
        a_turn(true).await;
    }
    let file = std::fs::read_to_string(&path).expect("sink file");
    assert!(file.contains(PROMPT_CANARY), "the prompt, opted in: {file}");
    assert!(!file.contains(KEY_CANARY), "keys are masked even then");
    assert!(!file.contains(RESULT_CANARY), "results never");
}

#[test]
fn the_sink_is_bounded_and_secret_shapes_are_masked() {
    assert_eq!(
        rein_telemetry::redact("key sk-abcdefghijklmnop and Bearer xyz123", &[]),
        "key [redacted] and Bearer [redacted]"
    );
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("small.jsonl");
    let sink = JsonlSink::create(&path, 600, Vec::new()).expect("sink");
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(sink));
    for n in 0..100u64 {
        let span = tracing::info_span!("chat", gen_ai.usage.input_tokens = n);
        drop(span.entered());
    }
    let file = std::fs::read_to_string(&path).expect("file");
    assert!(file.len() < 900, "bounded: {} bytes", file.len());
    assert!(file.contains("reached its bound"), "{file}");
}

#[tokio::test]
async fn token_usage_and_duration_become_gen_ai_metrics() {
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
    let exporter = InMemoryMetricExporter::default();
    let meters = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let subscriber =
        tracing_subscriber::registry().with(rein_telemetry::MetricsLayer::new(meters.clone()));
    {
        let _guard = tracing::subscriber::set_default(subscriber);
        a_turn(false).await;
    }
    meters.force_flush().expect("flush");
    let metrics = format!("{:?}", exporter.get_finished_metrics().expect("metrics"));
    for name in [
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
    ] {
        assert!(metrics.contains(name), "{name} missing");
    }
    for canary in [PROMPT_CANARY, RESULT_CANARY, KEY_CANARY] {
        assert!(!metrics.contains(canary), "{canary} reached a metric");
    }
}
