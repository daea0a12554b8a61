//! What a summary says was read, held to the reads: a sentence saying
//! files were read ("f0.txt to f39.txt were read", "I have read f1.txt and
//! f2.txt") is false for each named file — a range counted file by file —
//! that no call of the stretch named in its arguments (whatever it did:
//! a sub-agent's task counts) and no command named. After try 32's third
//! compaction the summary said all forty files were read when thirty-four
//! had been; the model answered at once, with the last file it had read,
//! and never read the rest.
//!
//! Only what is said done is held: "asked to read", "to be read", "will
//! read" and "remain to be read" say nothing of what was read. A sentence
//! that denies is not read here (`super::unbacked` passes it by).
//!
//! Not here: what a file read is said to hold (`super::keyword`,
//! `Record::misread`).

use super::{Claim, Record, path_like};

/// The word before "read" that makes it passive and done ("were read").
const PASSIVE: &[&str] = &["was", "were", "been"];

/// The word before "read" that makes it active and done ("have read").
const ACTIVE: &[&str] = &["have", "has", "had", "i", "we", "assistant", "model"];

/// Words after which, in an active sentence, the files named are no
/// longer the ones said read.
const STOP: &[&str] = &[
    "but",
    "while",
    "whereas",
    "remain",
    "remains",
    "remaining",
    "left",
    "next",
    "then",
    "yet",
];

/// Words that join the two ends of a range of files.
const THROUGH: &[&str] = &["to", "through", "thru", "until", "-", "–", ".."];

/// The most files one range may stand for.
const MAX_RANGE: u64 = 1_000;

/// The files `sentence` says were read that `record` shows no read of.
pub(super) fn said_read(sentence: &str, record: &Record, claims: &mut Vec<Claim>) {
    let lower = sentence.to_lowercase();
    let tokens: Vec<&str> = lower.split_whitespace().collect();
    let bare = |t: &str| t.trim_matches(|c: char| !c.is_alphanumeric()).to_owned();
    let mut named: Vec<&str> = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        if bare(token) != "read" || i == 0 {
            continue;
        }
        let before = bare(tokens[i - 1]);
        if PASSIVE.contains(&before.as_str()) {
            named.extend(&tokens[..i]);
        } else if ACTIVE.contains(&before.as_str()) {
            named.extend(
                tokens[i + 1..]
                    .iter()
                    .take_while(|t| !STOP.contains(&bare(t).as_str())),
            );
        }
    }
    for name in files(&named) {
        let unread = !record.called(&name) && !record.backs_file(&name);
        let claim = Claim::NotRead(name);
        if unread && !claims.contains(&claim) {
            claims.push(claim);
        }
    }
}

/// The files `tokens` name, a range ("f0.txt to f39.txt", "f0.txt-f39.txt")
/// counted file by file.
fn files(tokens: &[&str]) -> Vec<String> {
    // Each token as a file name, or as a word joining a range.
    let mut out: Vec<String> = Vec::new();
    let mut joined = false;
    for token in tokens {
        let parts: Vec<&str> = match token.split_once(['-', '–']) {
            Some((a, b)) if path_like(a).is_some() && path_like(b).is_some() => vec![a, "-", b],
            _ => vec![token],
        };
        for part in parts {
            if THROUGH.contains(&part) {
                joined = !out.is_empty();
                continue;
            }
            let Some(path) = path_like(part) else {
                joined = false;
                continue;
            };
            match out.last().filter(|_| joined).and_then(|a| range(a, path)) {
                Some(between) => out.extend(between),
                None => out.push(path.to_owned()),
            }
            joined = false;
        }
    }
    out
}

/// The files after `from` up to and including `to`, when the two differ
/// only in a number (`f0.txt`, `f39.txt`) and the range is bounded.
fn range(from: &str, to: &str) -> Option<Vec<String>> {
    let (head, first, tail) = numbered(from)?;
    let (head_to, last, tail_to) = numbered(to)?;
    if head != head_to || tail != tail_to {
        return None;
    }
    let (a, b): (u64, u64) = (first.parse().ok()?, last.parse().ok()?);
    if b <= a || b - a > MAX_RANGE {
        return None;
    }
    // Zero-padded names (`f007.txt`) keep their width.
    let width = if first.starts_with('0') && first.len() > 1 {
        first.len()
    } else {
        0
    };
    Some(
        (a + 1..=b)
            .map(|n| format!("{head}{n:0width$}{tail}"))
            .collect(),
    )
}

/// A name split around its last run of digits.
fn numbered(name: &str) -> Option<(&str, &str, &str)> {
    let end = name.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = name[..end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    Some((&name[..start], &name[start..end], &name[end..]))
}
