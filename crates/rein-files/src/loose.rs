//! Finding an edit's `old_text` when it differs from the file only in
//! whitespace — a small model's usual near miss: indentation lost or
//! changed, tabs for spaces, a trailing space. Line by line: a run of the
//! file's whole lines matches when each equals the text's line with runs
//! of whitespace made one space and the ends trimmed.
//!
//! Not here: whether a loose match is used (only when the exact text
//! occurs nowhere and exactly one loose match exists: `edit::apply`).

use std::ops::Range;

/// A line with its whitespace runs made one space and its ends trimmed.
fn squeezed(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The byte ranges of `text` (whole lines, the last one's newline left
/// out) that match `old` when whitespace is ignored; at most a few.
pub fn find(text: &str, old: &str) -> Vec<Range<usize>> {
    let wanted: Vec<String> = old.lines().map(squeezed).collect();
    let first = wanted.iter().position(|l| !l.is_empty());
    let last = wanted.iter().rposition(|l| !l.is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return Vec::new();
    };
    let wanted = &wanted[first..=last];
    let mut starts = Vec::new();
    let mut at = 0;
    let lines: Vec<(usize, &str)> = text
        .split_inclusive('\n')
        .map(|line| {
            let start = at;
            at += line.len();
            (start, line)
        })
        .collect();
    let mut found = Vec::new();
    for (i, window) in lines.windows(wanted.len()).enumerate() {
        let fits = window
            .iter()
            .zip(wanted)
            .all(|((_, line), want)| squeezed(line) == *want);
        if fits {
            let (start, _) = window[0];
            let (last_start, last_line) = window[window.len() - 1];
            let end = last_start + last_line.trim_end_matches(['\n', '\r']).len();
            starts.push(i);
            found.push(start..end);
            if found.len() > 9 {
                break;
            }
        }
    }
    found
}

/// `new` re-indented the way the match was: when the model's `old`
/// opened with another indentation than the file's matched lines, each
/// line of `new` starting with the model's indentation gets the file's.
pub fn reindent(new: &str, old: &str, matched: &str) -> String {
    let indent = |s: &str| -> String {
        s.lines()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.chars().take_while(|c| c.is_whitespace()).collect())
            .unwrap_or_default()
    };
    let (theirs, file) = (indent(old), indent(matched));
    if theirs == file {
        return new.to_owned();
    }
    new.split_inclusive('\n')
        .map(|line| match line.strip_prefix(theirs.as_str()) {
            Some(rest) if !line.trim().is_empty() => format!("{file}{rest}"),
            _ => line.to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n";

    #[test]
    fn lines_that_differ_only_in_whitespace_match() {
        let found = find(TEXT, "def sub(a,  b):\n\treturn a - b   ");
        assert_eq!(found.len(), 1);
        assert_eq!(&TEXT[found[0].clone()], "def sub(a, b):\n    return a - b");
        // Leading and trailing blank lines of the model's text do not count.
        assert_eq!(find(TEXT, "\nreturn a + b\n\n").len(), 1);
        // Different words never match; an all-blank text matches nothing.
        assert!(find(TEXT, "return a * b").is_empty());
        assert!(find(TEXT, "  \n ").is_empty());
        // Two places: both found (the caller refuses, it is ambiguous).
        assert_eq!(find("x = 1\ny\nx  = 1\n", "x = 1").len(), 2);
    }

    #[test]
    fn the_replacement_takes_the_files_indentation() {
        let matched = "    return a - b";
        assert_eq!(
            reindent("return b - a\n# swapped", "return a - b", matched),
            "    return b - a\n    # swapped"
        );
        assert_eq!(reindent("  same", "  x", "  x"), "  same");
    }
}
