//! `edit_file` — exact-string edits to a file of the project, several in
//! one call, applied all or nothing — and the previews a person approves:
//! a unified diff of a change to a file that exists, the start of a new
//! file, what a delete removes.
//!
//! Not here: the confinement (`root`): every read and write goes through
//! it, on the path actually opened.

use std::sync::Arc;

use rein_tools::PermissionClass;
use rein_tools::{Outcome, Tool, ToolContext};
use rein_wire::{AgentError, Preview, PreviewKind, error::codes};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::find::{occurrences, whole_occurrences};
use super::{Refused, Root};

/// One replacement.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Edit {
    /// The exact text to replace, with enough surrounding lines that it
    /// occurs exactly once in the file (as the earlier edits of this call
    /// left it).
    pub old_text: String,
    /// What replaces it.
    pub new_text: String,
}

/// Which file, and the edits to make to it.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditArgs {
    /// The path, relative to the project root.
    pub path: String,
    /// The replacements, applied in order; if any does not apply, none is.
    pub edits: Vec<Edit>,
}

/// The text after the edits, and what was repaired on the way.
#[derive(Debug)]
pub struct Applied {
    /// The file's new text.
    pub text: String,
    /// Each edit whose `old_text` matched only with whitespace ignored.
    pub repaired: Vec<String>,
}

/// `text` with `edits` applied in order. Each `old_text` must occur exactly
/// once in the text as the earlier edits left it — or, when it occurs
/// nowhere, match exactly one run of lines with whitespace ignored (a
/// repair, said in [`Applied::repaired`]); otherwise nothing is changed and
/// the error says which edit and how many matches it found.
///
/// A file whose every line ends `\r\n` keeps them: the edits are made on
/// its text with plain line ends (the model's `\n` then matches) and every
/// line end written back as `\r\n` — never a mix the diff would hide.
pub fn apply(path: &str, text: &str, edits: &[Edit]) -> Result<Applied, AgentError> {
    let crlf = text.contains("\r\n") && text.matches('\n').count() == text.matches("\r\n").count();
    if !crlf {
        return apply_as_is(path, text, edits);
    }
    let plain = |t: &str| t.replace("\r\n", "\n");
    let edits: Vec<Edit> = edits
        .iter()
        .map(|e| Edit {
            old_text: plain(&e.old_text),
            new_text: plain(&e.new_text),
        })
        .collect();
    let mut applied = apply_as_is(path, &plain(text), &edits)?;
    applied.text = applied.text.replace('\n', "\r\n");
    Ok(applied)
}

fn apply_as_is(path: &str, text: &str, edits: &[Edit]) -> Result<Applied, AgentError> {
    let invalid = |why: String| AgentError::new(codes::TOOL_ARGUMENTS_INVALID, why);
    if edits.is_empty() {
        return Err(invalid("give at least one edit".into()));
    }
    let total = edits.len();
    let mut text = text.to_owned();
    let mut repaired = Vec::new();
    for (i, edit) in edits.iter().enumerate() {
        let n = i + 1;
        if edit.old_text.is_empty() {
            return Err(invalid(format!(
                "edit {n} of {total}: `old_text` is empty; to add text, give a line that is already in the file as `old_text` and that line followed by the new text as `new_text`"
            )));
        }
        if edit.old_text == edit.new_text {
            return Err(invalid(format!("edit {n} of {total} changes nothing")));
        }
        let found = occurrences(&text, &edit.old_text);
        match found.as_slice() {
            [at] => text.replace_range(*at..*at + edit.old_text.len(), &edit.new_text),
            [] => match super::loose::find(&text, &edit.old_text).as_slice() {
                [range] => {
                    let mut new = super::loose::reindent(
                        &edit.new_text,
                        &edit.old_text,
                        &text[range.clone()],
                    );
                    if edit.old_text.ends_with('\n') && new.ends_with('\n') {
                        new.pop();
                    }
                    let line = text[..range.start].matches('\n').count() + 1;
                    let lines = text[range.clone()].matches('\n').count();
                    repaired.push(format!(
                        "edit {n} of {total}: `old_text` matched lines {line}-{} only with whitespace ignored",
                        line + lines
                    ));
                    text.replace_range(range.clone(), &new);
                }
                [] if whole_occurrences(&text, &edit.new_text) == 1 => {
                    return Err(AgentError::new(
                        codes::EDIT_ALREADY_MADE,
                        format!(
                            "edit {n} of {total} is already made: `new_text` is in `{path}` and `old_text` is not (nothing was changed; the file already holds this change, so do not make it again). {}",
                            around(&text, &edit.new_text)
                        ),
                    ));
                }
                [] => return Err(no_match(path, n, total)),
                many => {
                    return Err(AgentError::new(
                        codes::EDIT_AMBIGUOUS,
                        format!(
                            "edit {n} of {total}: `old_text` does not occur in `{path}` as given, and matches {} places with whitespace ignored (nothing was changed; read the file again and copy the text exactly)",
                            many.len()
                        ),
                    ));
                }
            },
            many => {
                return Err(AgentError::new(
                    codes::EDIT_AMBIGUOUS,
                    format!(
                        "edit {n} of {total}: `old_text` occurs {} times in `{path}` (nothing was changed; include more of the surrounding lines so it occurs once)",
                        many.len()
                    ),
                ));
            }
        }
    }
    Ok(Applied { text, repaired })
}

