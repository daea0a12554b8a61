//! What a compaction's summary may claim, and the claims the log does not
//! back. The log shows which files the conversation changed (a writing
//! call that succeeded, at the revision it left), which commands ran and
//! how they exited, and which checks ran (`check.ran`, the receipts). A
//! summary the model writes is read sentence by sentence for two kinds of
//! claim — a file named as changed, a check or test said to pass — and a
//! claim with nothing in the log behind it is named.
//!
//! The reading is deliberately narrow: a sentence that denies or hedges
//! ("did not", "failed", "never") claims nothing, and a file a command
//! could have changed (named in a command that ran) is backed. It catches
//! a summary inventing work, not every way of being wrong.
//!
//! Not here: asking for the summary again or dropping it
//! (`conversation/window/pressure.rs`).

use std::collections::{BTreeMap, HashMap};

use rein_sessions::{Event, StoredEvent, ToolStatus};
use rein_wire::Revision;
use rein_wire::permission::PermissionClass;
use serde_json::{Value, json};

/// What the log shows of a stretch of conversation: files changed, commands
/// run, checks with their receipts.
#[derive(Debug, Default)]
pub(crate) struct Record {
    /// Each file a writing call changed, at the revision it left.
    changed: BTreeMap<String, Option<String>>,
    /// Commands that ran, with their exit code.
    commands: Vec<(String, Option<i64>)>,
    /// The checks that ran (`check.ran`), as the state shows them.
    receipts: Vec<Value>,
}

impl Record {
    /// Read `events` (oldest first).
    pub(crate) fn of(events: &[&StoredEvent]) -> Record {
        let mut record = Record::default();
        let mut calls: HashMap<&str, (Option<PermissionClass>, &Value)> = HashMap::new();
        for stored in events {
            match &stored.event {
                Event::ToolCalled {
                    call_id,
                    permission,
                    arguments,
                    ..
                } => {
                    calls.insert(call_id, (*permission, arguments));
                }
                Event::ToolResult {
                    call_id,
                    status: ToolStatus::Ok,
                    content,
                    seen,
                    ..
                } => {
                    if let Some((class, arguments)) = calls.get(call_id.as_str()) {
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
                } => record.receipts.push(json!({
                    "command": command.join(" "),
                    "expected": expected,
                    "exit": exit,
                    "passed": passed,
                    "revisions": revisions,
                    "seq": stored.seq,
                    "at_ms": stored.at_ms,
                })),
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
        if let (true, Some(path)) = (writes, path) {
            self.changed
                .insert(path, seen.and_then(|r| r.token.clone()));
        }
    }

    /// The changed files at the revisions they were left at.
    pub(crate) fn revisions(&self) -> Vec<Revision> {
        self.changed
            .iter()
            .map(|(path, token)| Revision::new(path.clone(), token.clone()))
            .collect()
    }

    /// The state's part: the files changed and the checks' receipts.
    pub(crate) fn state(&self) -> (Value, Value) {
        (json!(self.revisions()), json!(self.receipts))
    }

    fn backs_file(&self, claimed: &str) -> bool {
        let claimed = claimed.trim_start_matches("./");
        let same = |path: &str| {
            let path = path.trim_start_matches("./");
            path == claimed || path.ends_with(&format!("/{claimed}"))
        };
        self.changed.keys().any(|p| same(p))
            || self.commands.iter().any(|(c, _)| c.contains(claimed))
    }

    fn backs_a_pass(&self) -> bool {
        self.receipts.iter().any(|r| r["passed"] == true)
            || self.commands.iter().any(|(_, exit)| *exit == Some(0))
    }
}

/// A summary's claim the log does not back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Claim {
    /// A file said to be changed that no call changed.
    Changed(String),
    /// A check or test said to pass where none passed.
    Passed(String),
}

impl Claim {
    /// As recorded and as the model is told.
    pub(crate) fn describe(&self) -> String {
        match self {
            Claim::Changed(path) => format!("that {path} was changed"),
            Claim::Passed(sentence) => format!("that a check passed (\"{sentence}\")"),
        }
    }
}

/// The claims in `summary` that `record` does not back, in order.
pub(crate) fn unbacked(summary: &str, record: &Record) -> Vec<Claim> {
    let mut claims = Vec::new();
    for sentence in sentences(summary) {
        let lower = sentence.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric() && c != '\'')
            .filter(|w| !w.is_empty())
            .collect();
        if words.iter().any(|w| denies(w)) {
            continue;
        }
        if words.iter().any(|w| changes(w)) {
            for path in sentence.split_whitespace().filter_map(path_like) {
                if !record.backs_file(path) && !claims.contains(&Claim::Changed(path.to_owned())) {
                    claims.push(Claim::Changed(path.to_owned()));
                }
            }
        }
        let passes = words.iter().any(|w| PASS.contains(w));
        let checks = words
            .iter()
            .any(|w| *w == "ci" || CHECK.iter().any(|s| w.starts_with(s)));
        if passes && checks && !record.backs_a_pass() {
            let shown: String = sentence.trim().chars().take(120).collect();
            claims.push(Claim::Passed(shown));
        }
    }
    claims
}

/// Stems of words that say a file was changed.
const CHANGE: &[&str] = &[
    "chang",
    "edit",
    "modif",
    "wrote",
    "writ",
    "creat",
    "updat",
    "fix",
    "delet",
    "remov",
    "renam",
    "rewr",
    "patch",
    "refactor",
    "implement",
];

/// A word that says a file was changed.
fn changes(word: &str) -> bool {
    matches!(word, "add" | "adds" | "added" | "adding")
        || CHANGE.iter().any(|s| word.starts_with(s))
}
/// Words that say something passed.
const PASS: &[&str] = &[
    "pass",
    "passes",
    "passed",
    "passing",
    "succeeds",
    "succeeded",
    "green",
];
/// Stems of words that name a check (and `ci`).
const CHECK: &[&str] = &[
    "test", "check", "build", "lint", "clippy", "cargo", "verif", "suite", "compil",
];

/// A word that denies or hedges the sentence it is in.
fn denies(word: &str) -> bool {
    matches!(
        word,
        "not" | "never" | "no" | "none" | "nothing" | "unable" | "cannot" | "without" | "yet"
    ) || word.ends_with("n't")
        || word.starts_with("fail")
        || word.starts_with("attempt")
        || word.starts_with("tried")
        || word.starts_with("plan")
        || word.starts_with("should")
}

/// The sentences of `text`: split at line ends and at `.`, `!`, `?` or `;`
/// followed by a space or the end (a file's dot is kept).
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        let ends = match b {
            b'\n' => true,
            b'.' | b'!' | b'?' | b';' => bytes.get(i + 1).is_none_or(u8::is_ascii_whitespace),
            _ => false,
        };
        if ends {
            out.push(&text[start..i]);
            start = i + 1;
        }
    }
    out.push(&text[start..]);
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

