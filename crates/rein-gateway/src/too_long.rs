//! A provider's "this request is longer than my window", recognised in each
//! API's own words, with the numbers it states: OpenAI's
//! `context_length_exceeded` ("maximum context length is 128000 tokens.
//! However, your messages resulted in 130000 tokens"), Anthropic's "prompt
//! is too long: 208310 tokens > 200000 maximum", llama.cpp's
//! `exceed_context_size_error` ("request (8231 tokens) exceeds the
//! available context size (8192 tokens)"), vLLM's "maximum context length
//! is 4096 tokens … you requested 5000 tokens" (or "your request has 3500
//! input tokens") and Ollama's "input length exceeds the context length".
//! Such an answer is `context_window_exceeded` — not a bad request — so the
//! runner can compact and ask again.
//!
//! Not here: what is done about it (the runner's window), or the window
//! asked of a server before any request (`window`).

/// A too-long refusal and what it stated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TooLong {
    /// The window the provider stated, in tokens.
    pub limit: Option<u64>,
    /// The size it counted the request at, in tokens.
    pub requested: Option<u64>,
}

/// Error codes or types that say "too long" whatever the message.
const KINDS: [&str; 3] = [
    "context_length_exceeded",
    "context_window_exceeded",
    "exceed_context_size_error",
];

/// Phrases (lower case) that say it in a message.
const PHRASES: [&str; 8] = [
    "prompt is too long",
    "exceeds the available context size",
    "larger than the max context size",
    "maximum context length is",
    "exceeds the context window",
    "exceeds the context length",
    "context length exceeded",
    "context_length_exceeded",
];

/// Where a stated window follows (lower case), first match wins.
const LIMIT_AFTER: [&str; 5] = [
    "available context size (",
    "max context size (",
    "maximum context length is ",
    " tokens > ",
    "context length of ",
];

/// Where the request's counted size follows.
const REQUESTED_AFTER: [&str; 6] = [
    "request (",
    "input (",
    "prompt is too long: ",
    "resulted in ",
    "you requested ",
    "your request has ",
];

/// `Some` when an error of type or code `kind` saying `message` is a
/// too-long refusal; the numbers it states, where it states them.
pub fn recognise(kind: Option<&str>, message: &str) -> Option<TooLong> {
    let lower = message.to_ascii_lowercase();
    let by_kind = kind.is_some_and(|k| KINDS.contains(&k));
    if !by_kind && !PHRASES.iter().any(|p| lower.contains(p)) {
        return None;
    }
    Some(TooLong {
        limit: first_number_after(&lower, &LIMIT_AFTER),
        requested: first_number_after(&lower, &REQUESTED_AFTER),
    })
}

/// The number right after the first of `markers` found in `text`.
fn first_number_after(text: &str, markers: &[&str]) -> Option<u64> {
    markers.iter().find_map(|marker| {
        let at = text.find(marker)? + marker.len();
        let digits: String = text[at..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .take(12)
            .collect();
        digits.parse().ok().filter(|n| *n > 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(kind: Option<&str>, message: &str) -> Option<(Option<u64>, Option<u64>)> {
        recognise(kind, message).map(|t| (t.limit, t.requested))
    }

    #[test]
    fn each_apis_words_are_recognised_with_their_numbers() {
        assert_eq!(
            said(
                Some("context_length_exceeded"),
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 130017 tokens. Please reduce the length of the messages."
            ),
            Some((Some(128_000), Some(130_017)))
        );
        assert_eq!(
            said(
                Some("invalid_request_error"),
                "prompt is too long: 208310 tokens > 200000 maximum"
            ),
            Some((Some(200_000), Some(208_310)))
        );
        assert_eq!(
            said(
                Some("400"),
                "request (8231 tokens) exceeds the available context size (8192 tokens), try increasing it"
            ),
            Some((Some(8192), Some(8231)))
        );
        assert_eq!(
            said(
                Some("BadRequestError"),
                "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion)."
            ),
            Some((Some(4096), Some(5000)))
        );
        assert_eq!(
            said(
                None,
                "'max_tokens' is too large: 1000. This model's maximum context length is 4096 tokens and your request has 3500 input tokens (1000 > 4096 - 3500)."
            ),
            Some((Some(4096), Some(3500)))
        );
        assert_eq!(
            said(None, "the input length exceeds the context length"),
            Some((None, None))
        );
        // The Responses API's failure: a code, no numbers.
        assert_eq!(
            said(
                Some("context_length_exceeded"),
                "Your input exceeds the context window of this model."
            ),
            Some((None, None))
        );
    }

    #[test]
    fn other_bad_requests_are_not_too_long() {
        assert_eq!(
            said(
                Some("invalid_request_error"),
                "max_tokens: must be at most 8192"
            ),
            None
        );
        assert_eq!(said(Some("400"), "messages: roles must alternate"), None);
        assert_eq!(said(None, ""), None);
    }
}
