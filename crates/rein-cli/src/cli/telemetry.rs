//! Where the `rein` command's logs and spans go: warnings (or `REIN_LOG`)
//! to stderr always; the runner's `gen_ai` spans to an OTLP collector
//! (`--otel URL`, or `[telemetry] otlp` in rein's home config) and to a
//! redacted, bounded JSON-lines file (`[telemetry] jsonl`) when asked.
//! Only rein's home config says where spans go: a project's config cannot
//! send them anywhere.
//!
//! Not here: the spans (`rein-runner`'s `telemetry`), the exporters
//! (`rein-telemetry`).

use std::io::IsTerminal;
use std::path::PathBuf;

use opentelemetry::trace::TracerProvider as _;
use rein::wire::{AgentError, error::codes};
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// What was installed; dropping it flushes the spans still queued.
pub struct Installed {
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for Installed {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            let _ = provider.force_flush();
            let _ = provider.shutdown();
        }
    }
}

/// Install the subscriber: stderr logs, and spans where `otel` (the
/// flag) or rein's home config say.
pub fn install(home: Option<PathBuf>, otel: Option<String>) -> Result<Installed, AgentError> {
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(
            tracing_subscriber::EnvFilter::try_from_env("REIN_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        );
    let settings = rein::sessions::home::resolve(home)
        .ok()
        .and_then(|home| rein::config::Loaded::load(&home, None).ok())
        .and_then(|loaded| loaded.file().ok())
        .and_then(|file| file.telemetry)
        .unwrap_or_default();
    let endpoint = otel.or(settings.otlp);
    let provider =
        match &endpoint {
            Some(url) => {
                let _ = rustls::crypto::ring::default_provider().install_default();
                Some(rein::telemetry::otlp_tracer_provider(url).map_err(|e| {
                    AgentError::new(codes::INVALID_INPUT, format!("--otel {url}: {e}"))
                })?)
            }
            None => None,
        };
    let spans = provider
        .as_ref()
        .map(|p| rein::telemetry::otel_layer(p.tracer("rein")));
    let sink = match &settings.jsonl {
        Some(path) => Some(
            rein::telemetry::JsonlSink::create(
                std::path::Path::new(path),
                rein::telemetry::DEFAULT_MAX_BYTES,
                rein::compose::provider_secrets(),
            )
            .map_err(|e| {
                AgentError::new(
                    codes::INVALID_INPUT,
                    format!("[telemetry] jsonl {path}: {e}"),
                )
            })?,
        ),
        None => None,
    };
    let only_rein = || {
        tracing_subscriber::filter::Targets::new().with_target("rein_runner", tracing::Level::INFO)
    };
    tracing_subscriber::registry()
        .with(logs)
        .with(spans.map(|layer| layer.with_filter(only_rein())))
        .with(sink.map(|layer| layer.with_filter(only_rein())))
        .try_init()
        .map_err(|e| AgentError::new(codes::INTERNAL, format!("logging: {e}")))?;
    Ok(Installed { provider })
}