/// A word that looks like a file: has a `/`, or a name and an extension of
/// letters (`main.rs`, `src/lib.rs`); not a number, a version or a URL.
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
    (ext_ok && name_ok).then_some(word)
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
mod tests {
    use super::{Claim, Record, unbacked};
    use rein_sessions::{Event, ResultSource, StoredEvent, ToolStatus};
    use rein_wire::Revision;
    use rein_wire::permission::PermissionClass;
    use serde_json::json;

    fn stored(seq: u64, event: Event) -> StoredEvent {
        StoredEvent {
            session_id: "s".into(),
            seq,
            at_ms: 0,
            agent_path: "main".into(),
            event,
        }
    }

    fn wrote(path: &str) -> Vec<StoredEvent> {
        vec![
            stored(
                1,
                Event::ToolCalled {
                    call_id: "c1".into(),
                    tool: "write_file".into(),
                    arguments: json!({"path": path, "content": "x"}),
                    permission: Some(PermissionClass::SourceFileWrite),
                },
            ),
            stored(
                2,
                Event::ToolResult {
                    call_id: "c1".into(),
                    status: ToolStatus::Ok,
                    source: ResultSource::Live,
                    content: json!({"ok": true}),
                    artifact: None,
                    operation_id: None,
                    undo: true,
                    duration_ms: 1,
                    seen: Some(Revision::new(path, Some("r2".into()))),
                },
            ),
        ]
    }

    fn record(events: &[StoredEvent]) -> Record {
        Record::of(&events.iter().collect::<Vec<_>>())
    }

    #[test]
    fn invented_changes_and_passes_are_named() {
        let empty = record(&[]);
        let claims = unbacked(
            "I changed `src/main.rs` and updated config.toml. All tests pass now.",
            &empty,
        );
        assert_eq!(
            claims,
            vec![
                Claim::Changed("src/main.rs".into()),
                Claim::Changed("config.toml".into()),
                Claim::Passed("All tests pass now".into()),
            ]
        );
    }

    #[test]
    fn what_the_log_shows_is_backed() {
        let mut events = wrote("src/main.rs");
        events.push(stored(
            3,
            Event::CheckRan {
                command: vec!["cargo".into(), "test".into()],
                expected: 0,
                exit: Some(0),
                passed: true,
                revisions: vec![],
                duration_ms: 5,
            },
        ));
        let log = record(&events);
        assert!(unbacked("Edited main.rs; cargo test passed.", &log).is_empty());
        let (changed, checks) = log.state();
        assert_eq!(changed[0]["resource"], "src/main.rs");
        assert_eq!(changed[0]["token"], "r2");
        assert_eq!(checks[0]["passed"], true);
        assert_eq!(checks[0]["command"], "cargo test");
        // Another file is still an invention.
        assert_eq!(
            unbacked("Also fixed src/lib.rs.", &log),
            vec![Claim::Changed("src/lib.rs".into())]
        );
    }

    #[test]
    fn denials_reads_numbers_and_versions_claim_nothing() {
        let empty = record(&[]);
        for text in [
            "The tests did not pass.",
            "Writing src/lib.rs failed with a conflict.",
            "I read README.md and notes/plan.txt.",
            "Pressure was 0.6 of the window, version 1.2.3 updated nothing",
            "The build is still failing.",
            "See https://example.com/a.html for the change.",
        ] {
            assert_eq!(unbacked(text, &empty), vec![], "{text}");
        }
    }

    #[test]
    fn a_file_a_command_named_is_backed() {
        let events = vec![
            stored(
                1,
                Event::ToolCalled {
                    call_id: "c1".into(),
                    tool: "run_command".into(),
                    arguments: json!({"command": ["sed", "-i", "s/a/b/", "notes.md"]}),
                    permission: Some(PermissionClass::Destructive),
                },
            ),
            stored(
                2,
                Event::ToolResult {
                    call_id: "c1".into(),
                    status: ToolStatus::Ok,
                    source: ResultSource::Live,
                    content: json!({"exit_code": 1}),
                    artifact: None,
                    operation_id: None,
                    undo: false,
                    duration_ms: 1,
                    seen: None,
                },
            ),
        ];
        let log = record(&events);
        assert!(unbacked("Updated notes.md with sed.", &log).is_empty());
        // It exited 1: no pass is backed.
        assert_eq!(unbacked("The check passed.", &log).len(), 1);
    }
}
