//! What a compaction's summary may claim, and the claims the log does not
//! back. The log shows which files the conversation changed (a writing
//! call that succeeded, at the revision it left), which commands ran and
//! how they exited, and which checks ran (`check.ran`, the receipts). A
//! summary the model writes is read sentence by sentence for three kinds
//! of claim — a file named as changed, a check or test said to pass, and a
//! word said of a file that was read — and a claim with nothing in the log
//! behind it is named. The third catches a fact moved from the file that
//! holds it to another: a sentence that names one file read and uses a
//! word its reads never showed, though another file's did. Beside them,
//! `keyword` holds what is said of a keyword (denied of a file that showed
//! it, listed for files that never did) and `read` which files are said
//! to have been read.
//!
//! The reading is deliberately narrow: a sentence that denies or hedges
//! ("did not", "failed", "never") claims nothing, and a file a command
//! could have changed (named in a command that ran) is backed. It catches
//! a summary inventing work, not every way of being wrong. The third kind
//! holds only what a sentence says a file holds (after `path:`, "says",
//! "mentions"…, or quoted); a paraphrase there that happens to use another
//! file's word is named too, at the cost of one more summary request.
//!
//! Not here: asking for the summary again or dropping it
//! (`conversation/window/summary.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};

use rein_sessions::{Event, StoredEvent, ToolStatus};
use rein_wire::Revision;
use rein_wire::permission::PermissionClass;
use serde_json::{Value, json};

mod claim;
mod keyword;
mod read;

pub(crate) use claim::{Claim, correction};

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
    /// Each file read, with the words its reads showed (lower case).
    reads: BTreeMap<String, HashSet<String>>,
    /// Each call's arguments as text (the first [`CALLED_CHARS`]), whatever
    /// the call did or how it ended: a file one names was asked for.
    called: Vec<String>,
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
                    let text = arguments.to_string();
                    record
                        .called
                        .push(text.chars().take(CALLED_CHARS).collect());
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
                    let words = self.reads.entry(path).or_default();
                    words.extend(words_of(&text.to_lowercase()).map(str::to_owned));
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
    /// its path, or anywhere in its arguments (a sub-agent's task).
    fn called(&self, claimed: &str) -> bool {
        let claimed = claimed.trim_start_matches("./");
        self.called
            .iter()
            .any(|arguments| arguments.contains(claimed))
    }

    /// A word `sentence`, which names only the file read `path`, says the
    /// file holds — after `path:`, after "mentions", "says", "contains"…, or
    /// quoted — that its reads never showed though another file's did; or
    /// a word it quotes as the file's own (`contains "BLUE"`) that its reads
    /// never showed at all.
    fn misread(&self, path: &str, sentence: &str) -> Option<String> {
        let own = &self.reads[path];
        let unseen = |w: &&str| w.chars().count() >= MIN_WORD && !own.contains(*w);
        let said = attributed(sentence);
        let moved = words_of(&said).filter(unseen).find(|w| {
            self.reads
                .iter()
                .any(|(other, words)| other != path && words.contains(*w))
        });
        let quoted = quoted_as_said(sentence);
        moved
            .or_else(|| words_of(&quoted).find(unseen))
            .map(str::to_owned)
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

    /// Whether `name` (no extension) is shaped like the name of a file
    /// read, digits apart — `f39` beside a read `f3.txt` — and is not one.
    fn like_a_read_file(&self, name: &str) -> bool {
        let has_digit = name.chars().any(|c| c.is_ascii_digit());
        let has_letter = name.chars().any(char::is_alphabetic);
        if !has_digit || !has_letter || name.len() < 2 {
            return false;
        }
        let fold = crate::read_notes::fold;
        let folded = fold(name);
        let stems: Vec<&str> = self.reads.keys().map(|p| stem(p)).collect();
        !stems.contains(&name) && stems.iter().any(|s| fold(s) == folded)
    }

    /// The file read whose name without its extension is `name` (`f3` for
    /// a read `f3.txt`).
    fn read_by_stem(&self, name: &str) -> Option<&str> {
        self.reads
            .keys()
            .find(|p| stem(p).eq_ignore_ascii_case(name))
            .map(String::as_str)
    }

    fn backs_file(&self, claimed: &str) -> bool {
        self.changed.keys().any(|p| names(claimed, p))
            || self
                .commands
                .iter()
                .any(|(c, _)| c.contains(claimed.trim_start_matches("./")))
    }

    fn backs_a_pass(&self) -> bool {
        self.receipts.iter().any(|r| r["passed"] == true)
            || self.commands.iter().any(|(_, exit)| *exit == Some(0))
    }
}

