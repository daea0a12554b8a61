//! An MCP server's tools as rein offers them, and a call's result as rein
//! records it: pure mappings, no I/O.
//!
//! - Names: `SERVER__TOOL`, characters a model API refuses made `_`, at
//!   most 64; a name that collides or cannot be made is left out (and
//!   said).
//! - Classes: the person's per-tool setting, else the server's hints
//!   (`readOnlyHint` → read, `destructiveHint` → destructive), else the
//!   server's configured default (asking, unless configured otherwise).
//!   Hints are the server's claims: a person who does not trust a server
//!   sets its tools' classes.
//! - Results: text stays text; images go to the model as images (inline
//!   base64 within a bound); embedded resources keep their text, binary
//!   parts are described; `isError` is a failed outcome with the server's
//!   words (`mcp_tool_error`).

use std::collections::BTreeMap;
use std::sync::Arc;

use rein_tools::Outcome;
use rein_wire::permission::PermissionClass;
use rein_wire::{ToolSpec, error::codes};
use serde_json::{Map, Value, json};

use crate::config::ServerConfig;

/// The longest tool name a model API takes.
const MAX_NAME: usize = 64;
/// The largest image (base64 characters) passed to the model inline.
const MAX_IMAGE_B64: usize = 4 * 1024 * 1024;
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// One tool of a server, as offered.
#[derive(Clone)]
pub struct RemoteTool {
    /// The name the server knows it by.
    pub remote: String,
    /// What the model sees (its name is `SERVER__TOOL`).
    pub spec: ToolSpec,
    /// Its calls' class.
    pub class: PermissionClass,
    /// Its input schema, compiled (`None`: the server's schema does not
    /// compile, so arguments are not checked here; the server checks).
    pub validator: Option<Arc<jsonschema::Validator>>,
}

/// A server's tools, by rein name, and what was left out and why.
pub fn tools_of(
    config: &ServerConfig,
    listed: &[Value],
) -> (BTreeMap<String, RemoteTool>, Vec<String>) {
    let mut tools = BTreeMap::new();
    let mut left_out = Vec::new();
    for tool in listed {
        let Some(remote) = tool.get("name").and_then(Value::as_str) else {
            left_out.push(format!("{}: a tool without a name", config.name));
            continue;
        };
        // The server's own words: shown to people only made visible.
        let shown = rein_wire::visible::visible(remote);
        let Some(name) = rein_name(&config.name, remote) else {
            left_out.push(format!("{}: `{shown}` has no usable name", config.name));
            continue;
        };
        if tools.contains_key(&name) {
            left_out.push(format!(
                "{}: `{shown}` collides with another tool as `{name}`",
                config.name
            ));
            continue;
        }
        let schema = tool
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"}));
        let validator = jsonschema::validator_for(&schema).ok().map(Arc::new);
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .or_else(|| tool.get("title").and_then(Value::as_str))
            .unwrap_or("")
            .to_owned();
        let spec = ToolSpec {
            name: name.clone(),
            description: format!(
                "{description}\n(MCP server `{}`, tool `{remote}`)",
                config.name
            ),
            input_schema: schema,
            strict: false,
        };
        tools.insert(
            name,
            RemoteTool {
                remote: remote.to_owned(),
                spec,
                class: class_of(config, remote, tool.get("annotations")),
                validator,
            },
        );
    }
    (tools, left_out)
}

/// `SERVER__TOOL` made acceptable to every model API, or `None`.
pub fn rein_name(server: &str, tool: &str) -> Option<String> {
    let cleaned: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.trim_matches('_').is_empty() {
        return None;
    }
    let name = format!("{server}__{cleaned}");
    (name.len() <= MAX_NAME).then_some(name)
}

/// The class of `remote`'s calls.
pub fn class_of(
    config: &ServerConfig,
    remote: &str,
    annotations: Option<&Value>,
) -> PermissionClass {
    if let Some(set) = config.tools.get(remote) {
        return set.class();
    }
    let hint = |key: &str| {
        annotations
            .and_then(|a| a.get(key))
            .and_then(Value::as_bool)
    };
    if hint("readOnlyHint") == Some(true) {
        PermissionClass::Read
    } else if hint("destructiveHint") == Some(true) {
        PermissionClass::Destructive
    } else {
        config.default_class.class()
    }
}

