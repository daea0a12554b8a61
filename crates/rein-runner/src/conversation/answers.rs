//! The JSON in a structured answer's reply (`Conversation::ask`, a graph
//! task's answer): the whole text, a fenced block, or the first value that
//! parses.
//!
//! Not here: asking for it (`surface`).

use serde_json::Value;

/// The JSON in a reply: the whole text, or the inside of a ``` fence.
pub(crate) fn parse_answer(reply: &str) -> Result<Value, String> {
    let text = reply.trim();
    let whole = serde_json::from_str::<Value>(text);
    let whole_error = match whole {
        Ok(value) => return Ok(value),
        Err(e) => e.to_string(),
    };
    // A fenced block anywhere in the reply (models often add a sentence).
    if let Some(start) = text.find("```") {
        let body = &text[start + 3..];
        let body = body.strip_prefix("json").unwrap_or(body);
        if let Some(end) = body.find("```")
            && let Ok(value) = serde_json::from_str::<Value>(body[..end].trim())
        {
            return Ok(value);
        }
    }
    // The first object or array that parses, with prose around it (a bounded
    // number of tries).
    for (at, _) in text
        .char_indices()
        .filter(|(_, c)| *c == '{' || *c == '[')
        .take(32)
    {
        let mut values = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
        if let Some(Ok(value)) = values.next() {
            return Ok(value);
        }
    }
    Err(format!("the answer is not JSON ({whole_error})"))
}
