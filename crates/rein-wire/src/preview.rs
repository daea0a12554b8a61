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
/// text is cut at a character boundary and `truncated` is set. A surface
/// shows the start and all of it on asking (`d`): a long line or the tail
/// of a big write is part of what the person decides on.
pub const MAX_PREVIEW_BYTES: usize = 1024 * 1024;

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

/// The most characters of a call's arguments a person is shown at once
/// (the rest is counted, never dropped silently).
pub const MAX_SHOWN_ARGUMENT_CHARS: usize = 4_000;

/// A call's arguments as a person is shown them before deciding: pretty
/// JSON, cut at `max_chars` characters with what was left out counted.
/// Written by the model: a surface makes it visible before it shows it.
pub fn arguments_text(arguments: &serde_json::Value, max_chars: usize) -> String {
    let text = serde_json::to_string_pretty(arguments).unwrap_or_else(|_| arguments.to_string());
    let total = text.chars().count();
    if total <= max_chars {
        return text;
    }
    let kept: String = text.chars().take(max_chars).collect();
    format!("{kept}\n… {} more characters", total - max_chars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_shown_whole_or_cut_with_the_rest_counted() {
        let args = serde_json::json!({"path": "/home/user/.bashrc", "text": "x".repeat(50)});
        let whole = arguments_text(&args, 1_000);
        assert!(whole.contains("/home/user/.bashrc") && whole.contains(&"x".repeat(50)));
        let cut = arguments_text(&args, 20);
        assert!(cut.starts_with(&whole.chars().take(20).collect::<String>()));
        let rest = whole.chars().count() - 20;
        assert!(cut.ends_with(&format!("… {rest} more characters")), "{cut}");
    }

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
