//! rein's telemetry.
//!
//! The runner emits `tracing` spans and metric events named after
//! OpenTelemetry's `gen_ai.*` conventions (see `rein-runner`'s
//! `telemetry` module). This crate takes them out:
//!
//! - [`otel_layer`]: through `tracing-opentelemetry` to any OpenTelemetry
//!   tracer (an OTLP exporter is the product's choice of
//!   `opentelemetry-otlp`; rein adds no exporter, so nothing leaves the
//!   process unless the product wires one);
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