/// Edit `n` of `total` found nothing, even with whitespace ignored.
fn no_match(path: &str, n: usize, total: usize) -> AgentError {
    let after = if n > 1 {
        " after the edits before it"
    } else {
        ""
    };
    AgentError::new(
        codes::EDIT_NO_MATCH,
        format!(
            "edit {n} of {total}: `old_text` does not occur in `{path}`{after}, not even with whitespace ignored (nothing was changed; read the file again and copy the text to replace exactly)"
        ),
    )
}

/// Where `needle` starts in `text`, overlapping matches included (so
/// `aa` in `aaa` is two matches, not one).
/// The lines of `text` around the one place `done` occurs, numbered — the
/// file's state where a change already made sits, at most 12 lines and
/// 1,500 characters, so the model sees it is there without reading again.
fn around(text: &str, done: &str) -> String {
    let Some(at) = text.find(done) else {
        return String::new();
    };
    let first = text[..at].matches('\n').count();
    let last = first + done.trim_end_matches('\n').matches('\n').count();
    let from = first.saturating_sub(2);
    let to = (last + 2).min(from + 11);
    let mut shown = String::new();
    let mut through = from;
    for (n, line) in text.lines().enumerate().skip(from).take(to + 1 - from) {
        if shown.len() + line.len() > 1_500 {
            shown.push_str("      …\n");
            break;
        }
        shown.push_str(&format!("{:>4}  {line}\n", n + 1));
        through = n + 1;
    }
    format!("It holds now, lines {}-{through}:\n{shown}", from + 1)
}

/// The file's text, or why it cannot be edited as text.
fn read_text(root: &Root, path: &str) -> Result<String, AgentError> {
    let bytes = root.read(path).map_err(Refused::error)?;
    String::from_utf8(bytes).map_err(|_| not_text(path))
}

fn not_text(path: &str) -> AgentError {
    AgentError::new(
        codes::NOT_A_FILE,
        format!("`{path}` is not UTF-8 text, so it cannot be edited by text"),
    )
}

/// A unified diff of `path` from `before` to `after`, three lines of context.
pub fn diff(path: &str, before: &str, after: &str) -> Preview {
    let text = similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    Preview::new(PreviewKind::Diff, path, text)
}

/// What writing `content` to `path` would do, saying what is there now: a
/// diff when the file exists and is text, what a binary file is replaced
/// by, else the new file's first lines.
pub fn write_preview(root: &Root, path: &str, content: &str) -> Preview {
    let new = head_of(content);
    match root.read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(before) => {
                let mut preview = diff(&root.shown(path), &before, content);
                if let Some(warning) = rewrite_warning(&before, content) {
                    preview = Preview::new(
                        PreviewKind::Diff,
                        path,
                        format!("{warning}\n{}", preview.text),
                    );
                }
                preview
            }
            Err(binary) => Preview::new(
                PreviewKind::Text,
                path,
                format!(
                    "replaces a binary file of {} bytes with {} bytes of text, {new}",
                    binary.as_bytes().len(),
                    content.len()
                ),
            ),
        },
        Err(refused) if refused.code == codes::FILE_NOT_FOUND => Preview::new(
            PreviewKind::NewFile,
            path,
            format!("new file, {} bytes, {new}", content.len()),
        ),
        Err(refused) => Preview::new(
            PreviewKind::Text,
            path,
            format!(
                "replaces what cannot be read ({}) with {} bytes",
                refused.message,
                content.len()
            ),
        ),
    }
}

