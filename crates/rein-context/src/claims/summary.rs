//! The summary a compaction asks the model for, as a typed record: the
//! goal, what was done, the files changed, the checks run with their
//! outcome, facts as `{file, quote}`, what is next. Read from the model's
//! answer (a fence or words around the object are tolerated), bounded and
//! tidied (an item said twice is kept once), checked field by field
//! against the log ([`Summary::unbacked`]), and written out as the text
//! the model sees after the compaction.
//!
//! Not here: what the log shows (`super::Record`), the call and the asking
//! again (`conversation/window/summary.rs`).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Claim, Record, path_like};

/// At most this many items a list; the rest are left out.
const MAX_ITEMS: usize = 16;
/// A text of the record is cut to this many characters.
const MAX_CHARS: usize = 400;
/// A quote is shown in a claim cut to this many characters.
const QUOTE_SHOWN: usize = 80;

/// A compaction's summary, as the model gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// What was asked.
    pub goal: String,
    /// What was done and found.
    pub done: Vec<String>,
    /// The files the conversation changed.
    pub files_changed: Vec<String>,
    /// The checks run, with their outcome.
    pub checks: Vec<CheckRun>,
    /// Facts the request may still need, each quoted from a file read.
    pub facts: Vec<Fact>,
    /// What remains.
    pub next: String,
}

/// A check the record says ran.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckRun {
    /// The command, as run.
    pub command: String,
    /// Whether it passed.
    pub passed: bool,
}

/// A fact, quoted word for word from what a file's read showed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Fact {
    /// The file read.
    pub file: String,
    /// Its words, as the read showed them.
    pub quote: String,
}

/// The JSON schema the summary is asked in: every field required, no
/// other field, no length bounds — the subset every API with structured
/// output accepts (OpenAI's strict mode, llama.cpp's grammar, vLLM).
pub fn schema() -> Value {
    let text = json!({"type": "string"});
    let texts = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {
            "goal": text,
            "done": texts,
            "files_changed": texts,
            "checks": {"type": "array", "items": {
                "type": "object",
                "properties": {"command": text, "passed": {"type": "boolean"}},
                "required": ["command", "passed"],
                "additionalProperties": false,
            }},
            "facts": {"type": "array", "items": {
                "type": "object",
                "properties": {"file": text, "quote": text},
                "required": ["file", "quote"],
                "additionalProperties": false,
            }},
            "next": text,
        },
        "required": ["goal", "done", "files_changed", "checks", "facts", "next"],
        "additionalProperties": false,
    })
}

impl Summary {
    /// The record in `answer` — the object alone, in a fence, or between
    /// words — bounded, with items said twice kept once; and how many were
    /// left out as repeats. `None` when no object of this shape is there.
    pub fn parse(answer: &str) -> Option<(Summary, usize)> {
        let start = answer.find('{')?;
        let end = answer.rfind('}')?;
        let mut summary = record_of(answer.get(start..=end)?)?;
        let repeated = summary.tidy();
        Some((summary, repeated))
    }

    /// The record an answer the output limit cut off holds up to its last
    /// whole item: the text up to a comma outside any string, closed as it
    /// was open there. A small model that lists one line until its limit
    /// (try 32, and the forty-read case's first record) keeps what came
    /// before; every field kept is checked as any other.
    pub fn parse_cut_off(answer: &str) -> Option<(Summary, usize)> {
        let start = answer.find('{')?;
        let text = &answer[start..];
        for (at, open) in item_ends(text).into_iter().rev().take(MAX_CUTS) {
            let closers: String = open
                .iter()
                .rev()
                .map(|c| if *c == '{' { '}' } else { ']' })
                .collect();
            if let Some(mut summary) = record_of(&format!("{}{closers}", &text[..at])) {
                let repeated = summary.tidy();
                return Some((summary, repeated));
            }
        }
        None
    }

    /// Cut each text and list to its bound and drop repeated items;
    /// returns how many repeats were dropped.
    fn tidy(&mut self) -> usize {
        let mut repeated = 0;
        cut(&mut self.goal);
        cut(&mut self.next);
        for text in self.done.iter_mut().chain(self.files_changed.iter_mut()) {
            cut(text);
        }
        for check in &mut self.checks {
            cut(&mut check.command);
        }
        for fact in &mut self.facts {
            cut(&mut fact.file);
            cut(&mut fact.quote);
        }
        repeated += once_each(&mut self.done);
        repeated += once_each(&mut self.files_changed);
        repeated += once_each(&mut self.checks);
        repeated += once_each(&mut self.facts);
        repeated
    }

