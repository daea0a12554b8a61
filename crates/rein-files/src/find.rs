//! Where a text stands in a file, exactly: every occurrence of an edit's
//! old text, and how many times a new text stands as itself (not inside a
//! longer word) — what tells a change already made from one never made.
//!
//! Not here: matching with whitespace ignored (`loose`), or applying an
//! edit (`edit`).

/// Where `needle` starts in `text`, every exact occurrence (overlapping
/// ones too), at most a hundred.
pub(crate) fn occurrences(text: &str, needle: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(needle) {
        found.push(from + at);
        from += at + text[from + at..].chars().next().map_or(1, char::len_utf8);
        if found.len() > 99 {
            break;
        }
    }
    found
}

/// How many times `needle` stands in `text` as itself: an occurrence
/// inside a longer word does not count (`slug` is not in `def
/// slugify(text):` as a change already made, though its letters are).
pub(crate) fn whole_occurrences(text: &str, needle: &str) -> usize {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let starts_word = needle.chars().next().is_some_and(word);
    let ends_word = needle.chars().next_back().is_some_and(word);
    occurrences(text, needle)
        .into_iter()
        .filter(|&at| {
            let before = text[..at].chars().next_back();
            let after = text[at + needle.len()..].chars().next();
            let joined_before = starts_word && before.is_some_and(word);
            let joined_after = ends_word && after.is_some_and(word);
            !(joined_before || joined_after)
        })
        .count()
}