/// The plain sentence a whole-file rewrite opens its preview with when it
/// removes most of what the file holds (more than half its lines), so a
/// person sees what is lost before the diff: "replaces 10 lines with 1".
fn rewrite_warning(before: &str, after: &str) -> Option<String> {
    let old = before.lines().count();
    let removed = similar::TextDiff::from_lines(before, after)
        .iter_all_changes()
        .filter(|c| c.tag() == similar::ChangeTag::Delete)
        .count();
    if old == 0 || removed * 2 <= old {
        return None;
    }
    let lines = |n: usize| {
        if n == 1 {
            "1 line".to_owned()
        } else {
            format!("{n} lines")
        }
    };
    Some(format!(
        "REWRITES THE WHOLE FILE: replaces {} with {} ({removed} of its {old} lines are removed; edit_file changes only a part)",
        lines(old),
        after.lines().count()
    ))
}

/// `text`'s line count and first lines (`N lines\nfirst…`).
/// A text's line count, then the whole text: a surface shows its start and
/// the rest on asking (`d`), the preview's own bound cutting the longest.
fn head_of(text: &str) -> String {
    format!("{} lines\n{text}", text.lines().count())
}

/// What deleting `path` removes: its size and first lines (a binary file's
/// size, or why it cannot be read).
pub fn delete_preview(root: &Root, path: &str) -> Preview {
    let text = match root.read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => format!("{} bytes, {}", text.len(), head_of(&text)),
            Err(binary) => format!("a binary file of {} bytes", binary.as_bytes().len()),
        },
        Err(refused) => format!("it cannot be read: {}", refused.message),
    };
    Preview::new(PreviewKind::Delete, path, text)
}

/// The `edit_file` tool over a root (undoable with a stash).
pub struct EditFile(pub Arc<Root>, pub Option<super::Stash>);

impl Tool for EditFile {
    type Input = EditArgs;
    fn name(&self) -> &str {
        "edit_file"
    }
    fn description(&self) -> &str {
        "Change part of a file of the project — the way to change a file that exists (read it \
         first). Exact replacement: each `old_text` must occur exactly once (include surrounding \
         lines to make it unique); several edits in one call apply all or nothing. To add text, \
         use a line already in the file as `old_text` and that line plus the new text as \
         `new_text`. The person approves the diff first."
    }
    fn permission(&self, input: &EditArgs) -> PermissionClass {
        super::class_of(&self.0, &input.path, PermissionClass::SourceFileWrite)
    }
    fn precheck(&self, input: &EditArgs) -> Result<(), AgentError> {
        // An edit that could not apply is refused before anyone is asked.
        self.0.precheck_write(&input.path).map_err(Refused::error)?;
        let before = read_text(&self.0, &input.path).map_err(|mut err| {
            if err.code == codes::FILE_NOT_FOUND {
                err.message
                    .push_str(&crate::near::near(&self.0, &input.path));
            }
            err
        })?;
        let after = apply(&input.path, &before, &input.edits)?;
        Root::writable_size(&input.path, after.text.len()).map_err(Refused::error)
    }
    fn preview(&self, input: &EditArgs) -> Option<Preview> {
        let before = read_text(&self.0, &input.path).ok()?;
        let after = apply(&input.path, &before, &input.edits).ok()?;
        let preview = diff(&self.0.shown(&input.path), &before, &after.text);
        Some(super::guarded_preview(&self.0, &input.path, preview))
    }
    fn changes(&self, input: &EditArgs) -> Option<rein_wire::Revision> {
        Some(self.0.revision(&input.path))
    }
    fn read_first(&self, input: &EditArgs) -> Option<(String, serde_json::Value)> {
        Some(super::read_of(&input.path))
    }
    async fn invoke(&self, input: EditArgs, ctx: &ToolContext) -> Outcome {
        // The file is read again: what is edited is what is there now.
        let before = match super::undoable_now(self.1.as_ref(), &self.0, &input.path) {
            Ok(before) => before,
            Err(refused) => return Outcome::from_error(&refused),
        };
        let super::undo::Before::Bytes(bytes, _) = &before else {
            return Outcome::from_error(&read_text(&self.0, &input.path).err().unwrap_or_else(
                || {
                    AgentError::new(
                        codes::FILE_NOT_FOUND,
                        format!("`{}` cannot be read", input.path),
                    )
                },
            ));
        };
        let text = match String::from_utf8(bytes.clone()) {
            Ok(text) => text,
            Err(_) => return Outcome::from_error(&not_text(&input.path)),
        };
        let applied = match apply(&input.path, &text, &input.edits) {
            Ok(applied) => applied,
            Err(err) => return Outcome::from_error(&err),
        };
        // Said plainly: a small model otherwise makes the change again.
        let mut done = json!({"edited": input.path, "edits": input.edits.len(), "note": "done: the file now holds this change; do not make it again"});
        if !applied.repaired.is_empty() {
            done["repaired"] = json!(applied.repaired);
        }
        let after = applied.text;
        let (root, stash) = (&self.0, self.1.as_ref());
        let change = (before, Some(after.as_bytes()));
        super::change(root, stash, &input.path, change, done, ctx.asked).await
    }