    /// The record's claims that `record` does not back, in the record's
    /// order: files changed, checks, facts, then files named in what was
    /// done. The goal and what is next are intent, not claims.
    pub fn unbacked(&self, record: &Record) -> Vec<Claim> {
        let mut claims = Vec::new();
        for path in &self.files_changed {
            if !record.backs_change(path) {
                claims.push(Claim::Changed(path.clone()));
            }
        }
        for check in &self.checks {
            if !record.backs_check(&check.command, check.passed) {
                claims.push(Claim::Check {
                    command: check.command.clone(),
                    passed: check.passed,
                });
            }
        }
        for fact in &self.facts {
            match record.shows(&fact.file, &fact.quote) {
                None => claims.push(Claim::Unread(fact.file.clone())),
                Some(false) => claims.push(Claim::Misquoted {
                    file: fact.file.clone(),
                    quote: fact.quote.chars().take(QUOTE_SHOWN).collect(),
                }),
                Some(true) => {}
            }
        }
        for item in &self.done {
            for name in item.split_whitespace().filter_map(path_like) {
                let claim = Claim::Unknown(name.to_owned());
                if !record.knows(name) && !claims.contains(&claim) {
                    claims.push(claim);
                }
            }
        }
        claims
    }

    /// The record as the model reads it after the compaction: a line a
    /// field, empty fields left out.
    pub fn text(&self) -> String {
        let mut lines = Vec::new();
        if !self.goal.trim().is_empty() {
            lines.push(format!("Goal: {}", self.goal.trim()));
        }
        if !self.done.is_empty() {
            lines.push("Done:".to_owned());
            lines.extend(self.done.iter().map(|d| format!("- {}", d.trim())));
        }
        if !self.files_changed.is_empty() {
            lines.push(format!("Files changed: {}", self.files_changed.join(", ")));
        }
        if !self.checks.is_empty() {
            let checks: Vec<String> = self
                .checks
                .iter()
                .map(|c| {
                    let how = if c.passed { "passed" } else { "failed" };
                    format!("`{}` {how}", c.command.trim())
                })
                .collect();
            lines.push(format!("Checks: {}", checks.join("; ")));
        }
        if !self.facts.is_empty() {
            lines.push("Facts, quoted from the files read:".to_owned());
            lines.extend(
                self.facts
                    .iter()
                    .map(|f| format!("- {}: \"{}\"", f.file.trim(), f.quote.trim())),
            );
        }
        if !self.next.trim().is_empty() {
            lines.push(format!("Next: {}", self.next.trim()));
        }
        lines.join("\n")
    }
}

/// The record `text` is, when it is a JSON object of the record's shape.
fn record_of(text: &str) -> Option<Summary> {
    let object: Value = serde_json::from_str(text).ok()?;
    if !object.is_object() {
        return None;
    }
    serde_json::from_value(object).ok()
}

/// Cut points tried in a cut-off answer, from its end, at most.
const MAX_CUTS: usize = 64;

/// Each comma of `text` outside a string, with the containers open there
/// (`{` or `[`, outermost first).
fn item_ends(text: &str) -> Vec<(usize, Vec<char>)> {
    let mut ends = Vec::new();
    let mut open = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for (at, c) in text.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => open.push(c),
            '}' | ']' => {
                open.pop();
            }
            ',' if !open.is_empty() => ends.push((at, open.clone())),
            _ => {}
        }
    }
    ends
}

/// `text` cut to [`MAX_CHARS`] characters, marked when cut.
fn cut(text: &mut String) {
    if let Some((at, _)) = text.char_indices().nth(MAX_CHARS) {
        text.truncate(at);
        text.push('…');
    }
}

/// `items` with each one kept the first time only and at most
/// [`MAX_ITEMS`]; how many repeats were dropped.
fn once_each<T: PartialEq>(items: &mut Vec<T>) -> usize {
    let before = items.len();
    let mut kept: Vec<T> = Vec::with_capacity(items.len().min(MAX_ITEMS));
    for item in items.drain(..) {
        if !kept.contains(&item) {
            kept.push(item);
        }
    }
    let repeated = before - kept.len();
    kept.truncate(MAX_ITEMS);
    *items = kept;
    repeated
}
