//! [`Standing`]: text the stable prefix carries that may change only
//! between turns — a product's pinned memory, say. It is read once at each
//! turn's start (and when a fresh process resumes an open turn); when it
//! differs from what the prefix holds, the prefix is frozen anew for that
//! turn and the person is told (`UiKind::CatalogChanged`). So the prompt
//! cache pays for a change once, at a turn boundary, and never within a
//! turn; the cache verdicts show it as a new prefix's `cold` call.
//!
//! Not here: where the text comes from (`rein-memory`'s pinned block, a
//! product's own), the prefix itself (`conversation::window`).

use futures::future::BoxFuture;
use rein_wire::AgentError;

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
    use super::{MAX_STANDING_BYTES, bounded};

    #[test]
    fn a_long_text_is_cut_at_a_character_boundary_with_a_note() {
        let text = "é".repeat(MAX_STANDING_BYTES);
        let cut = bounded(text);
        assert!(cut.len() <= MAX_STANDING_BYTES + 40);
        assert!(cut.ends_with(&format!("[cut at {MAX_STANDING_BYTES} bytes]")));
        assert_eq!(bounded("short".into()), "short");
    }
}
