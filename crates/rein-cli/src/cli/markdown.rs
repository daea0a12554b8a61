//! Markdown in an answer, styled for a terminal as it streams: fenced code
//! blocks dimmed between rules, `# headings` and `**bold**` in bold,
//! `` `code` `` in cyan, `- ` / `* ` list items as bullets. Decided a
//! character at a time (holding back at most a marker it cannot judge
//! yet), so the answer still appears as it is written.
//!
//! Only for a terminal: piped output stays the model's plain text. The
//! text given here has already been made visible; the only escapes in the
//! output are this module's own.
//!
//! Not here: making model text safe (`rein::wire::visible`).

const BOLD: &str = "\x1b[1m";
const CODE: &str = "\x1b[36m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// The styling state of one answer.
#[derive(Debug, Default)]
pub struct Styler {
    /// Characters of the current line not yet decided (a line's start, a
    /// lone `*` or `` ` ``).
    held: String,
    /// Whether the current line has begun (its start was judged).
    in_line: bool,
    /// Inside a fenced code block.
    fenced: bool,
    /// Inside `**bold**` / `` `code` `` on this line.
    bold: bool,
    code: bool,
    /// Whether this line is a heading (bold to its end).
    heading: bool,
}

impl Styler {
    /// Style `text`, the next piece of the answer.
    pub fn push(&mut self, text: &str) -> String {
        let mut out = String::new();
        for c in text.chars() {
            self.held.push(c);
            self.settle(&mut out, false);
        }
        out
    }

    /// The answer ended: whatever is held goes out, and styles are closed.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        self.settle(&mut out, true);
        if self.bold || self.code || self.heading || self.fenced {
            out.push_str(RESET);
        }
        *self = Styler::default();
        out
    }

    fn settle(&mut self, out: &mut String, end: bool) {
        loop {
            if !self.in_line {
                if !self.judge_line_start(out, end) {
                    return;
                }
                continue;
            }
            let Some(c) = self.held.chars().next() else {
                return;
            };
            if c == '\n' {
                self.held.remove(0);
                if self.bold || self.code || self.heading {
                    out.push_str(RESET);
                    if self.fenced {
                        out.push_str(DIM);
                    }
                }
                self.bold = false;
                self.code = false;
                self.heading = false;
                self.in_line = false;
                out.push('\n');
                continue;
            }
            if self.fenced {
                self.held.remove(0);
                out.push(c);
                continue;
            }
            match c {
                '*' => {
                    if self.held.len() < 2 && !end {
                        return;
                    }
                    if self.held.starts_with("**") {
                        self.held.drain(..2);
                        self.bold = !self.bold;
                        out.push_str(if self.bold { BOLD } else { RESET });
                        self.restyle(out);
                    } else {
                        self.held.remove(0);
                        out.push('*');
                    }
                }
                '`' => {
                    self.held.remove(0);
                    self.code = !self.code;
                    out.push_str(if self.code { CODE } else { RESET });
                    self.restyle(out);
                }
                _ => {
                    self.held.remove(0);
                    out.push(c);
                }
            }
        }
    }

    /// After a reset, the styles still open come back.
    fn restyle(&self, out: &mut String) {
        if (self.bold || self.heading) && !out.ends_with(BOLD) {
            out.push_str(BOLD);
        }
        if self.code && !out.ends_with(CODE) {
            out.push_str(CODE);
        }
    }

    /// Decide what the held start of a line is; `false` when more text is
    /// needed first.
    fn judge_line_start(&mut self, out: &mut String, end: bool) -> bool {
        let held = self.held.as_str();
        let trimmed = held.trim_start_matches(' ');
        let complete = held.contains('\n') || end;
        if trimmed.starts_with("```")
            || (!complete && "```".starts_with(trimmed) && !trimmed.is_empty())
        {
            if !complete {
                return false;
            }
            // A fence line: shown as a dim rule, with its language.
            let line_end = held.find('\n').unwrap_or(held.len());
            let lang = held[..line_end].trim().trim_start_matches('`').to_owned();
            self.held.drain(..line_end);
            self.fenced = !self.fenced;
            out.push_str(DIM);
            out.push_str(&format!("──── {lang}"));
            if !self.fenced {
                out.push_str(RESET);
            }
            self.in_line = true;
            return true;
        }
        if trimmed.is_empty() && !complete {
            return false;
        }
        if !self.fenced {
            if trimmed.starts_with('#') {
                let hashes = trimmed.len() - trimmed.trim_start_matches('#').len();
                let after = &trimmed[hashes..];
                if after.is_empty() && !complete {
                    return false;
                }
                if after.starts_with(' ') {
                    let skip = held.len() - after.len() + 1;
                    self.held.drain(..skip);
                    self.heading = true;
                    out.push_str(BOLD);
                }
            } else if trimmed.len() < 2 && !complete && (trimmed == "-" || trimmed == "*") {
                return false;
            } else if trimmed.starts_with("- ")
                || (trimmed.starts_with("* ") && !trimmed.starts_with("**"))
            {
                let indent = held.len() - trimmed.len();
                self.held.replace_range(indent..indent + 2, "• ");
            }
        }
        self.in_line = true;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Styled in one piece and a character at a time: the same output.
    fn styled(text: &str) -> String {
        let mut whole = Styler::default();
        let all = whole.push(text) + &whole.finish();
        let mut bit = Styler::default();
        let mut pieces: String = text.chars().map(|c| bit.push(&c.to_string())).collect();
        pieces.push_str(&bit.finish());
        assert_eq!(all, pieces, "streaming changed the styling of {text:?}");
        all
    }

    #[test]
    fn bold_code_headings_and_bullets_are_styled() {
        assert_eq!(styled("a **b** c\n"), "a \x1b[1mb\x1b[0m c\n");
        assert_eq!(styled("run `ls` now\n"), "run \x1b[36mls\x1b[0m now\n");
        assert_eq!(styled("# Title\n"), "\x1b[1mTitle\x1b[0m\n");
        assert_eq!(styled("- one\n  * two\n"), "• one\n  • two\n");
        // A lone star is a star.
        assert_eq!(styled("2 * 3 = 6\n"), "2 * 3 = 6\n");
    }

    #[test]
    fn a_fenced_block_is_dim_between_rules() {
        let out = styled("see:\n```rust\nfn main() {}\n```\ndone\n");
        assert_eq!(
            out,
            "see:\n\x1b[2m──── rust\nfn main() {}\n\x1b[2m──── \x1b[0m\ndone\n"
        );
    }

    #[test]
    fn an_unfinished_answer_closes_its_styles() {
        assert_eq!(styled("**half"), "\x1b[1mhalf\x1b[0m");
        assert_eq!(styled("-"), "-");
    }
}
