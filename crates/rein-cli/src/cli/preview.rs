//! A change preview drawn for the terminal: every line made visible first
//! (the text came from the model's arguments), then coloured — `+` green,
//! `-` red, `@@` cyan — when the terminal takes colour; at most
//! [`SHOWN_LINES`] lines, the whole text one key away.
//!
//! Not here: making the preview (the tools), or asking (the chat).

use rein::wire::{Preview, PreviewKind, visible::visible};

/// Lines of a preview shown before the person asks for the rest.
pub const SHOWN_LINES: usize = 40;

/// Whether the person's terminal takes colour on the status stream
/// (`NO_COLOR` says no).
pub fn colour_wanted() -> bool {
    styled(&std::io::stderr())
}

/// Whether `stream` is a terminal that takes colour (`NO_COLOR` says no):
/// the one rule for every style rein draws.
pub fn styled(stream: &impl std::io::IsTerminal) -> bool {
    stream.is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// The preview as terminal lines, and how many were left out (`all` shows
/// every line).
pub fn render(preview: &Preview, colour: bool, all: bool) -> (String, usize) {
    let lines: Vec<&str> = preview.text.lines().collect();
    let shown = if all {
        lines.len()
    } else {
        lines.len().min(SHOWN_LINES)
    };
    let mut out = String::new();
    for line in &lines[..shown] {
        let safe = visible(line);
        let paint = match preview.kind {
            PreviewKind::Diff if line.starts_with("+++") || line.starts_with("---") => "1",
            PreviewKind::Diff if line.starts_with('+') => "32",
            PreviewKind::Diff if line.starts_with('-') => "31",
            PreviewKind::Diff if line.starts_with("@@") => "36",
            _ => "",
        };
        if colour && !paint.is_empty() {
            out.push_str(&format!("    \x1b[{paint}m{safe}\x1b[0m\n"));
        } else {
            out.push_str(&format!("    {safe}\n"));
        }
    }
    if preview.truncated && (all || shown == lines.len()) {
        out.push_str(&format!(
            "    … (the preview was cut at {} KiB)\n",
            rein::wire::MAX_PREVIEW_BYTES / 1024
        ));
    }
    (out, lines.len() - shown)
}

/// What a person is shown of a call waiting for them, for a plain text
/// surface (`rein approve SESSION`, `rein mcp serve`'s line): the preview
/// its tool made, else its arguments — bounded and made visible.
pub fn asked_lines(tool: &str, arguments: &serde_json::Value, preview: Option<&Preview>) -> String {
    let fallback;
    let shown = match preview {
        Some(preview) => preview,
        None => {
            fallback = Preview::new(
                PreviewKind::Text,
                tool,
                rein::wire::arguments_text(arguments, rein::wire::MAX_SHOWN_ARGUMENT_CHARS),
            );
            &fallback
        }
    };
    let (lines, hidden) = render(shown, false, false);
    let mut lines = format!(
        "    {}\n{lines}",
        rein::wire::visible::one_line(&shown.subject, 400)
    );
    if hidden > 0 {
        lines.push_str(&format!("    … {hidden} more lines\n"));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_text_is_made_visible_before_it_is_coloured() {
        let preview = Preview::new(
            PreviewKind::Diff,
            "a",
            "@@ -1 +1 @@\n-old\n+new \x1b]0;owned\x07\n",
        );
        let (plain, hidden) = render(&preview, false, false);
        assert_eq!(hidden, 0);
        assert!(!plain.contains('\x1b'), "{plain:?}");
        assert!(plain.contains("+new ^[]0;owned^G"), "{plain:?}");
        let (coloured, _) = render(&preview, true, false);
        // The only escapes are rein's own colours.
        assert_eq!(coloured.matches('\x1b').count(), 6, "{coloured:?}");
        assert!(
            coloured.contains("\x1b[32m+new ^[]0;owned^G\x1b[0m"),
            "{coloured:?}"
        );
    }

    #[test]
    fn a_long_preview_shows_its_first_lines_and_counts_the_rest() {
        let text: String = (0..100).map(|i| format!("+line {i}\n")).collect();
        let preview = Preview::new(PreviewKind::Diff, "a", text);
        let (shown, hidden) = render(&preview, false, false);
        assert_eq!((shown.lines().count(), hidden), (SHOWN_LINES, 60));
        let (all, hidden) = render(&preview, false, true);
        assert_eq!((all.lines().count(), hidden), (100, 0));
    }
}
