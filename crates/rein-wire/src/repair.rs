//! Tolerance for a small model's near misses in a tool call: arguments that
//! are almost JSON and a tool name in the wrong case or with a stray
//! prefix — repaired only when the repair is unambiguous, and always said
//! ([`Repaired`]), so the log shows what the model sent and what ran.
//!
//! Not here: an edit's text that differs only in whitespace (the file
//! tools match it), or what a caller does with a call it cannot repair
//! (it is refused with a coded error the model reads).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AssembledMessage, ContentBlock};

/// One repair of one call, as recorded with the message it repaired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repaired {
    /// The call.
    pub call_id: String,
    /// What was repaired, in plain words, with what the model sent.
    pub what: String,
}

/// The most characters of the model's original text a repair note keeps.
const SHOWN: usize = 300;

/// `raw` as a JSON object when it is almost one — a JSON string holding
/// the object, a code fence around it, trailing commas, single-quoted
/// strings, Python's `True`/`False`/`None` — and the words for what was
/// changed; `None` when no such reading gives an object.
pub fn almost_json(raw: &str) -> Option<(Value, String)> {
    let mut fixes = Vec::new();
    let mut text = raw.trim();
    if let Some(inner) = text.strip_prefix("```") {
        let inner = inner.strip_prefix("json").unwrap_or(inner);
        text = inner.strip_suffix("```").unwrap_or(inner).trim();
        fixes.push("a code fence");
    }
    let value = match serde_json::from_str::<Value>(text) {
        Ok(value) => value,
        Err(_) => {
            let (relaxed, changed) = relax(text);
            fixes.extend(changed);
            serde_json::from_str::<Value>(&relaxed).ok()?
        }
    };
    let value = match value {
        Value::String(inner) => {
            fixes.push("a JSON string holding the object");
            serde_json::from_str::<Value>(&inner).ok()?
        }
        other => other,
    };
    if !value.is_object() || fixes.is_empty() {
        return None;
    }
    let sent: String = raw.chars().take(SHOWN).collect();
    Some((
        value,
        format!(
            "the arguments were almost JSON ({}); sent: {sent}",
            fixes.join(", ")
        ),
    ))
}

/// `text` with single-quoted strings double-quoted, trailing commas
/// dropped and Python literals made JSON, outside strings only; and which
/// of those it did.
fn relax(text: &str) -> (String, Vec<&'static str>) {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut fixes = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' => {
                let (end, body) = quoted(&chars, i);
                if c == '\'' {
                    fixes.push("single quotes");
                }
                out.push('"');
                out.push_str(&body);
                out.push('"');
                i = end;
                continue;
            }
            ',' => {
                let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
                if matches!(next, Some('}' | ']')) {
                    fixes.push("trailing commas");
                    i += 1;
                    continue;
                }
            }
            _ if c.is_ascii_alphabetic() => {
                let word: String = chars[i..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
                    .collect();
                let json = match word.as_str() {
                    "True" => "true",
                    "False" => "false",
                    "None" => "null",
                    other => other,
                };
                if json != word {
                    fixes.push("Python literals");
                }
                out.push_str(json);
                i += word.chars().count();
                continue;
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    fixes.dedup();
    (out, fixes)
}

/// The string opened at `start` (by `"` or `'`): where it ends (past its
/// closing quote) and its body as the inside of a JSON string.
fn quoted(chars: &[char], start: usize) -> (usize, String) {
    let quote = chars[start];
    let mut body = String::new();
    let mut i = start + 1;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            let next = chars[i + 1];
            // `\'` means a quote in a single-quoted string; JSON has none.
            if next == '\'' {
                body.push('\'');
            } else {
                body.push(c);
                body.push(next);
            }
            i += 2;
            continue;
        }
        if c == quote {
            return (i + 1, body);
        }
        if c == '"' {
            body.push_str("\\\"");
        } else {
            body.push(c);
        }
        i += 1;
    }
    (i, body)
}

/// The one tool of `names` that `called` means, when it is unambiguous:
/// the same name in another case, with `-` for `_`, or behind a stray
/// prefix (`functions.read_file`, `default_api:read_file`,
/// `tools/read_file`). `None` when none or several match.
pub fn tool_name<'a>(called: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let bare = called
        .rsplit(['.', ':', '/'])
        .next()
        .unwrap_or(called)
        .trim();
    let key = |name: &str| name.to_ascii_lowercase().replace('-', "_");
    let wanted = key(bare);
    let mut found = names.into_iter().filter(|name| key(name) == wanted);
    let one = found.next()?;
    found.next().is_none().then_some(one)
}

/// Every repair of `message`'s calls, the tool names made right on the way:
/// a call to a tool not in `names` whose name means exactly one that is
/// gets that name (in its content block too), and arguments repaired when
/// they were assembled are said. What is recorded with the message.
pub fn calls(message: &mut AssembledMessage, names: &[String]) -> Vec<Repaired> {
    let mut repaired = Vec::new();
    for call in &mut message.tool_calls {
        if !names.contains(&call.name)
            && let Some(name) = tool_name(&call.name, names.iter().map(String::as_str))
        {
            let sent: String = call.name.chars().take(SHOWN).collect();
            for block in &mut message.content {
                if let ContentBlock::ToolUse { id, name: used, .. } = block
                    && *id == call.id
                {
                    name.clone_into(used);
                }
            }
            name.clone_into(&mut call.name);
            repaired.push(Repaired {
                call_id: call.id.clone(),
                what: format!("the tool name `{sent}` was taken as `{name}`"),
            });
        }
        if let Some(note) = &call.repaired {
            repaired.push(Repaired {
                call_id: call.id.clone(),
                what: note.clone(),
            });
        }
    }
    repaired
}

