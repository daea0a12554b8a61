//! The OpenAI Chat Completions request body.
//!
//! Written straight from the request through borrowing `Serialize` types
//! rather than a `serde_json::Value` tree: at 500 steps of history building
//! and dropping that tree was ~35% of a step's CPU (perf on
//! `cargo xtask bench --peers`), and the body is re-sent whole every step.

use rein_wire::{ContentBlock, Message, Request, Role, ToolSpec};
use serde::Serialize;
use serde_json::Value;

use super::{image_url, joined_system, result_text};

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    stream: bool,
    stream_options: StreamOptions,
    messages: Vec<Msg<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum Msg<'a> {
    System {
        content: String,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<Call<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: String,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: Url },
}

#[derive(Serialize)]
struct Url {
    url: String,
}

#[derive(Serialize)]
struct Call<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    arguments: String,
}

#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ToolFunction<'a>,
}

#[derive(Serialize)]
struct ToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    strict: bool,
}

#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchema<'a>,
}

#[derive(Serialize)]
struct JsonSchema<'a> {
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

fn user_messages<'a>(content: &'a [ContentBlock], out: &mut Vec<Msg<'a>>) {
    // Tool results are messages of their own, and must come right after
    // the assistant message that called them.
    let mut parts = Vec::new();
    for block in content {
        match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                ..
            } => {
                out.push(Msg::Tool {
                    tool_call_id: tool_use_id,
                    content: result_text(content),
                });
                // Tool messages carry text only; images follow as user content.
                for block in content {
                    if let ContentBlock::Image { source } = block {
                        parts.push(Part::ImageUrl {
                            image_url: Url {
                                url: image_url(source),
                            },
                        });
                    }
                }
            }
            ContentBlock::Text { text } => parts.push(Part::Text { text }),
            ContentBlock::Image { source } => parts.push(Part::ImageUrl {
                image_url: Url {
                    url: image_url(source),
                },
            }),
            _ => {}
        }
    }
    let content = match parts.as_slice() {
        [] => return,
        [Part::Text { text }] => UserContent::Text(text),
        _ => UserContent::Parts(parts),
    };
    out.push(Msg::User { content });
}

fn assistant_message(content: &[ContentBlock]) -> Msg<'_> {
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in content {
        match block {
            ContentBlock::Text { text: t } => text.push_str(t),
            ContentBlock::ToolUse { id, name, input } => tool_calls.push(Call {
                id,
                kind: "function",
                function: CallFunction {
                    name,
                    arguments: if input.is_object() {
                        input.to_string()
                    } else {
                        "{}".to_owned()
                    },
                },
            }),
            _ => {}
        }
    }
    Msg::Assistant {
        content: (!text.is_empty()).then_some(text),
        tool_calls,
    }
}

fn tool(spec: &ToolSpec) -> Tool<'_> {
    Tool {
        kind: "function",
        function: ToolFunction {
            name: &spec.name,
            description: &spec.description,
            parameters: &spec.input_schema,
            strict: spec.strict,
        },
    }
}

pub use crate::config::ChatDialect;

fn body(request: &Request, dialect: ChatDialect) -> Body<'_> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    messages.extend(system_message(request));
    for m in request.messages.iter() {
        message_into(m, &mut messages);
    }
    Body {
        messages,
        ..frame(request, dialect)
    }
}

/// The system prompt as the first message, if there is one.
fn system_message(request: &Request) -> Option<Msg<'static>> {
    (!request.system.is_empty()).then(|| Msg::System {
        content: joined_system(request),
    })
}

/// One message of the transcript as Chat takes it (a user message with
/// tool results becomes several).
fn message_into<'a>(m: &'a Message, out: &mut Vec<Msg<'a>>) {
    match m.role {
        Role::User => user_messages(&m.content, out),
        Role::Assistant => out.push(assistant_message(&m.content)),
    }
}

/// The JSON of one message's Chat messages, comma-separated: what the
/// message alone decides, so its bytes can be kept between requests.
pub(super) fn message_bytes(m: &Message) -> Result<Vec<u8>, serde_json::Error> {
    let mut msgs = Vec::new();
    message_into(m, &mut msgs);
    joined(&msgs)
}

/// The system message's JSON (empty without a system prompt).
pub(super) fn system_bytes(request: &Request) -> Result<Vec<u8>, serde_json::Error> {
    joined(&system_message(request).into_iter().collect::<Vec<_>>())
}

fn joined(msgs: &[Msg<'_>]) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::new();
    for (i, msg) in msgs.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, msg)?;
    }
    Ok(out)
}

/// The body's bytes with an empty `messages` array: everything but the
/// transcript.
pub(super) fn frame_bytes(
    request: &Request,
    dialect: ChatDialect,
) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&frame(request, dialect))
}

