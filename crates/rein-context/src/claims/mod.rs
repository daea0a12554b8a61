//! What the log shows of a stretch of conversation — the files changed
//! (a writing call that succeeded, at the revision it left), the commands
//! run and how they exited, the checks run (`check.ran`, the receipts),
//! what each read showed, what each call named — and the claims of a
//! compaction's summary record that it does not back (`summary`).
//!
//! Every check is exact: a file said changed was changed by a call or
//! named in a command that ran; a check said to pass (or fail) has a run
//! of that command with that outcome; a fact's quote occurs in what that
//! file's reads showed; a file named in what was done was named by a
//! call. Nothing here reads sentences: what a record says in free words
//! (its goal, what is next) is not a claim about the log.
//!
//! Not here: asking for the record again or dropping it
//! (`rein-runner`'s `conversation/window/summary.rs`).

use std::collections::{BTreeMap, HashMap};

use rein_sessions::{Event, StoredEvent, ToolStatus};
use rein_wire::Revision;
use rein_wire::permission::PermissionClass;
use serde_json::Value;

mod claim;
mod summary;

pub use claim::{Claim, correction};
pub use summary::{Summary, schema};

/// What the log shows of a stretch of conversation: files changed, commands
/// run, checks with their receipts, what the reads showed.
#[derive(Debug, Default)]
pub struct Record {
    /// Each file a writing call changed, at the revision it left.
    changed: BTreeMap<String, Option<String>>,
    /// Commands that ran, with their exit code.
    commands: Vec<(String, Option<i64>)>,
    /// The checks that ran (`check.ran`), as the state shows them.
    receipts: Vec<rein_sessions::Receipt>,
    /// Each file read, with what its reads showed (spaces collapsed, lower
    /// case), one entry a read.
    reads: BTreeMap<String, Vec<String>>,
    /// Each call's arguments as text (the first [`CALLED_CHARS`]), whatever
    /// the call did or how it ended: a file one names was asked for.
    called: Vec<String>,
    /// Each call that ended: its tool, its arguments as text (lower case,
    /// the first [`CALLED_CHARS`]) and whether it succeeded — a record may
    /// give a tool call as a check (`read_file f3.txt`, passed).
    ended: Vec<(String, String, bool)>,
}

impl Record {
    /// Read `events` (oldest first).
    pub fn of(events: &[&StoredEvent]) -> Record {
        let mut record = Record::default();
        let mut calls: HashMap<&str, (&str, Option<PermissionClass>, &Value)> = HashMap::new();
        for stored in events {
            match &stored.event {
                Event::ToolCalled {
                    call_id,
                    tool,
                    permission,
                    arguments,
                } => {
                    calls.insert(call_id, (tool, *permission, arguments));
                    let text = arguments.to_string();
                    record
                        .called
                        .push(text.chars().take(CALLED_CHARS).collect());
                }
                Event::ToolResult {
                    call_id,
                    status,
                    content,
                    seen,
                    ..
                } => {
                    let Some((tool, class, arguments)) = calls.get(call_id.as_str()) else {
                        continue;
                    };
                    let text: String = arguments.to_string().chars().take(CALLED_CHARS).collect();
                    let ok = *status == ToolStatus::Ok;
                    record.ended.push((tool.to_lowercase(), plain(&text), ok));
                    if ok {
                        record.result(*class, arguments, content, seen.as_ref());
                    }
                }
                Event::CheckRan {
                    command,
                    expected,
                    exit,
                    passed,
                    revisions,
                    ..
                } => record.receipts.push(rein_sessions::Receipt {
                    command: command.join(" "),
                    expected: *expected,
                    exit: *exit,
                    passed: *passed,
                    revisions: revisions.clone(),
                    seq: stored.seq,
                    at_ms: stored.at_ms,
                    rest: serde_json::Map::new(),
                }),
                _ => {}
            }
        }
        record
    }

    fn result(
        &mut self,
        class: Option<PermissionClass>,
        arguments: &Value,
        content: &Value,
        seen: Option<&Revision>,
    ) {
        if let Some(command) = command_text(arguments) {
            let exit = content.get("exit_code").and_then(Value::as_i64);
            self.commands.push((command, exit));
            return;
        }
        let writes = class.is_some_and(|c| c != PermissionClass::Read);
        let path = seen
            .map(|r| r.resource.clone())
            .or_else(|| path_of(arguments));
        match (writes, path) {
            (true, Some(path)) => {
                self.changed
                    .insert(path, seen.and_then(|r| r.token.clone()));
            }
            (false, Some(path)) if class == Some(PermissionClass::Read) => {
                let text = content
                    .as_str()
                    .or_else(|| content.get("content").and_then(Value::as_str))
                    .or_else(|| content.get("text").and_then(Value::as_str));
                if let Some(text) = text {
                    self.reads.entry(path).or_default().push(plain(text));
                }
            }
            _ => {}
        }
    }

    /// The file read that `claimed` names, if one was.
    fn read_as(&self, claimed: &str) -> Option<&str> {
        self.reads
            .keys()
            .find(|path| names(claimed, path))
            .map(String::as_str)
    }

