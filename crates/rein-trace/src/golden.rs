//! Golden traces: a session's log as canonical JSONL, volatile values
//! replaced by stable tokens, and back.
//!
//! The first line is a header (`{"format":"rein-golden","version":1}`);
//! each further line is one event: `{"agent":…,"data":…,"kind":…,
//! "seq":…,"version":…}` in RFC 8785 canonical form. What changes from one
//! run to the next is tokenised:
//! - ids — string values under the keys in [`ID_KEYS`] — become `<id:N>`,
//!   numbered by first appearance, so references between events survive;
//! - the time of each event is left out;
//! - durations (`latency_ms`, `duration_ms`) become `<duration>`;
//! - request digests (which hash content that includes ids) become `<digest>`.
//!
//! Import appends the events to a new session with fresh ids for the
//! tokens (the same token, the same id) and zero durations, so exporting
//! an imported trace gives the same bytes.

use std::collections::HashMap;

use rein_sessions::{Event, NewEvent, Store, StoredEvent};
use rein_wire::{AgentError, canonical, error::codes};
use serde_json::{Map, Value, json};

/// Keys whose string values are ids.
pub const ID_KEYS: &[&str] = &[
    "approval_id",
    "call_id",
    "from_turn",
    "id",
    "operation_id",
    "parent",
    "parent_session",
    "run_id",
    "session",
    "session_id",
    "tool_use_id",
    "turn_id",
];

/// Keys whose values are durations.
pub const DURATION_KEYS: &[&str] = &["duration_ms", "latency_ms"];

/// Keys whose values are digests of content that includes ids (and so
/// change with them); they are left out of comparisons.
pub const DIGEST_KEYS: &[&str] = &["request_digest"];
const DIGEST: &str = "<digest>";

const HEADER: &str = r#"{"format":"rein-golden","version":1}"#;
const DURATION: &str = "<duration>";

#[derive(Default)]
struct Tokens {
    by_value: HashMap<String, String>,
}

impl Tokens {
    fn token(&mut self, value: &str) -> String {
        let next = self.by_value.len() + 1;
        self.by_value
            .entry(value.to_owned())
            .or_insert_with(|| format!("<id:{next}>"))
            .clone()
    }
}

fn normalise(value: &mut Value, tokens: &mut Tokens) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if ID_KEYS.contains(&key.as_str())
                    && let Value::String(s) = v
                {
                    *s = tokens.token(s);
                    continue;
                }
                if DURATION_KEYS.contains(&key.as_str()) && v.is_number() {
                    *v = Value::String(DURATION.into());
                    continue;
                }
                if DIGEST_KEYS.contains(&key.as_str()) && v.is_string() {
                    *v = Value::String(DIGEST.into());
                    continue;
                }
                normalise(v, tokens);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| normalise(v, tokens)),
        _ => {}
    }
}

/// Export a session's events as a golden trace.
pub fn export(events: &[StoredEvent]) -> Result<String, AgentError> {
    let mut tokens = Tokens::default();
    let mut out = String::from(HEADER);
    out.push('\n');
    for stored in events {
        let mut data = stored.event.data();
        // The importer's own mark is not part of the history: a trace
        // exported again is the trace that was imported.
        if let Event::SessionCreated { .. } = stored.event
            && let Some(metadata) = data.get_mut("metadata").and_then(Value::as_object_mut)
        {
            metadata.remove(rein_sessions::recovery::IMPORTED);
        }
        normalise(&mut data, &mut tokens);
        let line = json!({
            "seq": stored.seq,
            "agent": stored.agent_path,
            "kind": stored.event.kind(),
            "version": stored.event.version(),
            "data": data,
        });
        out.push_str(&canonical::to_string(&line)?);
        out.push('\n');
    }
    Ok(out)
}

fn invalid(line: usize, why: impl std::fmt::Display) -> AgentError {
    AgentError::new(codes::GOLDEN_TRACE_INVALID, format!("line {line}: {why}"))
        .with_field("line", line)
}

/// One event of a golden trace, tokens still in place.
#[derive(Debug, Clone, PartialEq)]
pub struct GoldenEvent {
    /// Its sequence number in the trace.
    pub seq: u64,
    /// The agent that wrote it.
    pub agent: String,
    /// Its kind.
    pub kind: String,
    /// Its version.
    pub version: u32,
    /// Its data, tokens in place.
    pub data: Value,
}

