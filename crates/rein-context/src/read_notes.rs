//! What each read showed that no other read did: the `read_notes` of a
//! compaction's derived state.
//!
//! A compaction replaces old read results by the derived state and the
//! model's own summary. A small model's summary often drops the one fact a
//! later question needs ("which file mentions BLUE?"), and the list of files
//! touched says only where it looked. These notes keep, for each file read,
//! the first sentences or lines no other read in the covered history shares
//! — compared with digits folded, so `file 3: lorem …` and `file 4: lorem …`
//! count as the same filler — quoted from the log, never written by a model.
//!
//! Not a summary and not a search index: a bounded hint of where to look
//! again. Each note and the whole list have a finite size; control bytes
//! are dropped from the quotes.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

/// At most this many distinctive pieces are quoted per file.
const PIECES_PER_FILE: usize = 2;
/// A quoted piece is cut to this many characters.
const PIECE_CHARS: usize = 160;
/// The notes together stay within this many characters of paths and
/// quotes; files past it are counted in `read_notes_left_out`, not quoted.
const NOTES_CHARS: usize = 3_000;
/// A piece with fewer letters than this (a brace, a number) says nothing.
const MIN_LETTERS: usize = 3;

/// The reads seen so far, in the order their files were first read; a file
/// read again keeps its latest text.
#[derive(Default)]
pub struct Reads {
    order: Vec<String>,
    text: HashMap<String, String>,
}

impl Reads {
    /// Note a successful result of a call that named `path`. Only a result
    /// carrying text (a string, or `content`/`text` as a string) counts.
    pub fn saw(&mut self, path: &str, result: &Value) {
        let text = result
            .as_str()
            .or_else(|| result.get("content").and_then(Value::as_str))
            .or_else(|| result.get("text").and_then(Value::as_str));
        let Some(text) = text else { return };
        if !self.text.contains_key(path) {
            self.order.push(path.to_owned());
        }
        self.text.insert(path.to_owned(), text.to_owned());
    }

    /// The notes as they go into the derived state, and how many files with
    /// something distinctive were left out for room.
    pub fn notes(&self) -> (Vec<rein_sessions::ReadNote>, usize) {
        let pieces: Vec<(&str, Vec<&str>)> = self
            .order
            .iter()
            .map(|p| (p.as_str(), pieces(&self.text[p])))
            .collect();
        let mut files_with: HashMap<String, HashSet<&str>> = HashMap::new();
        for (path, ps) in &pieces {
            for p in ps {
                files_with.entry(fold(p)).or_default().insert(path);
            }
        }
        let mut notes = Vec::new();
        let mut used = 0;
        let mut left_out = 0;
        for (path, ps) in &pieces {
            let mut seen_here = HashSet::new();
            let own: Vec<String> = ps
                .iter()
                .filter(|p| {
                    let folded = fold(p);
                    files_with[&folded].len() == 1 && seen_here.insert(folded)
                })
                .take(PIECES_PER_FILE)
                .map(|p| quote(p))
                .collect();
            if own.is_empty() {
                continue;
            }
            let size: usize =
                path.chars().count() + own.iter().map(|q| q.chars().count()).sum::<usize>();
            if used + size > NOTES_CHARS {
                left_out += 1;
                continue;
            }
            used += size;
            notes.push(rein_sessions::ReadNote {
                path: (*path).to_owned(),
                saw: own,
            });
        }
        (notes, left_out)
    }
}

/// The text's sentences and lines, trimmed, with those too short to say
/// anything left out.
fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        while !rest.is_empty() {
            let end = sentence_end(rest).unwrap_or(rest.len());
            let (piece, tail) = rest.split_at(end);
            let piece = piece.trim();
            if piece.chars().filter(|c| c.is_alphabetic()).count() >= MIN_LETTERS {
                out.push(piece);
            }
            rest = tail;
        }
    }
    out
}

/// Where the first sentence of `s` ends: after a `.`, `!` or `?` that
/// follows a letter or digit and that a space follows (so `f4.txt`, `1.5`
/// and a `//! ` comment stay whole).
fn sentence_end(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    bytes
        .windows(3)
        .position(|w| {
            w[0].is_ascii_alphanumeric() && matches!(w[1], b'.' | b'!' | b'?') && w[2] == b' '
        })
        .map(|i| i + 3)
}