    async fn undo(&self, operation_id: &str) -> Option<Result<String, AgentError>> {
        self.1.as_ref()?.undo_in(&self.0, operation_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crlf_file_keeps_its_line_ends() {
        let before = "fn a() {\r\n    1\r\n}\r\n";
        let applied = apply("a.rs", before, &[edit("    1\n}", "    2\n}\n\nfn b() {}")]).unwrap();
        assert_eq!(applied.text, "fn a() {\r\n    2\r\n}\r\n\r\nfn b() {}\r\n");
        // A file of plain line ends stays as it is.
        let plain = apply("a.rs", "x\ny\n", &[edit("y", "z")]).unwrap();
        assert_eq!(plain.text, "x\nz\n");
    }

    #[test]
    fn a_new_files_preview_holds_all_of_it_for_d_to_show() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        let long: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let preview = write_preview(&root, "new.txt", &long);
        assert_eq!(preview.kind, PreviewKind::NewFile);
        assert!(
            preview.text.contains("100 lines\nline 0\n"),
            "{}",
            preview.text
        );
        assert!(preview.text.contains("line 99"), "{}", preview.text);
    }

    fn edit(old: &str, new: &str) -> Edit {
        Edit {
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    #[test]
    fn edits_apply_in_order_all_or_nothing() {
        let text = "fn add() {}\nfn sub() {}\n";
        let after = apply(
            "m.rs",
            text,
            &[
                edit("fn add() {}", "fn add() { 1 }"),
                edit("{ 1 }", "{ 2 }"),
            ],
        )
        .unwrap();
        assert_eq!(after.text, "fn add() { 2 }\nfn sub() {}\n");
        // The second edit finds nothing: the first is not applied either.
        let err = apply("m.rs", text, &[edit("add", "plus"), edit("mul", "times")]).unwrap_err();
        assert_eq!(err.code, codes::EDIT_NO_MATCH);
        assert!(err.message.contains("edit 2 of 2"), "{}", err.message);
    }

    #[test]
    fn an_edit_off_only_in_whitespace_is_repaired_and_said() {
        let text = "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n";
        // A tab for the file's four spaces, in both texts: found, and the
        // new line indented as the file is.
        let applied = apply(
            "m.py",
            text,
            &[edit("\treturn a - b\n", "\treturn b - a\n")],
        )
        .unwrap();
        assert_eq!(applied.text, text.replace("a - b", "b - a"));
        assert_eq!(applied.repaired.len(), 1);
        assert!(
            applied.repaired[0].contains("lines 5-5"),
            "{:?}",
            applied.repaired
        );
        // Two lines, spaced differently inside.
        let applied = apply(
            "m.py",
            text,
            &[edit(
                "def sub(a,  b):\n        return a - b",
                "def sub(a, b):\n    return b - a",
            )],
        )
        .unwrap();
        assert_eq!(applied.text, text.replace("a - b", "b - a"));
        assert!(
            applied.repaired[0].contains("lines 4-5"),
            "{:?}",
            applied.repaired
        );
        // Exact text is never loosened: nothing said.
        let applied = apply("m.py", text, &[edit("a - b", "b - a")]).unwrap();
        assert!(applied.repaired.is_empty());
        // A change already made says so, and shows the lines it sits in.
        let made = text.replace("a - b", "b - a");
        let err = apply("m.py", &made, &[edit("return a - b", "return b - a")]).unwrap_err();
        assert_eq!(err.code, codes::EDIT_ALREADY_MADE);
        assert!(
            err.message.contains("    return b - a\n") && err.message.contains("lines "),
            "{}",
            err.message
        );
        // Loosely in two places: refused, nothing changed.
        let err = apply("m.py", "x = 1\ny\nx  = 1\n", &[edit("x = 1 ", "x = 2")]).unwrap_err();
        assert_eq!(err.code, codes::EDIT_AMBIGUOUS);
        assert!(err.message.contains("2 places"), "{}", err.message);
    }

    #[test]
    fn a_new_text_inside_a_longer_word_is_not_a_change_already_made() {
        // A rename the model wrote with an old text not in the file: `slug`
        // is inside `slugify`, but the file does not hold the change.
        let text = "def slugify(text):\n    return text.lower()\n";
        let err = apply("util.py", text, &[edit("def slugify(s):", "slug")]).unwrap_err();
        assert_eq!(err.code, codes::EDIT_NO_MATCH, "{}", err.message);
        // Standing as itself, it is.
        let text = "def slug(text):\n    return text.lower()\n";
        let err = apply("util.py", text, &[edit("def slugify(s):", "slug")]).unwrap_err();
        assert_eq!(err.code, codes::EDIT_ALREADY_MADE, "{}", err.message);
    }

    #[test]
    fn an_edit_made_already_says_so() {
        let text = "def sub(a, b):\n    return b - a\n";
        let err = apply("m.py", text, &[edit("return a - b", "return b - a")]).unwrap_err();
        assert_eq!(err.code, codes::EDIT_ALREADY_MADE);
        assert!(err.message.contains("already made"), "{}", err.message);
    }

    #[test]
    fn an_ambiguous_edit_says_how_many_matches_it_found() {
        let err = apply("m.rs", "fn a() {}\nfn b() {}\n", &[edit("fn ", "pub fn ")]).unwrap_err();
        assert_eq!(err.code, codes::EDIT_AMBIGUOUS);
        assert!(err.message.contains("occurs 2 times"), "{}", err.message);
        // Overlapping matches count.
        let err = apply("m.rs", "aaa", &[edit("aa", "b")]).unwrap_err();
        assert!(err.message.contains("occurs 2 times"), "{}", err.message);
    }

    #[test]
    fn empty_and_no_op_edits_are_refused() {
        for edits in [vec![], vec![edit("", "x")], vec![edit("a", "a")]] {
            let err = apply("m.rs", "a", &edits).unwrap_err();
            assert_eq!(err.code, codes::TOOL_ARGUMENTS_INVALID);
        }
    }

    #[test]
    fn a_rewrite_that_removes_most_of_a_file_says_so_first() {
        let ten: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        let warning = rewrite_warning(&ten, "line 1 only\n").unwrap();
        assert!(
            warning.contains("replaces 10 lines with 1 (10 of its 10 lines are removed"),
            "{warning}"
        );
        // A change of a few lines, or an addition, says nothing more.
        let changed = ten.replace("line 3\n", "line three\n");
        assert_eq!(rewrite_warning(&ten, &changed), None);
        assert_eq!(rewrite_warning(&ten, &format!("{ten}line 11\n")), None);
        assert_eq!(rewrite_warning("", "new\n"), None);
    }

    #[test]
    fn the_diff_is_unified_with_both_names() {
        let preview = diff("m.rs", "a\nb\nc\n", "a\nB\nc\n");
        assert_eq!(preview.kind, PreviewKind::Diff);
        assert!(
            preview.text.starts_with("--- a/m.rs\n+++ b/m.rs\n@@"),
            "{}",
            preview.text
        );
        assert!(preview.text.contains("-b\n+B\n"), "{}", preview.text);
    }

    /// An edit whose result would be over a file's bound is refused before
    /// anyone is asked: rein never writes what a read could not take back.
    #[test]
    fn an_edit_growing_a_file_past_the_bound_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let half = "x".repeat((crate::MAX_FILE_BYTES / 2) as usize + 10);
        std::fs::write(dir.path().join("big.txt"), format!("{half}\nEND\n")).unwrap();
        let tool = EditFile(Arc::new(Root::new(dir.path()).unwrap()), None);
        let grow = EditArgs {
            path: "big.txt".into(),
            edits: vec![edit("END", &half)],
        };
        let err = tool.precheck(&grow).unwrap_err();
        assert_eq!(err.code, codes::FILE_TOO_LARGE, "{}", err.message);
        let small = EditArgs {
            path: "big.txt".into(),
            edits: vec![edit("END", "end")],
        };
        tool.precheck(&small).unwrap();
    }
}
