//! [`Standing`]: text the stable prefix carries that may change only
//! between turns — a product's pinned memory, say. It is read once at each
//! turn's start (and when a fresh process resumes an open turn); when it
//! differs from what the prefix holds, the prefix is frozen anew for that
//! turn and the person is told (`UiKind::CatalogChanged`). So the prompt
//! cache pays for a change once, at a turn boundary, and never within a
//! turn; the cache verdicts show it as a new prefix's `cold` call.
//!
//! The same source says, at the same moments, which texts the log holds
//! that must no longer reach the model ([`Standing::retracted`]: a memory
//! forgotten since it was remembered or recalled); each is left out of
//! every request from then on — the log keeps it, the provider never sees
//! it again, a resumed session included.
//!
//! Not here: where the text comes from (`rein-memory`'s pinned block, a
//! product's own), the prefix itself (`conversation::window`).

use std::sync::Arc;

use futures::future::BoxFuture;
use rein_wire::AgentError;

/// What stands where a retracted text was, in what the model is sent.
pub const RETRACTED: &str = "[forgotten]";

/// The shortest text masked as retracted.
pub const RETRACTED_MIN_CHARS: usize = 8;

/// The most bytes a standing block puts in the prompt; longer text is cut
/// there, with a note saying so.
pub const MAX_STANDING_BYTES: usize = 16 * 1024;

/// A source of standing text for the stable prefix.
pub trait Standing: Send + Sync {
    /// What it is, in what the person is told when it changed (`pinned
    /// memory`).
    fn name(&self) -> &str;

    /// The text now; `None` when there is none (no block in the prompt).
    fn read(&self) -> BoxFuture<'static, Result<Option<String>, AgentError>>;

    /// The texts `events` (the conversation's log) hold that must no
    /// longer reach the model, asked at each turn's start. Default: none.
    fn retracted(&self, _events: Arc<crate::Log>) -> BoxFuture<'static, Vec<String>> {
        Box::pin(async { Vec::new() })
    }
}

/// Several sources of standing text as one: their texts in order (each
/// left out when it has none), their retracted texts together.
pub struct Stacked {
    parts: Vec<Arc<dyn Standing>>,
    name: String,
}

impl Stacked {
    /// `parts` as one source, named by theirs.
    pub fn new(parts: Vec<Arc<dyn Standing>>) -> Stacked {
        let names: Vec<&str> = parts.iter().map(|p| p.name()).collect();
        let name = names.join(" or ");
        Stacked { parts, name }
    }
}

impl Standing for Stacked {
    fn name(&self) -> &str {
        &self.name
    }

    fn read(&self) -> BoxFuture<'static, Result<Option<String>, AgentError>> {
        let reads: Vec<_> = self.parts.iter().map(|s| s.read()).collect();
        Box::pin(async move {
            let mut texts = Vec::new();
            for read in reads {
                if let Some(text) = read.await? {
                    texts.push(text);
                }
            }
            Ok((!texts.is_empty()).then(|| texts.join("\n\n")))
        })
    }

    fn retracted(&self, events: Arc<crate::Log>) -> BoxFuture<'static, Vec<String>> {
        let asks: Vec<_> = self
            .parts
            .iter()
            .map(|s| s.retracted(events.clone()))
            .collect();
        Box::pin(async move {
            let mut all = Vec::new();
            for ask in asks {
                all.extend(ask.await);
            }
            all
        })
    }
}

/// `messages` with every retracted text (as written, and as written inside
/// JSON text) replaced by [`RETRACTED`]; a message without one is left as
/// it is (the same `Arc`).
pub(crate) fn without(messages: &mut [Arc<rein_wire::Message>], texts: &[String]) {
    // A text shorter than `RETRACTED_MIN_CHARS` is not masked: "tea" or
    // "e" forgotten would take every such word out of the conversation.
    let forms: Vec<String> = texts
        .iter()
        .filter(|t| t.chars().count() >= RETRACTED_MIN_CHARS)
        .flat_map(|t| {
            let quoted = serde_json::to_string(t).unwrap_or_default();
            let inner = quoted[1..quoted.len().saturating_sub(1).max(1)].to_owned();
            [t.clone(), inner]
        })
        .collect();
    if forms.is_empty() {
        return;
    }
    for message in messages {
        let Ok(mut value) = serde_json::to_value(&**message) else {
            continue;
        };
        if replaced(&mut value, &forms)
            && let Ok(masked) = serde_json::from_value(value)
        {
            *message = Arc::new(masked);
        }
    }
}

/// Replace each of `forms` in every string of `value`; `true` if any was.
fn replaced(value: &mut serde_json::Value, forms: &[String]) -> bool {
    match value {
        serde_json::Value::String(s) => {
            let mut hit = false;
            for form in forms.iter().filter(|f| !f.is_empty()) {
                if s.contains(form.as_str()) {
                    *s = s.replace(form.as_str(), RETRACTED);
                    hit = true;
                }
            }
            hit
        }
        // Every value is visited (no stopping at the first hit).
        serde_json::Value::Array(items) => {
            let mut hit = false;
            for item in items {
                hit |= replaced(item, forms);
            }
            hit
        }
        serde_json::Value::Object(map) => {
            let mut hit = false;
            for item in map.values_mut() {
                hit |= replaced(item, forms);
            }
            hit
        }
        _ => false,
    }
}

/// `text` within [`MAX_STANDING_BYTES`]: cut at a character boundary, with
/// a note, when longer.
pub(crate) fn bounded(text: String) -> String {
    if text.len() <= MAX_STANDING_BYTES {
        return text;
    }
    let mut end = MAX_STANDING_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[cut at {MAX_STANDING_BYTES} bytes]", &text[..end])
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{MAX_STANDING_BYTES, RETRACTED, bounded, without};

    #[test]
    fn a_retracted_text_is_left_out_wherever_it_stands() {
        let said = "Tea, not coffee \"always\"";
        let mut messages = vec![
            Arc::new(rein_wire::Message::user(format!("remember: {said}"))),
            Arc::new(rein_wire::Message::user(
                serde_json::json!({"items": [{"text": said}]}).to_string(),
            )),
            Arc::new(rein_wire::Message::user("nothing here")),
        ];
        let untouched = messages[2].clone();
        without(&mut messages, &[said.to_owned()]);
        for message in &messages {
            let shown = serde_json::to_string(&**message).unwrap();
            assert!(!shown.contains("not coffee"), "{shown}");
        }
        assert!(
            serde_json::to_string(&*messages[0])
                .unwrap()
                .contains(RETRACTED)
        );
        assert!(Arc::ptr_eq(&messages[2], &untouched));
        // A short forgotten text leaves the conversation's words alone.
        let before = messages[2].clone();
        without(&mut messages, &["here".to_owned()]);
        assert!(Arc::ptr_eq(&messages[2], &before));
    }

    #[test]
    fn a_long_text_is_cut_at_a_character_boundary_with_a_note() {
        let text = "é".repeat(MAX_STANDING_BYTES);
        let cut = bounded(text);
        assert!(cut.len() <= MAX_STANDING_BYTES + 40);
        assert!(cut.ends_with(&format!("[cut at {MAX_STANDING_BYTES} bytes]")));
        assert_eq!(bounded("short".into()), "short");
    }
}
