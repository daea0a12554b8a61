//! What a person is shown before deciding a call: a preview the tool makes
//! from the call's arguments and the world as it is when it is asked (a
//! unified diff of an edit, the start of a new file, what a delete
//! removes, or a product's own sentence).
//!
//! It is recorded with the approval request, so every surface — the
//! terminal now, a web page later — shows the same thing. Not here: how a
//! surface draws it (colour, paging), or who decides.

use serde::{Deserialize, Serialize};

/// The most bytes of preview text an approval request carries; past it the
/// text is cut at a character boundary and `truncated` is set.
pub const MAX_PREVIEW_BYTES: usize = 64 * 1024;

/// What kind of change a preview shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreviewKind {
    /// A unified diff of a file that exists (`---`/`+++`/`@@` lines).
    Diff,
    /// The first lines of a file that does not exist yet.
    NewFile,
    /// What a delete removes: the size and the first lines.
    Delete,
    /// A product's own words about the change.
    Text,
}

/// A change as a person is asked about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    /// What kind.
    pub kind: PreviewKind,
    /// What it is about (a path, a record), as the tool names it.
    pub subject: String,
    /// The text (bounded by [`MAX_PREVIEW_BYTES`]). Written from the
    /// model's arguments: a surface makes it visible before a terminal
    /// shows it.
    pub text: String,
    /// Whether the text was cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl Preview {
    /// A preview with `text` cut to [`MAX_PREVIEW_BYTES`].
    pub fn new(kind: PreviewKind, subject: impl Into<String>, text: impl Into<String>) -> Self {
        let mut text = text.into();
        let truncated = text.len() > MAX_PREVIEW_BYTES;
        if truncated {
            let mut end = MAX_PREVIEW_BYTES;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        Preview {
            kind,
            subject: subject.into(),
            text,
            truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_preview_is_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_PREVIEW_BYTES);
        let preview = Preview::new(PreviewKind::NewFile, "a.txt", long);
        assert!(preview.truncated);
        assert!(preview.text.len() <= MAX_PREVIEW_BYTES);
        assert!(preview.text.chars().all(|c| c == 'é'));
        let short = Preview::new(PreviewKind::Text, "tea", "450 → 500 cents");
        assert!(!short.truncated);
        let json = serde_json::to_string(&short).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"text","subject":"tea","text":"450 → 500 cents"}"#
        );
    }
}