/// The most of a call's arguments [`Record`] keeps, in characters.
const CALLED_CHARS: usize = 4096;

/// Whether a file `claimed` in a summary is `path` (the whole path, or its
/// end after a folder).
fn names(claimed: &str, path: &str) -> bool {
    let (claimed, path) = (
        claimed.trim_start_matches("./"),
        path.trim_start_matches("./"),
    );
    path == claimed || path.ends_with(&format!("/{claimed}"))
}

/// A file's name without its folder and extension.
fn stem(path: &str) -> &str {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.split_once('.').map_or(file, |(s, _)| s)
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
            // A denied sentence claims nothing, but a clause of it with no
            // denial may still misquote a file ("f0.txt contained the text
            // "BLUE", which was not mentioned …").
            for clause in clauses(sentence) {
                let lower = clause.to_lowercase();
                if !words_of(&lower).any(denies) {
                    misread(clause, record, &mut claims);
                }
            }
            keyword::denied(sentence, record, &mut claims);
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
        misread(sentence, record, &mut claims);
        keyword::listed(sentence, record, &mut claims);
        unread(sentence, record, &mut claims);
        read::said_read(sentence, record, &mut claims);
    }
    claims
}

/// A sentence (or clause) saying what a file holds, of a file the stretch
/// never read, changed or named in a command: the file named before a word
/// of [`SAYS`] ("f39 mentions BLUE"), or after it as the answer ("the file
/// that mentions BLUE is f12.txt", "… mentioned in f12.txt"). Before the
/// verb, a name shaped like the files read counts too (`f39` beside a read
/// `f3.txt`); after it, only a path after [`ANSWER`] does.
fn unread(sentence: &str, record: &Record, claims: &mut Vec<Claim>) {
    let lower = sentence.to_lowercase();
    let tokens: Vec<&str> = lower.split_whitespace().collect();
    let Some(verb) = tokens.iter().position(|t| says(t)) else {
        return;
    };
    let name_of = |token: &str| -> String {
        let name = token.trim_matches(|c: char| !c.is_alphanumeric() && c != '.' && c != '/');
        name.trim_end_matches('.').to_owned()
    };
    let unknown = |path: &str| record.read_as(path).is_none() && !record.backs_file(path);
    let before = tokens[..verb]
        .iter()
        .map(|t| name_of(t))
        .filter(|name| match path_like(name) {
            Some(path) => unknown(path),
            None => record.like_a_read_file(name),
        });
    let after = tokens[verb..].windows(2).filter_map(|pair| {
        let name = name_of(pair[1]);
        let answer = ANSWER.contains(&pair[0].trim_matches(|c: char| !c.is_alphabetic()));
        (answer && path_like(&name).is_some_and(unknown)).then_some(name)
    });
    for name in before.chain(after).collect::<Vec<_>>() {
        let claim = Claim::Unread(name);
        if !claims.contains(&claim) {
            claims.push(claim);
        }
    }
}

/// Words after which a file named after a word of [`SAYS`] is the one said
/// to hold it.
const ANSWER: &[&str] = &["is", "was", "in", "file", "be"];

/// A sentence (or clause) about one file read: what it says of it, held to
/// its reads. One naming several files says nothing of any one.
fn misread(sentence: &str, record: &Record, claims: &mut Vec<Claim>) {
    let named: HashSet<&str> = sentence
        .split_whitespace()
        .filter_map(path_like)
        .filter_map(|p| record.read_as(p))
        .collect();
    if let [path] = named.into_iter().collect::<Vec<_>>()[..]
        && let Some(word) = record.misread(path, sentence)
    {
        let claim = Claim::Misread(path.to_owned(), word);
        if !claims.contains(&claim) {
            claims.push(claim);
        }
    }
}

/// The clauses of a sentence: split at commas and semicolons.
fn clauses(sentence: &str) -> impl Iterator<Item = &str> {
    sentence.split([',', ';']).filter(|c| !c.trim().is_empty())
}

