//! rein's telemetry.
//!
//! The runner emits `tracing` spans and metric events named after
//! OpenTelemetry's `gen_ai.*` conventions (see `rein-runner`'s
//! `telemetry` module). This crate takes them out:
//!
//! - [`otel_layer`]: through `tracing-opentelemetry` to any OpenTelemetry
//!   tracer; with feature `otlp` (off by default), `otlp_tracer_provider`
//!   exports over OTLP — nothing leaves the process unless a product asks;
//! - [`JsonlSink`]: a redacted, bounded JSON-lines file, owner-only.
//!
//! Neither carries a prompt, model text, arguments, results or keys: the
//! spans never hold them (a product may opt in to the prompt), and the
//! sink masks secret-shaped text besides.

mod sink;

pub use sink::{DEFAULT_MAX_BYTES, JsonlSink, redact};
/// The metrics side: turns the runner's `histogram.*` events into
/// instruments of the product's meter provider.
pub use tracing_opentelemetry::MetricsLayer;

/// A tracer provider exporting spans over OTLP (HTTP + protobuf) to
/// `endpoint` (e.g. `http://127.0.0.1:4318/v1/traces`), in batches on a
/// thread of its own (a blocking client: it needs no runtime). Install
/// rustls' ring provider first, as for every rein HTTP client. Feature
/// `otlp`.
#[cfg(feature = "otlp")]
pub fn otlp_tracer_provider(
    endpoint: &str,
) -> Result<opentelemetry_sdk::trace::SdkTracerProvider, opentelemetry_otlp::ExporterBuildError> {
    use opentelemetry_otlp::WithExportConfig;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .build()?;
    Ok(opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .build())
}

/// A layer sending the runner's spans to `tracer` (build it from the
/// product's `opentelemetry_sdk` tracer provider).
pub fn otel_layer<S, T>(tracer: T) -> tracing_opentelemetry::OpenTelemetryLayer<S, T>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    T: opentelemetry::trace::Tracer + 'static,
    T::Span: Send + Sync,
{
    tracing_opentelemetry::layer().with_tracer(tracer)
}

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
