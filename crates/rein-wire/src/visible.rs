//! Text someone else wrote, made safe to show on a terminal.
//!
//! A model (or a tool, or a file it read) can put terminal control bytes in
//! its text: ESC and OSC sequences that retitle the window, erase lines or
//! move the cursor, a bare `\r` that overprints a line, BiDi overrides that
//! make `txt.exe` read as `exe.txt`. [`visible`] maps each such character to
//! a printable stand-in, one character at a time (so streamed deltas can be
//! mapped as they arrive): C0 controls and DEL in caret notation (`^[`,
//! `^M`, `^?`), C1 controls and invisible format characters as `<U+XXXX>`.
//! Newline and tab are kept.
//!
//! Not here: deciding what to show, or escaping for HTML or JSON (those
//! have their own encoders).

use std::borrow::Cow;

/// Whether `c` must not reach a terminal as it is.
pub fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c,
            '\u{00ad}'                 // soft hyphen
            | '\u{034f}'               // combining grapheme joiner
            | '\u{061c}'               // Arabic letter mark
            | '\u{115f}' | '\u{1160}'  // Hangul fillers
            | '\u{17b4}' | '\u{17b5}'  // Khmer inherent vowels
            | '\u{180b}'..='\u{180f}'  // Mongolian selectors and vowel separator
            | '\u{200b}'..='\u{200f}'  // zero-width spaces and joiners, LRM, RLM
            | '\u{2028}' | '\u{2029}'  // line and paragraph separators
            | '\u{202a}'..='\u{202e}'  // BiDi embeddings and overrides
            | '\u{2060}'..='\u{2069}'  // word joiner, invisible operators, BiDi isolates
            | '\u{3164}'               // Hangul filler
            | '\u{feff}'               // zero-width no-break space
            | '\u{ffa0}'               // halfwidth Hangul filler
            | '\u{fff9}'..='\u{fffb}'  // interlinear annotation
            | '\u{1d173}'..='\u{1d17a}' // musical formatting
            | '\u{e0000}'..='\u{e007f}' // tags
        )
}

/// `text` with every unsafe character made visible (borrowed when there is
/// none, the common case).
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !is_unsafe(c) {
            out.push(c);
        } else if (c as u32) < 0x20 {
            out.push('^');
            out.push(char::from(b'@' + c as u8));
        } else if c == '\u{7f}' {
            out.push_str("^?");
        } else {
            out.push_str(&format!("<U+{:04X}>", c as u32));
        }
    }
    Cow::Owned(out)
}

/// A name someone else chose (a client's, a peer's) as one safe line: every
/// unsafe character made visible, newlines and tabs too (`^J`, `^I`), so it
/// cannot forge the next line of a transcript; cut at `max_chars`.
pub fn one_line(text: &str, max_chars: usize) -> String {
    let cut: String = text.chars().take(max_chars).collect();
    visible(&cut).replace('\n', "^J").replace('\t', "^I")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_one_line() {
        assert_eq!(
            one_line("evil\n  approval approved by terminal\t\u{1b}", 100),
            "evil^J  approval approved by terminal^I^["
        );
        assert_eq!(one_line("abcdef", 3), "abc");
    }

    #[test]
    fn controls_are_shown_not_sent() {
        assert!(matches!(
            visible("plain text\n\twith tabs"),
            Cow::Borrowed(_)
        ));
        assert_eq!(visible("\u{1b}]0;title\u{7}"), "^[]0;title^G");
        assert_eq!(visible("a\rb\u{7f}"), "a^Mb^?");
        assert_eq!(visible("\u{9b}31m"), "<U+009B>31m");
        assert_eq!(
            visible("\u{202e}txt.exe\u{2066}"),
            "<U+202E>txt.exe<U+2066>"
        );
        assert_eq!(visible("ünïcödé 日本 🦀"), "ünïcödé 日本 🦀");
        // Drawn as nothing, so a name would read as another.
        assert_eq!(
            visible("notes\u{e0069}\u{3164}\u{ad}\u{180e}\u{34f}.md"),
            "notes<U+E0069><U+3164><U+00AD><U+180E><U+034F>.md"
        );
    }

    #[test]
    fn nothing_unsafe_survives_any_input() {
        for code in 0..=0x10ffffu32 {
            let Some(c) = char::from_u32(code) else {
                continue;
            };
            let shown = visible(&c.to_string()).into_owned();
            assert!(!shown.chars().any(is_unsafe), "{code:#x} -> {shown:?}");
        }
    }
}
