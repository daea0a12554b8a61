//! Masking secrets in text someone else wrote (a child's stderr, a span's
//! field) before it is shown or stored.
//!
//! Two rules, a baseline and not a proof: the secrets a caller names are
//! replaced wherever they occur, and words shaped like API keys (`sk-…`,
//! `sk_…`, `ghp_…`, `xox…`, twelve characters or more) and whatever follows
//! `Bearer ` are masked.
//!
//! Not here: bounding or cleaning for a terminal (`visible`).

/// What a masked secret reads as.
pub const MASK: &str = "[redacted]";

/// `text` with the named `secrets` (those of 8 characters or more) and
/// secret-shaped words masked.
pub fn mask(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for secret in secrets.iter().filter(|s| s.len() >= 8) {
        out = out.replace(secret.as_str(), MASK);
    }
    // Each run of key characters (letters, digits, `-`, `_`) is a word,
    // wherever it sits: `KEY=sk-…`, `"sk-…"`, `key:sk-…`.
    let mut masked = String::with_capacity(out.len());
    let mut word = String::new();
    let is_key_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    for c in out.chars().map(Some).chain([None]) {
        if let Some(c) = c.filter(|c| is_key_char(*c)) {
            word.push(c);
            continue;
        }
        let shaped = (word.starts_with("sk-")
            || word.starts_with("sk_")
            || word.starts_with("ghp_")
            || word.starts_with("xox"))
            && word.len() >= 12;
        masked.push_str(if shaped { MASK } else { &word });
        word.clear();
        masked.extend(c);
    }
    let mut out = masked;
    if let Some(at) = out.find("Bearer ") {
        out.replace_range(at + 7.., MASK);
    }
    out
}

/// Every string in `value` with the named `secrets` (those of 8 characters
/// or more) masked — and nothing else: a tool's result keeps words merely
/// shaped like keys (code, docs), but never the keys rein itself holds.
pub fn mask_named_json(value: &mut serde_json::Value, secrets: &[String]) {
    let secrets: Vec<&String> = secrets.iter().filter(|s| s.len() >= 8).collect();
    if secrets.is_empty() {
        return;
    }
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            serde_json::Value::String(text)
                if secrets.iter().any(|s| text.contains(s.as_str())) =>
            {
                for secret in &secrets {
                    *text = text.replace(secret.as_str(), MASK);
                }
            }
            serde_json::Value::Array(items) => stack.extend(items.iter_mut()),
            serde_json::Value::Object(map) => stack.extend(map.values_mut()),
            _ => {}
        }
    }
}

/// Whether two secrets are equal, compared in constant time for strings
/// of one length (a token guard must not leak how much of a guess was
/// right).
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Whether an environment variable's name says its value is a secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"]
        .iter()
        .any(|w| upper.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_and_shaped_secrets_are_masked() {
        let s = mask(
            "key=hunter2hunter2 sk-ant-api03-abcdef and Bearer abc.def",
            &["hunter2hunter2".into()],
        );
        assert_eq!(s, "key=[redacted] [redacted] and Bearer [redacted]");
        assert_eq!(
            mask(
                "OPENAI_API_KEY=sk-live-4f1c9a2b7e3d8c6a\n\"ghp_abcdefghijkl\"",
                &[]
            ),
            "OPENAI_API_KEY=[redacted]\n\"[redacted]\""
        );
        assert!(is_secret_name("ANTHROPIC_API_KEY") && !is_secret_name("HOME"));
    }
}