/// A `tools/call` result (its JSON) as rein's outcome.
pub fn outcome(result: &Value) -> Outcome {
    let mut parts = Vec::new();
    let mut texts = Vec::new();
    let mut images = Vec::new();
    let content = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for block in &content {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let field = |k: &str| block.get(k).and_then(Value::as_str);
        match kind {
            "text" => {
                let text = field("text").unwrap_or("");
                texts.push(text.to_owned());
                parts.push(json!({"type": "text", "text": text}));
            }
            "image" => {
                let media_type = field("mimeType").unwrap_or("");
                let data = field("data").unwrap_or("");
                if IMAGE_TYPES.contains(&media_type)
                    && !data.is_empty()
                    && data.len() <= MAX_IMAGE_B64
                {
                    images.push(json!({"media_type": media_type, "data": data}));
                    parts.push(json!({"type": "image", "media_type": media_type, "shown": true}));
                } else {
                    parts.push(
                        json!({"type": "image", "media_type": media_type, "shown": false,
                        "note": "not shown: an unsupported type, empty, or too large"}),
                    );
                }
            }
            "audio" => parts.push(json!({"type": "audio", "media_type": field("mimeType"),
                "shown": false, "note": "audio is not passed to the model"})),
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let get = |k: &str| resource.get(k).and_then(Value::as_str);
                let mut part = Map::new();
                part.insert("type".into(), json!("resource"));
                part.insert("uri".into(), json!(get("uri")));
                part.insert("mime_type".into(), json!(get("mimeType")));
                if let Some(text) = get("text") {
                    texts.push(text.to_owned());
                    part.insert("text".into(), json!(text));
                } else if let Some(blob) = get("blob") {
                    part.insert("bytes".into(), json!(blob.len() / 4 * 3));
                    part.insert(
                        "note".into(),
                        json!("binary content is not passed to the model"),
                    );
                }
                parts.push(Value::Object(part));
            }
            "resource_link" => parts.push(json!({"type": "resource_link", "uri": field("uri"),
                "name": field("name"), "description": field("description")})),
            other => {
                parts.push(json!({"type": other, "note": "a content type rein does not know"}))
            }
        }
    }
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let message = if texts.is_empty() {
            "the tool reported an error and said nothing more".to_owned()
        } else {
            texts.join("\n")
        };
        return Outcome::Failed {
            code: codes::MCP_TOOL_ERROR,
            message,
            detail: Some(json!({"content": parts})),
            retryable: false,
        };
    }
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    if images.is_empty() && structured.is_none() && parts.iter().all(|p| p["type"] == "text") {
        return Outcome::ok(Value::String(texts.join("\n")));
    }
    let mut value = Map::new();
    value.insert("content".into(), Value::Array(parts));
    if let Some(structured) = structured {
        value.insert("structured".into(), structured.clone());
    }
    if !images.is_empty() {
        value.insert("_images".into(), Value::Array(images));
    }
    Outcome::ok(Value::Object(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::McpConfig;

    fn config() -> ServerConfig {
        McpConfig::parse(
            "[mcp.servers.ev]\ncommand='x'\n[mcp.servers.ev.tools]\nget-env='destructive'\n",
        )
        .expect("valid")
        .servers["ev"]
            .clone()
    }

    #[test]
    fn names_are_prefixed_and_made_safe() {
        assert_eq!(rein_name("ev", "get-sum").as_deref(), Some("ev__get-sum"));
        assert_eq!(rein_name("ev", "a.b/c").as_deref(), Some("ev__a_b_c"));
        assert_eq!(rein_name("ev", "..."), None);
        assert_eq!(rein_name("ev", &"x".repeat(80)), None);
    }

    #[test]
    fn hostile_names_become_safe_or_are_left_out_without_control_bytes() {
        let listed = [
            json!({"name": "\u{1b}[2J\u{1b}]0;pwned\u{7}"}),
            json!({"name": "\u{1b}\u{7}"}),
            json!({"name": "a.b"}),
            json!({"name": "a/b"}),
        ];
        let (tools, left_out) = tools_of(&config(), &listed);
        assert!(
            tools.keys().all(|n| n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')),
            "{:?}",
            tools.keys().collect::<Vec<_>>()
        );
        assert!(tools.contains_key("ev__a_b"));
        assert_eq!(left_out.len(), 2, "{left_out:?}");
        assert!(
            left_out.iter().any(|l| l.contains("collides")),
            "{left_out:?}"
        );
        assert!(
            left_out.iter().any(|l| l.contains("no usable name")),
            "{left_out:?}"
        );
        for said in &left_out {
            assert!(
                !said.contains('\u{1b}') && !said.contains('\u{7}'),
                "{said:?}"
            );
        }
    }

    #[test]
    fn classes_come_from_the_person_then_the_hints_then_the_default() {
        let config = config();
        let read = json!({"readOnlyHint": true});
        assert_eq!(
            class_of(&config, "echo", Some(&read)),
            PermissionClass::Read
        );
        assert_eq!(
            class_of(&config, "get-env", Some(&read)),
            PermissionClass::Destructive
        );
        assert_eq!(
            class_of(&config, "rm", Some(&json!({"destructiveHint": true}))),
            PermissionClass::Destructive
        );
        assert_eq!(class_of(&config, "post", None), PermissionClass::Write);
    }

    #[test]
    fn results_map_text_images_resources_and_errors() {
        assert_eq!(
            outcome(&json!({"content": [{"type": "text", "text": "Echo: hi"}]})),
            Outcome::ok(json!("Echo: hi"))
        );
        let Outcome::Ok { result, .. } = outcome(&json!({"content": [
            {"type": "text", "text": "a tiny image"},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "resource", "resource": {"uri": "r://1", "mimeType": "text/plain", "text": "inside"}},
            {"type": "resource", "resource": {"uri": "r://2", "blob": "AAAA"}}
        ]})) else {
            panic!("ok expected");
        };
        assert_eq!(result["_images"][0]["media_type"], "image/png");
        assert_eq!(result["content"][2]["text"], "inside");
        assert_eq!(result["content"][3]["bytes"], 3);
        let Outcome::Failed { code, message, .. } = outcome(
            &json!({"isError": true, "content": [{"type": "text", "text": "no such tool"}]}),
        ) else {
            panic!("failed expected");
        };
        assert_eq!(code, "mcp_tool_error");
        assert_eq!(message, "no such tool");
    }
}