/// A message whose whole text is one tool call written as JSON —
/// `{"name": TOOL, "arguments": {…}}`, fenced or bare, naming a tool in
/// `names` — and that has no call of its own, made that call (with the id
/// `id`): a small model's chat template sometimes prints a call instead of
/// making it, and the turn would end on it as an answer. Said like every
/// repair; a message with any other text is left as it is.
pub fn call_in_text(
    message: &mut AssembledMessage,
    names: &[String],
    id: &str,
) -> Option<Repaired> {
    if !message.tool_calls.is_empty() {
        return None;
    }
    let text = message.text();
    let trimmed = text.trim();
    let fenced = trimmed.starts_with("```") && trimmed.ends_with("```") && trimmed.len() > 6;
    let inner = if fenced {
        let body = &trimmed[3..trimmed.len() - 3];
        body.strip_prefix("json").unwrap_or(body).trim()
    } else {
        trimmed
    };
    let value: Value = serde_json::from_str(inner).ok()?;
    let object = value.as_object()?;
    if object.len() != 2 {
        return None;
    }
    let called = object.get("name")?.as_str()?;
    let arguments = object.get("arguments")?.as_object()?.clone();
    let name = if names.iter().any(|n| n == called) {
        called
    } else {
        tool_name(called, names.iter().map(String::as_str))?
    };
    let input = Value::Object(arguments);
    message
        .content
        .retain(|b| !matches!(b, ContentBlock::Text { .. }));
    message.content.push(ContentBlock::ToolUse {
        id: id.to_owned(),
        name: name.to_owned(),
        input: input.clone(),
    });
    message.tool_calls.push(crate::AssembledToolCall {
        index: 0,
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: Some(input),
        error: None,
        repaired: None,
    });
    message.stop_reason = Some(crate::StopReason::ToolUse);
    let sent: String = trimmed.chars().take(SHOWN).collect();
    Some(Repaired {
        call_id: id.to_owned(),
        what: format!("a call written as text was made: {sent}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn said(text: &str) -> AssembledMessage {
        AssembledMessage {
            content: vec![ContentBlock::Text { text: text.into() }],
            ..AssembledMessage::default()
        }
    }

    #[test]
    fn a_call_written_as_the_whole_text_is_made() {
        let names = vec!["write_file".to_owned(), "read_file".to_owned()];
        let mut message = said(
            "```\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.py\", \"content\": \"x\"}}\n```",
        );
        let repaired = call_in_text(&mut message, &names, "t1").unwrap();
        assert!(repaired.what.contains("written as text"));
        assert_eq!(message.tool_calls[0].name, "write_file");
        assert_eq!(
            message.tool_calls[0].arguments,
            Some(json!({"path": "a.py", "content": "x"}))
        );
        assert!(message.text().is_empty());
        // Prose around it, an unknown tool, or a call already made: left.
        for text in [
            "Call it like this: {\"name\": \"write_file\", \"arguments\": {}}",
            "{\"name\": \"rm_rf\", \"arguments\": {}}",
            "{\"name\": \"write_file\", \"arguments\": {}, \"why\": 1}",
            "Done.",
        ] {
            let mut message = said(text);
            assert!(call_in_text(&mut message, &names, "t2").is_none(), "{text}");
            assert!(message.tool_calls.is_empty());
        }
    }

    #[test]
    fn almost_json_is_repaired_and_said() {
        for (raw, want, said) in [
            (
                r#"{"path": "a.py",}"#,
                json!({"path": "a.py"}),
                "trailing commas",
            ),
            (
                r#"{'path': 'it\'s.py'}"#,
                json!({"path": "it's.py"}),
                "single quotes",
            ),
            (
                r#""{\"path\": \"a.py\"}""#,
                json!({"path": "a.py"}),
                "a JSON string",
            ),
            (
                "```json\n{\"path\": \"a.py\"}\n```",
                json!({"path": "a.py"}),
                "a code fence",
            ),
            (
                r#"{"all": True, "x": None}"#,
                json!({"all": true, "x": null}),
                "Python",
            ),
            (
                r#"{'text': 'say "hi"', 'n': [1, 2,],}"#,
                json!({"text": "say \"hi\"", "n": [1, 2]}),
                "single quotes, trailing commas",
            ),
        ] {
            let (value, note) = almost_json(raw).unwrap_or_else(|| panic!("{raw}"));
            assert_eq!(value, want, "{raw}");
            assert!(note.contains(said), "{note}");
        }
    }

    #[test]
    fn what_is_not_almost_an_object_stays_broken() {
        for raw in [
            r#"{"path": "a.py""#,
            "[1, 2]",
            r#""just text""#,
            "path = a.py",
            r#"{"path": "a.py"}"#, // already JSON: nothing to repair
            r#"{"a": 1} {"b": 2}"#,
        ] {
            assert!(almost_json(raw).is_none(), "{raw}");
        }
    }

    #[test]
    fn a_tool_name_is_found_when_only_one_tool_fits() {
        let names = ["read_file", "write_file", "search"];
        for called in [
            "Read_File",
            "functions.read_file",
            "default_api:read_file",
            "read-file",
            "tools/READ_FILE",
        ] {
            assert_eq!(tool_name(called, names), Some("read_file"), "{called}");
        }
        assert_eq!(tool_name("readfile", names), None);
        assert_eq!(tool_name("delete_file", names), None);
        assert_eq!(
            tool_name("Search", ["search", "SEARCH"]),
            None,
            "two fit: ambiguous"
        );
    }
}
