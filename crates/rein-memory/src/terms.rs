//! A query's words, the one rule both stores search by: runs of letters
//! and digits, lower-cased, at most [`MAX_TERMS`] of at most
//! [`MAX_TERM_CHARS`] characters. Query syntax is never passed through:
//! the words are matched as words, so no text a model writes can become
//! an FTS5 expression.
//!
//! Not here: ranking (each store's).

/// Words of a query kept, at most.
pub(crate) const MAX_TERMS: usize = 32;

/// Characters of one word kept, at most.
pub(crate) const MAX_TERM_CHARS: usize = 64;

/// The distinct words of `text`, in order.
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let word: String = word
            .chars()
            .take(MAX_TERM_CHARS)
            .flat_map(char::to_lowercase)
            .collect();
        if !out.contains(&word) {
            out.push(word);
        }
        if out.len() == MAX_TERMS {
            break;
        }
    }
    out
}

/// The FTS5 expression for `words`: each a quoted string, any of them.
#[cfg(feature = "sqlite")]
pub(crate) fn fts_query(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_runs_of_letters_and_digits_lower_cased_and_bounded() {
        assert_eq!(terms("Tabs, NOT spaces! tabs"), ["tabs", "not", "spaces"]);
        assert_eq!(terms("\" OR NEAR(x y) *"), ["or", "near", "x", "y"]);
        assert!(terms("  ... ").is_empty());
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(terms(&many).len(), MAX_TERMS);
    }

    #[test]
    fn the_fts_expression_quotes_every_word() {
        assert_eq!(
            fts_query(&terms("tabs or spaces")),
            "\"tabs\" OR \"or\" OR \"spaces\""
        );
    }
}
