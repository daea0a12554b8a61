//! What a summary says of a keyword — a quoted word, the word after
//! "word", "text", "string", "term" or "phrase", or a word written in
//! capitals as a task names it (`BLUE`) — held to the reads: which files
//! are said to hold it, and which not.
//!
//! - **Denied** (`denied`): a sentence saying that no file, or a named file,
//!   holds the word ("there were no files that contained the word "BLUE"")
//!   is false when a read showed it. After a compaction such a sentence
//!   stands beside the state that quotes the file, and a small model
//!   believes the sentence (tries 25 to 27). A sentence that carves out
//!   exceptions ("except", "other than", "but") is read whole: it is false
//!   only when a file it does not name showed the word; one that names no
//!   file ("no other file mentions BLUE") excepts a file named elsewhere and
//!   is not held. A file named that was never read is not held here.
//! - **Listed** (`listed`): a sentence naming files and saying they hold
//!   the word ("f0.txt, f1.txt … all contain the word "BLUE"") is false
//!   for a named file whose reads never showed it. A sentence that
//!   contrasts ("unlike", "but", "whereas") or asks ("which", "whether") is
//!   not held.
//!
//! A quote of more than three words is a sentence, not a word meant.
//!
//! Not here: a word said of one file in other ways (`Record::misread`),
//! hedges such as "should" or "plan" (no denial: a plan claims nothing).

use super::{Claim, MIN_WORD, Record, clauses, path_like, quotes, says, words_of};

/// Words that deny; a sentence with one and a word of [`super::SAYS`] says
/// what a file lacks.
pub(super) fn negates(word: &str) -> bool {
    matches!(
        word,
        "not" | "never" | "no" | "none" | "nothing" | "neither" | "nor" | "without"
    ) || word.ends_with("n't")
}

/// Words that carve exceptions out of a denial.
const EXCEPT: &[&str] = &[
    "except", "other", "others", "besides", "apart", "aside", "but",
];

/// Words that keep a sentence listing files from saying each holds the
/// word: a contrast, or a question.
const NOT_EACH: &[&str] = &[
    "unlike", "but", "except", "whereas", "while", "other", "others", "besides", "apart", "aside",
    "which", "whether", "if", "find", "search", "looking", "asked", "ask",
];

/// Words after which the next word is the one meant.
const NAMING: &[&str] = &["word", "text", "string", "term", "phrase", "keyword"];

/// A quote of more words than this is a sentence, not a word meant.
const MAX_QUOTED: usize = 3;

/// Extra verbs that, denied, say a word is in no file.
const FOUND: &[&str] = &["found", "appear", "appears", "appeared", "present"];

/// The denials in `sentence` that `record`'s reads contradict.
pub(super) fn denied(sentence: &str, record: &Record, claims: &mut Vec<Claim>) {
    if record.reads.is_empty() {
        return;
    }
    let lower = sentence.to_lowercase();
    if words_of(&lower).any(|w| EXCEPT.contains(&w)) {
        clause(sentence, true, record, claims);
    } else {
        for part in clauses(sentence) {
            clause(part, false, record, claims);
        }
    }
}

/// One clause (or a whole sentence with exceptions, `except`).
fn clause(text: &str, except: bool, record: &Record, claims: &mut Vec<Claim>) {
    let lower = text.to_lowercase();
    let tokens: Vec<&str> = lower.split_whitespace().collect();
    let denies = words_of(&lower).any(negates) || tokens.iter().any(|t| negates(bare(t)));
    let verb = tokens.iter().any(|t| says(t) || FOUND.contains(&bare(t)));
    if !denies || !verb {
        return;
    }
    let named = named(text, record);
    if except && named.is_empty() {
        // "No other file mentions BLUE": the file excepted was named in
        // another sentence, so this one cannot be read alone.
        return;
    }
    for word in keywords(text) {
        let shown: Vec<&str> = record
            .reads
            .iter()
            .filter(|(_, words)| words.contains(&word))
            .map(|(path, _)| path.as_str())
            .collect();
        let is_named = |path: &str| named.contains(&Some(path));
        let claim = if named.is_empty() || except {
            shown.iter().find(|p| !is_named(p)).map(|p| Claim::Denied {
                file: None,
                word: word.clone(),
                shown_by: (*p).to_owned(),
            })
        } else {
            shown.iter().find(|p| is_named(p)).map(|p| Claim::Denied {
                file: Some((*p).to_owned()),
                word: word.clone(),
                shown_by: (*p).to_owned(),
            })
        };
        if let Some(claim) = claim
            && !claims.contains(&claim)
        {
            claims.push(claim);
        }
    }
}