/// A word shorter than this says too little to hold to a file.
const MIN_WORD: usize = 4;

/// Words after which a sentence says what a file holds.
const SAYS: &[&str] = &[
    "mention",
    "mentions",
    "mentioned",
    "say",
    "says",
    "said",
    "contain",
    "contains",
    "contained",
    "state",
    "states",
    "stated",
    "reads",
    "shows",
    "show",
    "showed",
    "holds",
    "held",
    "include",
    "includes",
    "included",
];

/// What `sentence` says a file holds, in lower case, file names left out:
/// what follows a file named with a colon (`f3.txt: …`), what follows a
/// word of [`SAYS`], and what is quoted. Other words (what the model did
/// with a file, how it described it) are not held to its text.
fn attributed(sentence: &str) -> String {
    let lower = sentence.to_lowercase();
    let tokens: Vec<&str> = lower.split_whitespace().collect();
    let mut said: Vec<&str> = said_from(&tokens).map_or(Vec::new(), |at| tokens[at..].to_vec());
    said.extend(quoted(&lower));
    said.into_iter()
        .filter(|w| path_like(w).is_none())
        .collect::<Vec<_>>()
        .join(" ")
}

/// What `sentence` quotes after a word of [`SAYS`] or a file named with a
/// colon, in lower case: the text it gives as the file's own words.
fn quoted_as_said(sentence: &str) -> String {
    let lower = sentence.to_lowercase();
    let tokens: Vec<&str> = lower.split_whitespace().collect();
    let Some(at) = said_from(&tokens) else {
        return String::new();
    };
    let tail = tokens[at..].join(" ");
    quoted(&tail)
        .into_iter()
        .filter(|w| path_like(w).is_none())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The words inside quotes (`"…"`, `` `…` ``, `“…”`) in `text`.
fn quoted(text: &str) -> Vec<&str> {
    quotes(text)
        .into_iter()
        .flat_map(str::split_whitespace)
        .collect()
}

/// What is inside each pair of quotes (`"…"`, `` `…` ``, `“…”`) in `text`.
fn quotes(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (open, close) in [('"', '"'), ('`', '`'), ('\u{201c}', '\u{201d}')] {
        let mut rest = text;
        while let Some((_, after)) = rest.split_once(open)
            && let Some((inside, more)) = after.split_once(close)
        {
            out.push(inside);
            rest = more;
        }
    }
    out
}

/// Whether `token` is a word of [`SAYS`] (punctuation around it aside).
fn says(token: &str) -> bool {
    SAYS.contains(&token.trim_matches(|c: char| !c.is_alphabetic()))
}

/// Where what a sentence (`tokens`, lower case) says a file holds begins:
/// after a file named with a colon or after a word of [`SAYS`].
fn said_from(tokens: &[&str]) -> Option<usize> {
    tokens
        .iter()
        .position(|t| says(t) || (t.ends_with(':') && path_like(t).is_some()))
        .map(|at| at + 1)
}

/// The words of `text`: runs of letters (a file's name and extension are
/// words too, as any file's other words).
fn words_of(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
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
    keyword::negates(word)
        || matches!(word, "unable" | "cannot" | "yet")
        || word.starts_with("fail")
        || word.starts_with("attempt")
        || word.starts_with("tried")
        || word.starts_with("plan")
        || word.starts_with("should")
}

/// The sentences of `text`: split at line ends and at `.`, `!`, `?` or `;`
/// followed by a space or the end (a file's dot is kept).
fn sentences(text: &str) -> Vec<&str> {
    sentence_ends(text)
        .into_iter()
        .scan(0, |start, end| {
            let sentence = &text[*start..end];
            *start = end + 1;
            Some(sentence)
        })
        .filter(|s| !s.trim().is_empty())
        .collect()
}

/// Where each sentence of `text` ends (`sentences`): the byte offset of
/// its closing mark, or the text's length for the last.
pub(crate) fn sentence_ends(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut ends: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(i, b)| match b {
            b'\n' => true,
            b'.' | b'!' | b'?' | b';' => bytes.get(i + 1).is_none_or(u8::is_ascii_whitespace),
            _ => false,
        })
        .map(|(i, _)| i)
        .collect();
    ends.push(text.len());
    ends
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
mod tests;