fn frame(request: &Request, dialect: ChatDialect) -> Body<'_> {
    let legacy_max_tokens = dialect.legacy_max_tokens;
    let limit = Some(request.max_output_tokens);
    Body {
        model: &request.model,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        messages: Vec::new(),
        max_tokens: limit.filter(|_| legacy_max_tokens),
        max_completion_tokens: limit.filter(|_| !legacy_max_tokens),
        tools: request.tools.iter().map(tool).collect(),
        tool_choice: request
            .tool_choice
            .filter(|_| !request.tools.is_empty())
            .map(super::openai_tool_choice),
        reasoning_effort: request
            .reasoning
            .and_then(|r| r.effort())
            .filter(|_| dialect.reasoning_effort),
        temperature: request.sampling.temperature,
        top_p: request.sampling.top_p,
        stop: &request.stop_sequences,
        response_format: request.output_schema.as_ref().map(|s| ResponseFormat {
            kind: "json_schema",
            json_schema: JsonSchema {
                name: &s.name,
                schema: &s.schema,
                strict: true,
            },
        }),
        prompt_cache_key: request.metadata.prompt_cache_key.as_deref(),
    }
}

/// The body of a streamed `POST /chat/completions`, as JSON.
pub fn openai_chat_body(request: &Request, dialect: ChatDialect) -> Value {
    serde_json::to_value(body(request, dialect)).unwrap_or(Value::Null)
}

/// The same body written straight to bytes (what is sent).
pub fn openai_chat_bytes(
    request: &Request,
    dialect: ChatDialect,
) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&body(request, dialect))
}

#[cfg(test)]
mod tests {

    use rein_wire::{ImageSource, Message, OutputSchema, SystemBlock, ToolSpec};
    use serde_json::json;

    use super::*;

    /// A request with every shape the encoder handles.
    #[expect(
        clippy::too_many_lines,
        reason = "one literal request with every shape the encoder handles"
    )]
    fn rich() -> Request {
        let png = || ImageSource::Base64 {
            media_type: "image/png".into(),
            data: "AAAA".into(),
        };
        let mut r = Request::new(
            "gpt-x",
            vec![
                Message {
                    role: Role::User,
                    content: vec![
                        ContentBlock::text("look at"),
                        ContentBlock::Image { source: png() },
                    ],
                },
                Message {
                    role: Role::Assistant,
                    content: vec![
                        ContentBlock::text("Reading."),
                        ContentBlock::ToolUse {
                            id: "c1".into(),
                            name: "read".into(),
                            input: json!({"path": "a", "n": 2}),
                        },
                        ContentBlock::ToolUse {
                            id: "c2".into(),
                            name: "odd".into(),
                            input: json!([1]),
                        },
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![
                        ContentBlock::ToolResult {
                            tool_use_id: "c1".into(),
                            content: vec![
                                ContentBlock::text("ok"),
                                ContentBlock::Image {
                                    source: ImageSource::Url {
                                        url: "https://x/y.png".into(),
                                    },
                                },
                            ],
                            is_error: false,
                        },
                        ContentBlock::ToolResult {
                            tool_use_id: "c2".into(),
                            content: vec![ContentBlock::text("bad")],
                            is_error: true,
                        },
                        ContentBlock::text("and then?"),
                    ],
                },
                Message {
                    role: Role::Assistant,
                    content: vec![ContentBlock::ToolUse {
                        id: "c3".into(),
                        name: "read".into(),
                        input: json!({}),
                    }],
                },
                Message {
                    role: Role::User,
                    content: vec![ContentBlock::ToolResult {
                        tool_use_id: "c3".into(),
                        content: vec![ContentBlock::text("done")],
                        is_error: false,
                    }],
                },
                Message::user("thanks"),
                Message::assistant("You're welcome."),
            ],
        );
        r.system = vec![
            SystemBlock { text: "one".into() },
            SystemBlock { text: "two".into() },
        ];
        r.tools = vec![
            ToolSpec {
                name: "read".into(),
                description: "Read.".into(),
                input_schema: json!({"type": "object"}),
                strict: false,
            },
            ToolSpec {
                name: "odd".into(),
                description: "Odd.".into(),
                input_schema: json!({"type": "object", "properties": {}}),
                strict: true,
            },
        ];
        r.max_output_tokens = 77;
        r.sampling.temperature = Some(0.5);
        r.sampling.top_p = Some(0.9);
        r.stop_sequences = vec!["END".into()];
        r.output_schema = Some(OutputSchema {
            name: "answer".into(),
            schema: json!({"type": "object"}),
        });
        r.metadata.prompt_cache_key = Some("k".into());
        r
    }

    /// The body the encoder wrote when it built a `serde_json::Value` tree
    /// (kept to show the direct writer sends the same JSON).
    const RICH: &str = include_str!("openai_chat_rich.json");

    #[test]
    fn every_shape_is_written_as_before() {
        let want: Value = serde_json::from_str(RICH).unwrap();
        assert_eq!(openai_chat_body(&rich(), ChatDialect::default()), want);
        let bytes = openai_chat_bytes(&rich(), ChatDialect::default()).unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), want);
        let legacy = openai_chat_body(
            &rich(),
            ChatDialect {
                legacy_max_tokens: true,
                ..ChatDialect::default()
            },
        );
        assert_eq!(legacy["max_tokens"], json!(77));
        assert!(legacy.get("max_completion_tokens").is_none());
        // A request with nothing optional writes no optional field.
        let plain = openai_chat_body(
            &Request::new("m", vec![Message::user("hi")]),
            ChatDialect::default(),
        );
        let keys: Vec<&str> = plain
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "max_completion_tokens",
                "messages",
                "model",
                "stream",
                "stream_options"
            ]
        );
        assert_eq!(
            plain["messages"],
            json!([{"role": "user", "content": "hi"}])
        );
    }
}