/// Parse a golden trace. Every line must be canonical, sequence numbers
/// must run 1, 2, 3, … and the first event must be `session.created`.
pub fn parse(text: &str) -> Result<Vec<GoldenEvent>, AgentError> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, HEADER)) => {}
        _ => return Err(invalid(1, format!("the first line must be {HEADER}"))),
    }
    let mut events = Vec::new();
    for (i, line) in lines {
        let n = i + 1;
        if line.is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_str(line).map_err(|e| invalid(n, format!("not JSON: {e}")))?;
        if canonical::to_string(&value)? != line {
            return Err(invalid(n, "not in canonical form (RFC 8785)"));
        }
        let seq = value["seq"]
            .as_u64()
            .ok_or_else(|| invalid(n, "no `seq`"))?;
        if seq != events.len() as u64 + 1 {
            return Err(invalid(n, format!("`seq` {seq} breaks the sequence")));
        }
        let event = GoldenEvent {
            seq,
            agent: value["agent"]
                .as_str()
                .ok_or_else(|| invalid(n, "no `agent`"))?
                .to_owned(),
            kind: value["kind"]
                .as_str()
                .ok_or_else(|| invalid(n, "no `kind`"))?
                .to_owned(),
            version: value["version"]
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| invalid(n, "no `version`"))?,
            data: value.get("data").cloned().unwrap_or(Value::Null),
        };
        events.push(event);
    }
    match events.first() {
        Some(first) if first.kind == "session.created" => Ok(events),
        _ => Err(invalid(2, "the first event must be session.created")),
    }
}

fn restore(value: &mut Value, ids: &mut HashMap<String, String>) {
    match value {
        Value::Object(map) => {
            let map: &mut Map<String, Value> = map;
            for (key, v) in map.iter_mut() {
                if ID_KEYS.contains(&key.as_str())
                    && let Value::String(s) = v
                    && s.starts_with("<id:")
                {
                    *s = ids
                        .entry(s.clone())
                        .or_insert_with(rein_wire::ids::new_id)
                        .clone();
                    continue;
                }
                if DURATION_KEYS.contains(&key.as_str()) && v.as_str() == Some(DURATION) {
                    *v = json!(0);
                    continue;
                }
                restore(v, ids);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| restore(v, ids)),
        _ => {}
    }
}

/// Import a golden trace into `store` as a new session; returns its id.
pub async fn import(store: &dyn Store, text: &str) -> Result<String, AgentError> {
    import_from(store, text, json!("golden trace"), Map::new()).await
}

/// [`import`], the import marked as coming `from` where it came from, with
/// `more` metadata over the trace's own (a fork's origin).
pub(crate) async fn import_from(
    store: &dyn Store,
    text: &str,
    from: Value,
    more: Map<String, Value>,
) -> Result<String, AgentError> {
    let events = parse(text)?;
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut restored: Vec<(String, Event)> = Vec::with_capacity(events.len());
    for golden in events {
        let mut data = golden.data;
        restore(&mut data, &mut ids);
        restored.push((
            golden.agent,
            Event::from_parts(&golden.kind, golden.version, data),
        ));
    }
    let (_, first) = restored.remove(0);
    let metadata = match first {
        Event::SessionCreated { metadata } => metadata,
        _ => Value::Null,
    };
    // Marked by the importer, whatever the trace says: everything up to
    // here is evidence, never authority (`recovery::imported_through`).
    let through_seq = restored.len() as u64 + 1;
    let mut metadata = match metadata {
        Value::Object(map) => map,
        other => serde_json::Map::from_iter([("metadata".to_owned(), other)]),
    };
    metadata.extend(more);
    metadata.insert(
        rein_sessions::recovery::IMPORTED.to_owned(),
        json!({"through_seq": through_seq, "from": from}),
    );
    let session = store.create_session(Value::Object(metadata)).await?;
    if session.head_seq + restored.len() as u64 != through_seq {
        return Err(AgentError::new(
            codes::INTERNAL,
            "a new session did not start with exactly its `session.created`",
        ));
    }
    let lease = store
        .acquire(
            &session.id,
            "golden-trace import",
            std::time::Duration::from_secs(300),
        )
        .await?;
    let batch: Vec<NewEvent> = restored
        .into_iter()
        .map(|(agent_path, event)| NewEvent { agent_path, event })
        .collect();
    let result = store.append(&lease, batch).await;
    store.release(&lease).await?;
    result?;
    Ok(session.id)
}
