//! Bounded results: what reaches the model is small; the rest is offloaded.
//!
//! A result is serialised as JSON. If it is within [`Bounds`] (characters,
//! nesting depth, length of any one string) it goes to the model as is.
//! Otherwise the whole JSON text is stored as an artifact and the model gets
//! a stub: the artifact's hash and size, a preview, and how to page through
//! the rest with `read_result` (offset and length in characters).
//!
//! Images travel separately: a result object may carry `_images`, a list of
//! `{media_type, data}` (base64). They are kept out of the size accounting,
//! checked (an `image/*` type, at most [`MAX_IMAGES`] of at most
//! [`MAX_IMAGE_BYTES`] each) and put back under `_images` for the
//! transcript to send as image content.

use async_trait::async_trait;
use rein_wire::AgentError;
use serde_json::{Value, json};

/// Where an offloaded result is kept: content-addressed storage of one
/// method. A session store provides it (the runner adapts its `Store`), so
/// a tool author's crate needs no database.
#[async_trait]
pub trait ArtifactSink: Send + Sync {
    /// Keep `bytes` of `media_type`; the blake3 hash (hex) that names them.
    async fn put_artifact(&self, bytes: &[u8], media_type: &str) -> Result<String, AgentError>;
}

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

/// The most images one result may carry.
pub const MAX_IMAGES: usize = 4;
/// The largest image (base64 characters) one result may carry.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// Take the images out of a result, keeping the acceptable ones.
fn split_images(result: &mut Value) -> (Vec<Value>, usize) {
    let Some(images) = result.as_object_mut().and_then(|m| m.remove("_images")) else {
        return (Vec::new(), 0);
    };
    let all = images.as_array().cloned().unwrap_or_default();
    let total = all.len();
    let kept: Vec<Value> = all
        .into_iter()
        .filter(|img| {
            let media = img.get("media_type").and_then(Value::as_str).unwrap_or("");
            let data = img.get("data").and_then(Value::as_str).unwrap_or("");
            media.starts_with("image/") && !data.is_empty() && data.len() <= MAX_IMAGE_BYTES
        })
        .take(MAX_IMAGES)
        .collect();
    let dropped = total - kept.len();
    (kept, dropped)
}

/// The content for the model, and the artifact hash when offloaded.
pub async fn bound(
    store: &dyn ArtifactSink,
    mut result: Value,
    bounds: &Bounds,
) -> Result<(Value, Option<String>), AgentError> {
    let (images, dropped) = split_images(&mut result);
    let (mut content, artifact) = bound_json(store, result, bounds).await?;
    if !images.is_empty() || dropped > 0 {
        if !content.is_object() {
            content = json!({"result": content});
        }
        if let Some(map) = content.as_object_mut() {
            if !images.is_empty() {
                map.insert("_images".into(), Value::Array(images));
            }
            if dropped > 0 {
                map.insert(
                    "images_dropped".into(),
                    json!(format!("{dropped} image(s) were left out: not image/*, empty, over {MAX_IMAGE_BYTES} bytes, or beyond {MAX_IMAGES}")),
                );
            }
        }
    }
    Ok((content, artifact))
}

async fn bound_json(
    store: &dyn ArtifactSink,
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
        "artifact": artifact,
        "total_chars": total_chars,
        "preview": preview,
        "note": format!(
            "This result is {total_chars} characters, too large to show whole. Call read_result with this artifact and an offset and length (at most {} characters) to read it in parts.",
            bounds.max_chars
        ),
    });
    Ok((stub, Some(artifact)))
}