/// A piece as compared: lower case, every run of digits one `#`, every run
/// of white space one space.
pub fn fold(piece: &str) -> String {
    let mut out = String::with_capacity(piece.len());
    let mut last = ' ';
    for c in piece.chars() {
        let c = if c.is_ascii_digit() {
            '#'
        } else if c.is_whitespace() {
            ' '
        } else {
            c.to_ascii_lowercase()
        };
        if (c == '#' || c == ' ') && c == last {
            continue;
        }
        out.push(c);
        last = c;
    }
    out
}

/// A piece as quoted: control characters dropped, cut to `PIECE_CHARS`.
fn quote(piece: &str) -> String {
    let clean: String = piece.chars().filter(|c| !c.is_control()).collect();
    if clean.chars().count() <= PIECE_CHARS {
        return clean;
    }
    let mut cut: String = clean.chars().take(PIECE_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{NOTES_CHARS, Reads};

    /// The notes as the state records them.
    fn as_json(notes: &[rein_sessions::ReadNote]) -> Vec<serde_json::Value> {
        notes
            .iter()
            .map(|n| serde_json::to_value(n).unwrap())
            .collect()
    }

    fn filler(i: usize) -> String {
        format!("file {i}: lorem ipsum dolor sit amet. ").repeat(8)
            + &format!("Next: read f{}.txt.", i + 1)
    }

    #[test]
    fn only_what_one_file_alone_says_is_quoted() {
        let mut reads = Reads::default();
        for i in 0..6 {
            let text = if i == 3 {
                "file 3: the sea here is BLUE. ".to_owned() + &filler(3)
            } else {
                filler(i)
            };
            reads.saw(&format!("f{i}.txt"), &json!({"content": text}));
        }
        let (notes, left_out) = reads.notes();
        let notes = as_json(&notes);
        assert_eq!(
            notes,
            vec![json!({"path": "f3.txt", "saw": ["file 3: the sea here is BLUE."]})]
        );
        assert_eq!(left_out, 0);
    }

    #[test]
    fn a_file_read_again_is_noted_once_by_its_latest_text() {
        let mut reads = Reads::default();
        reads.saw(
            "a.rs",
            &json!({"content": "//! Parses the config.\nfn a() {}"}),
        );
        reads.saw(
            "b.rs",
            &json!({"content": "//! Sends the request.\nfn a() {}"}),
        );
        reads.saw(
            "a.rs",
            &json!({"content": "//! Parses the config, strictly.\nfn a() {}"}),
        );
        let (notes, _) = reads.notes();
        let notes = as_json(&notes);
        assert_eq!(
            notes,
            vec![
                json!({"path": "a.rs", "saw": ["//! Parses the config, strictly."]}),
                json!({"path": "b.rs", "saw": ["//! Sends the request."]}),
            ]
        );
    }

    #[test]
    fn notes_are_bounded_and_what_is_left_out_is_counted() {
        let mut reads = Reads::default();
        for i in 0..100 {
            let text = format!(
                "\u{1b}[31mthe word {} alone {}\u{7}",
                "x".repeat(300),
                "ab".repeat(i + 1)
            );
            reads.saw(&format!("g{i}"), &json!(text));
        }
        let (notes, left_out) = reads.notes();
        let notes = as_json(&notes);
        let quoted: usize = notes
            .iter()
            .flat_map(|n| n["saw"].as_array().cloned().unwrap_or_default())
            .chain(notes.iter().map(|n| n["path"].clone()))
            .map(|q| q.as_str().map_or(0, |s| s.chars().count()))
            .sum();
        assert!(quoted <= NOTES_CHARS, "{quoted}");
        assert_eq!(notes.len() + left_out, 100);
        let first = notes[0]["saw"][0].as_str().unwrap_or_default();
        assert!(!first.chars().any(char::is_control), "{first:?}");
        assert_eq!(first.chars().count(), super::PIECE_CHARS);
    }
}
