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
    let words: Vec<String> = out
        .split(' ')
        .map(|word| {
            let bare =
                word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '_');
            let shaped = (bare.starts_with("sk-")
                || bare.starts_with("sk_")
                || bare.starts_with("ghp_")
                || bare.starts_with("xox"))
                && bare.len() >= 12;
            if shaped {
                word.replace(bare, MASK)
            } else {
                word.to_owned()
            }
        })
        .collect();
    let mut out = words.join(" ");
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
        assert!(is_secret_name("ANTHROPIC_API_KEY") && !is_secret_name("HOME"));
    }
}