    /// Whether a call of the stretch named the file `claimed` names: as
    /// its path, or anywhere in its arguments (a command, a sub-agent's
    /// task).
    fn called(&self, claimed: &str) -> bool {
        let claimed = claimed.trim_start_matches("./");
        self.called
            .iter()
            .any(|arguments| arguments.contains(claimed))
    }

    /// The changed files at the revisions they were left at.
    pub fn revisions(&self) -> Vec<Revision> {
        self.changed
            .iter()
            .map(|(path, token)| Revision::new(path.clone(), token.clone()))
            .collect()
    }

    /// The state's part: the files changed and the checks' receipts.
    pub fn state(&self) -> (Vec<Revision>, Vec<rein_sessions::Receipt>) {
        (self.revisions(), self.receipts.clone())
    }

    /// Whether `claimed` was changed: by a writing call, or named in a
    /// command that ran (a command may have changed it).
    fn backs_change(&self, claimed: &str) -> bool {
        self.changed.keys().any(|p| names(claimed, p))
            || self
                .commands
                .iter()
                .any(|(c, _)| c.contains(claimed.trim_start_matches("./")))
    }

    /// Whether a run of `command` ended as `passed` says: a check's
    /// receipt, or a command's exit (0 passed). The command matches when
    /// one of the two, spaces collapsed, holds the other (`pytest` and
    /// `python3 -m pytest -q`).
    fn backs_check(&self, command: &str, passed: bool) -> bool {
        let claimed = plain(command);
        if claimed.chars().count() < MIN_COMMAND_CHARS {
            return false;
        }
        let same = |ran: &str| {
            let ran = plain(ran);
            ran.contains(&claimed) || claimed.contains(&ran)
        };
        // A tool call given as a check: its tool's name, then words its
        // arguments hold, ended as `passed` says.
        let (tool, rest) = claimed.split_once(' ').unwrap_or((&claimed, ""));
        let called = |(name, arguments, ok): &(String, String, bool)| {
            *ok == passed && name == tool && arguments.contains(rest)
        };
        self.receipts
            .iter()
            .any(|r| r.passed == passed && same(&r.command))
            || self
                .commands
                .iter()
                .any(|(ran, exit)| (*exit == Some(0)) == passed && exit.is_some() && same(ran))
            || self.ended.iter().any(called)
    }

    /// Whether the reads of `file` showed `quote` (spaces collapsed, case
    /// aside): `None` when `file` was never read.
    fn shows(&self, file: &str, quote: &str) -> Option<bool> {
        let read = self.read_as(file)?;
        let quote = plain(quote);
        let quote =
            quote.trim_matches(|c: char| matches!(c, '"' | '\'' | '`') || c.is_whitespace());
        Some(!quote.is_empty() && self.reads[read].iter().any(|text| text.contains(quote)))
    }

    /// Whether the stretch knows the file `name`: read, changed, or named
    /// by a call.
    fn knows(&self, name: &str) -> bool {
        self.read_as(name).is_some() || self.backs_change(name) || self.called(name)
    }
}

/// The most of a call's arguments [`Record`] keeps, in characters.
const CALLED_CHARS: usize = 4096;

/// A command shorter than this (`ok`, `x`) matches too much to back a check.
const MIN_COMMAND_CHARS: usize = 2;

/// `text` as compared: whitespace collapsed to single spaces, lower case.
fn plain(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Whether a file `claimed` in a summary is `path` (the whole path, or its
/// end after a folder).
fn names(claimed: &str, path: &str) -> bool {
    let (claimed, path) = (
        claimed.trim_start_matches("./"),
        path.trim_start_matches("./"),
    );
    !claimed.is_empty() && (path == claimed || path.ends_with(&format!("/{claimed}")))
}

/// A word that looks like a file: has a `/`, or a name and an extension of
/// letters (`main.rs`, `src/lib.rs`); not a number, a version, a URL or an
/// abbreviation (`e.g.`).
fn path_like(word: &str) -> Option<&str> {
    let word = word.trim_matches(|c: char| {
        matches!(
            c,
            '`' | '"' | '\'' | '(' | ')' | '[' | ']' | ',' | ':' | '*'
        )
    });
    let word = word.trim_end_matches(['.', ',', ';', ':', '!', '?']);
    if word.len() < 3 || word.contains("://") || word.contains('@') {
        return None;
    }
    if word.contains('/') {
        return word.chars().any(char::is_alphabetic).then_some(word);
    }
    let (name, ext) = word.rsplit_once('.')?;
    let ext_ok = (1..=6).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphabetic());
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'));
    let abbreviation = name.chars().count() == 1 && ext.len() == 1;
    (ext_ok && name_ok && !abbreviation).then_some(word)
}

/// The command a call ran, when it ran one (`command` as text or argv).
fn command_text(arguments: &Value) -> Option<String> {
    match arguments.get("command")? {
        Value::String(text) => Some(text.clone()),
        Value::Array(argv) => Some(
            argv.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

fn path_of(arguments: &Value) -> Option<String> {
    ["path", "file"]
        .iter()
        .find_map(|k| arguments.get(*k).and_then(Value::as_str))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests;
