//! [`JsonlSink`]: the runner's spans and metric events as JSON lines in a
//! file only its owner can read.
//!
//! Redacted by construction: only allow-listed fields are written
//! (`gen_ai.*`, `rein.*`, `error.type`, the span's name); every string
//! passes through [`redact`] (secret-shaped text and the secrets the
//! product names are masked) and is cut to 256 characters; the file stops
//! growing at its bound, saying so in a last line.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::{Map, Value, json};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The longest string value written.
const MAX_VALUE_CHARS: usize = 256;
/// The default bound on the file.
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Whether a field may be written.
fn allowed(name: &str) -> bool {
    name.starts_with("gen_ai.")
        || name.starts_with("rein.")
        || name == "error.type"
        || name == "otel.name"
        || name.starts_with("histogram.")
        || name.starts_with("monotonic_counter.")
}

/// `text` with secret-shaped runs and the `secrets` masked
/// ([`rein_wire::secrets::mask`]), bounded.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = rein_wire::secrets::mask(text, secrets);
    if out.chars().count() > MAX_VALUE_CHARS {
        out = out.chars().take(MAX_VALUE_CHARS).collect::<String>() + "…";
    }
    out
}

struct Fields<'a> {
    map: &'a mut Map<String, Value>,
    secrets: &'a [String],
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if allowed(field.name()) {
            self.map
                .insert(field.name().into(), json!(redact(value, self.secrets)));
        }
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        if allowed(field.name()) {
            self.map.insert(field.name().into(), json!(value));
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        if allowed(field.name()) {
            self.map.insert(field.name().into(), json!(value));
        }
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        if allowed(field.name()) {
            self.map.insert(field.name().into(), json!(value));
        }
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        if allowed(field.name()) {
            self.map.insert(field.name().into(), json!(value));
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if allowed(field.name()) {
            self.map.insert(
                field.name().into(),
                json!(redact(&format!("{value:?}"), self.secrets)),
            );
        }
    }
}

struct Open {
    fields: Map<String, Value>,
    started: Instant,
}

struct Out {
    file: File,
    written: u64,
    full: bool,
}

/// A layer writing spans and metric events as redacted JSON lines.
pub struct JsonlSink {
    out: Mutex<Out>,
    max_bytes: u64,
    secrets: Vec<String>,
}

impl JsonlSink {
    /// Write to `path` (created or appended to, made owner-only: 0600),
    /// at most `max_bytes`; `secrets` are masked wherever they appear.
    pub fn create(path: &Path, max_bytes: u64, secrets: Vec<String>) -> std::io::Result<JsonlSink> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)?;
        // An existing file keeps its mode on open: made owner-only too.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        let written = file.metadata()?.len();
        Ok(JsonlSink {
            out: Mutex::new(Out {
                file,
                written,
                full: false,
            }),
            max_bytes,
            secrets,
        })
    }

    fn write(&self, line: &Value) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        if out.full {
            return;
        }
        let mut text = line.to_string();
        text.push('\n');
        if out.written + text.len() as u64 > self.max_bytes {
            let last =
                json!({"rein.telemetry": "the file reached its bound; later records were dropped"})
                    .to_string()
                    + "\n";
            let _ = out.file.write_all(last.as_bytes());
            out.full = true;
            return;
        }
        if out.file.write_all(text.as_bytes()).is_ok() {
            out.written += text.len() as u64;
        }
    }
}

impl<S> Layer<S> for JsonlSink
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Map::new();
        attrs.record(&mut Fields {
            map: &mut fields,
            secrets: &self.secrets,
        });
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Open {
                fields,
                started: Instant::now(),
            });
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(open) = span.extensions_mut().get_mut::<Open>()
        {
            values.record(&mut Fields {
                map: &mut open.fields,
                secrets: &self.secrets,
            });
        }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Map::new();
        event.record(&mut Fields {
            map: &mut fields,
            secrets: &self.secrets,
        });
        let metric = fields
            .keys()
            .find(|k| k.starts_with("histogram.") || k.starts_with("monotonic_counter."))
            .cloned();
        if let Some(metric) = metric {
            let value = fields.remove(&metric).unwrap_or(Value::Null);
            self.write(&json!({"metric": metric.split_once('.').map_or(metric.as_str(), |(_, m)| m), "value": value, "attributes": fields}));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(open) = span.extensions_mut().remove::<Open>() else {
            return;
        };
        let name = open
            .fields
            .get("otel.name")
            .and_then(Value::as_str)
            .unwrap_or(span.name())
            .to_owned();
        let mut fields = open.fields;
        fields.remove("otel.name");
        self.write(&json!({
            "span": name,
            "duration_ms": open.started.elapsed().as_secs_f64() * 1000.0,
            "attributes": fields,
        }));
    }
}