/// The files named in an undenied `sentence` that says a file holds a
/// keyword ("f0.txt and f1.txt contain BLUE", "the file that mentions BLUE
/// is f12.txt"), that never showed it: one claim per keyword, on the first
/// such file.
pub(super) fn listed(sentence: &str, record: &Record, claims: &mut Vec<Claim>) {
    if record.reads.is_empty() {
        return;
    }
    let lower = sentence.to_lowercase();
    if words_of(&lower).any(|w| NOT_EACH.contains(&w)) {
        return;
    }
    // The saying verbs after the first file named ("… shows that f0.txt
    // and f1.txt contain BLUE"), or in the whole sentence when the file
    // comes last ("the file that mentions BLUE is f12.txt"): one verb, one
    // claim; two ("f3.txt says BLUE and f0.txt says lorem") pair each file
    // with its own words.
    let tokens: Vec<&str> = lower.split_whitespace().collect();
    let first = tokens.iter().position(|t| !named(t, record).is_empty());
    let after = first.map_or(0, |at| tokens[at..].iter().filter(|t| says(t)).count());
    let verbs = if after == 0 {
        tokens.iter().filter(|t| says(t)).count()
    } else {
        after
    };
    if verbs != 1 {
        return;
    }
    let files: Vec<&str> = named(sentence, record).into_iter().flatten().collect();
    for word in keywords(sentence) {
        let missing = files.iter().find(|p| !record.reads[**p].contains(&word));
        if let Some(path) = missing {
            let claim = Claim::Misread((*path).to_owned(), word);
            if !claims.contains(&claim) {
                claims.push(claim);
            }
        }
    }
}

/// The files `text` names: each read one, and `None` for one named that
/// was never read (by path, or by a name shaped like the files read).
fn named<'r>(text: &str, record: &'r Record) -> Vec<Option<&'r str>> {
    let mut out = Vec::new();
    for token in text.split_whitespace() {
        if let Some(path) = path_like(token) {
            out.push(record.read_as(path));
            continue;
        }
        let name = bare(token).to_lowercase();
        if let Some(path) = record.read_by_stem(&name) {
            out.push(Some(path));
        } else if record.like_a_read_file(&name) {
            out.push(None);
        }
    }
    out
}

/// The words `text` means as a file's words, in lower case: quoted, named
/// ("the word BLUE"), or in capitals outside a quote.
fn keywords(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut out: Vec<String> = quotes(&lower)
        .into_iter()
        .filter(|q| q.split_whitespace().count() <= MAX_QUOTED)
        .flat_map(words_of)
        .map(str::to_owned)
        .collect();
    let tokens: Vec<&str> = text.split_whitespace().collect();
    for pair in tokens.windows(2) {
        if NAMING.contains(&bare(&pair[0].to_lowercase())) {
            out.extend(words_of(&pair[1].to_lowercase()).map(str::to_owned));
        }
    }
    let mut unquoted = text.to_owned();
    for quote in quotes(text) {
        unquoted = unquoted.replacen(quote, " ", 1);
    }
    for token in unquoted.split_whitespace() {
        let word = bare(token);
        let capitals = word.chars().all(|c| c.is_ascii_uppercase());
        if capitals && word.len() >= MIN_WORD && !negates(&word.to_lowercase()) {
            out.push(word.to_lowercase());
        }
    }
    out.retain(|w| {
        w.chars().count() >= MIN_WORD
            && path_like(w).is_none()
            && !says(w)
            && !matches!(w.as_str(), "file" | "files")
            && !FOUND.contains(&w.as_str())
            && !NAMING.contains(&w.as_str())
    });
    out.sort();
    out.dedup();
    out
}

/// `token` without the punctuation around it.
fn bare(token: &str) -> &str {
    token.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
}
