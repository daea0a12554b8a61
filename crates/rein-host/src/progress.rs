//! What a hosted agent is doing, said without saying what it read or wrote.
//!
//! Every record a reducer takes in yields at least one [`Progress`] event:
//! liveness for a person watching (a model thinking for minutes, a
//! provider retrying, emits records and nothing else). The only text an
//! event carries is the model's name, a tool's name and one allow-listed
//! input of that tool ([`Progress::detail`]) — never a command line, a tool
//! result, thinking or the assistant's words — cleaned by [`clean`] (no
//! control bytes, one line, bounded) and, for paths, made relative to the
//! working directory by [`relative_path`].
//!
//! Not here: which input is allowed for which tool (each reducer's table),
//! or printing (the CLI's).

use std::fmt;
use std::path::Path;

/// A tool name or detail is cut to this many characters.
pub const MAX_VALUE_CHARS: usize = 120;

/// A failure's reason is cut to this many characters.
pub const MAX_REASON_CHARS: usize = 400;

/// What kind of thing happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgressKind {
    /// A turn began; the detail is the model's name when it was said.
    Started,
    /// The model is thinking (with the CLI's estimate of its tokens so far).
    Thinking {
        /// Estimated tokens, 0 when not said.
        tokens: u64,
    },
    /// The model wrote text (not shown).
    AssistantText,
    /// A tool call began.
    ToolStarted,
    /// A tool call finished.
    ToolFinished,
    /// A tool call failed.
    ToolFailed,
    /// The provider call is being retried ("attempt 2 of 10").
    ProviderRetry,
    /// A tool call was refused by the hosted agent's own permissions.
    Refused,
    /// Something happened (a notice, an unknown record, a skipped line).
    Activity,
    /// A turn ended with its result.
    TurnFinished,
    /// Loop detection's nudge: the same call got the same result again.
    Repeating,
    /// A person's words were recorded (the detail says whether the program
    /// heard them).
    Said,
}

/// One progress event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// What happened.
    pub kind: ProgressKind,
    /// The tool, when the event is about one ("" otherwise).
    pub tool: String,
    /// The one allow-listed detail ("" for none).
    pub detail: String,
}

impl Progress {
    /// An event with no tool and no detail.
    pub fn of(kind: ProgressKind) -> Self {
        Progress {
            kind,
            tool: String::new(),
            detail: String::new(),
        }
    }

    /// An event about `tool`, with its allow-listed `detail`.
    pub fn tool(kind: ProgressKind, tool: &str, detail: &str) -> Self {
        Progress {
            kind,
            tool: clean(tool, MAX_VALUE_CHARS),
            detail: clean(detail, MAX_VALUE_CHARS),
        }
    }

    /// An event with a detail and no tool.
    pub fn detail(kind: ProgressKind, detail: &str) -> Self {
        Progress {
            kind,
            tool: String::new(),
            detail: clean(detail, MAX_VALUE_CHARS),
        }
    }
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.kind {
            ProgressKind::Started => "started",
            ProgressKind::Thinking { .. } => "thinking",
            ProgressKind::AssistantText => "writing",
            ProgressKind::ToolStarted => "tool",
            ProgressKind::ToolFinished => "done",
            ProgressKind::ToolFailed => "failed",
            ProgressKind::ProviderRetry => "retrying",
            ProgressKind::Refused => "refused",
            ProgressKind::Activity => "…",
            ProgressKind::TurnFinished => "turn finished",
            ProgressKind::Repeating => "repeating: the same call got the same result again",
            ProgressKind::Said => "said",
        };
        f.write_str(what)?;
        if let ProgressKind::Thinking { tokens } = self.kind
            && tokens > 0
        {
            write!(f, " (~{tokens} tokens)")?;
        }
        if !self.tool.is_empty() {
            write!(f, " {}", self.tool)?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// `text` safe to show and store: control and invisible characters made
/// visible, newlines folded to spaces, at most `max` characters (an
/// ellipsis says it was cut).
pub fn clean(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\t' { ' ' } else { c })
        .collect();
    let shown = rein_wire::visible::visible(one_line.trim());
    if shown.chars().count() <= max {
        return shown.into_owned();
    }
    let mut cut: String = shown.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// [`clean`] of a JSON value when it is a string, "" otherwise.
pub fn clean_value(value: Option<&serde_json::Value>, max: usize) -> String {
    value
        .and_then(serde_json::Value::as_str)
        .map(|s| clean(s, max))
        .unwrap_or_default()
}

/// `path` relative to `cwd` when it is inside it; a path outside keeps
/// only its file name (where the agent's files live is not progress).
pub fn relative_path(path: &str, cwd: &str) -> String {
    let p = Path::new(path);
    if p.is_relative() {
        return clean(path, MAX_VALUE_CHARS);
    }
    if !cwd.is_empty()
        && let Ok(rest) = p.strip_prefix(cwd)
    {
        let rest = rest.to_string_lossy();
        return clean(if rest.is_empty() { "." } else { &rest }, MAX_VALUE_CHARS);
    }
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    clean(&format!("…/{name}"), MAX_VALUE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_is_one_visible_bounded_line() {
        assert_eq!(clean("a\nb\x1b[2J", 100), "a b^[[2J");
        let long = "x".repeat(500);
        assert_eq!(clean(&long, 10).chars().count(), 10);
        assert!(clean(&long, 10).ends_with('…'));
    }

    #[test]
    fn paths_are_relative_to_the_working_directory() {
        assert_eq!(relative_path("/w/p/src/a.rs", "/w/p"), "src/a.rs");
        assert_eq!(relative_path("/home/me/.ssh/id_rsa", "/w/p"), "…/id_rsa");
        assert_eq!(relative_path("src/b.rs", "/w/p"), "src/b.rs");
        assert_eq!(relative_path("/w/p", "/w/p"), ".");
    }
}
