//! Bounded results: what reaches the model is small; the rest is offloaded.
//!
//! A result is serialised as JSON. If it is within [`Bounds`] (characters,
//! nesting depth, length of any one string) it goes to the model as is.
//! Otherwise the whole JSON text is stored as an artifact and the model gets
//! a stub: the artifact's hash and size, a preview, and how to page through
//! the rest with `read_result` (offset and length in characters).

use rein_sessions::Store;
use rein_wire::AgentError;
use serde_json::{Value, json};

/// Limits on what goes to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Characters of serialised JSON.
    pub max_chars: usize,
    /// Nesting depth.
    pub max_depth: usize,
    /// Characters in any one string.
    pub max_string: usize,
    /// Characters of preview in a stub.
    pub preview_chars: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_chars: 16_000,
            max_depth: 20,
            max_string: 8_000,
            preview_chars: 1_000,
        }
    }
}

fn within(value: &Value, bounds: &Bounds, depth: usize) -> bool {
    if depth > bounds.max_depth {
        return false;
    }
    match value {
        Value::String(s) => s.chars().count() <= bounds.max_string,
        Value::Array(items) => items.iter().all(|v| within(v, bounds, depth + 1)),
        Value::Object(map) => map.values().all(|v| within(v, bounds, depth + 1)),
        _ => true,
    }
}

/// The content for the model, and the artifact hash when offloaded.
pub async fn bound(
    store: &dyn Store,
    result: Value,
    bounds: &Bounds,
) -> Result<(Value, Option<String>), AgentError> {
    let text = serde_json::to_string(&result).unwrap_or_default();
    if text.chars().count() <= bounds.max_chars && within(&result, bounds, 0) {
        return Ok((result, None));
    }
    let artifact = store
        .put_artifact(text.as_bytes(), "application/json")
        .await?;
    let preview: String = text.chars().take(bounds.preview_chars).collect();
    let total_chars = text.chars().count();
    let stub = json!({
        "offloaded": true,
        "artifact": artifact.hash,
        "total_chars": total_chars,
        "preview": preview,
        "note": format!(
            "This result is {total_chars} characters, too large to show whole. Call read_result with this artifact and an offset and length (at most {} characters) to read it in parts.",
            bounds.max_chars
        ),
    });
    Ok((stub, Some(artifact.hash)))
}
