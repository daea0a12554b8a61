//! Folding a stream of [`StreamEvent`]s into the completed message.
//!
//! The assembler is a pure reducer: it never fails on an event. Tool-call
//! arguments are parsed when the message is finished; arguments that are not
//! a JSON object become a `tool_arguments_malformed` error on that call
//! (the rest of the message is kept), so a caller can tell the model.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::error::{AgentError, codes};
use crate::event::{StopReason, StreamEvent};
use crate::message::{ContentBlock, Message, Role};
use crate::usage::Usage;

/// A tool call with its arguments assembled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssembledToolCall {
    /// Position within the message.
    pub index: u32,
    /// The provider's call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The parsed arguments, when they are a JSON object.
    pub arguments: Option<Value>,
    /// Why the arguments could not be used, when they could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<AgentError>,
    /// What was repaired in arguments that were almost JSON (see
    /// [`crate::repair::almost_json`]), when they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repaired: Option<String>,
}

/// The completed message of one model call.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct AssembledMessage {
    /// The provider's message id.
    pub id: Option<String>,
    /// The model that answered.
    pub model: Option<String>,
    /// The content blocks in the order they were streamed.
    pub content: Vec<ContentBlock>,
    /// The tool calls, by index.
    pub tool_calls: Vec<AssembledToolCall>,
    /// The last usage snapshot.
    pub usage: Option<Usage>,
    /// Why the model stopped.
    pub stop_reason: Option<StopReason>,
    /// An error the provider reported inside the stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<AgentError>,
}

impl AssembledMessage {
    /// All answer text, concatenated.
    pub fn text(&self) -> String {
        crate::message::text_of(&self.content)
    }

    /// The assistant message to put in the history.
    pub fn to_message(&self) -> Message {
        Message {
            role: Role::Assistant,
            content: self.content.clone(),
        }
    }

    /// The first problem with this message: a provider error, else a
    /// malformed tool call.
    pub fn first_error(&self) -> Option<&AgentError> {
        self.error
            .as_ref()
            .or_else(|| self.tool_calls.iter().find_map(|c| c.error.as_ref()))
    }
}

#[derive(Debug)]
struct PendingCall {
    id: String,
    name: String,
    arguments: String,
    content_position: usize,
}

/// Folds [`StreamEvent`]s into an [`AssembledMessage`].
#[derive(Debug, Default)]
pub struct Assembler {
    message: AssembledMessage,
    calls: BTreeMap<u32, PendingCall>,
}

impl Assembler {
    /// A fresh assembler.
    pub fn new() -> Self {
        Assembler::default()
    }

    /// Take in one event.
    #[expect(clippy::too_many_lines, reason = "one arm per stream event")]
    pub fn push(&mut self, event: &StreamEvent) {
        let msg = &mut self.message;
        match event {
            StreamEvent::MessageStart { id, model } => {
                if msg.id.is_none() {
                    msg.id.clone_from(id);
                }
                if msg.model.is_none() {
                    msg.model = Some(model.clone());
                }
            }
            StreamEvent::TextDelta { text } => match msg.content.last_mut() {
                Some(ContentBlock::Text { text: last }) => last.push_str(text),
                _ => msg.content.push(ContentBlock::text(text.clone())),
            },
            StreamEvent::TextReplaced { streamed, text } => match msg.content.last_mut() {
                Some(ContentBlock::Text { text: last }) if last.ends_with(streamed.as_str()) => {
                    last.truncate(last.len() - streamed.len());
                    last.push_str(text);
                }
                _ => msg.content.push(ContentBlock::text(text.clone())),
            },
            StreamEvent::ThinkingDelta { text } => match msg.content.last_mut() {
                Some(ContentBlock::Thinking {
                    thinking,
                    signature: None,
                    ..
                }) => thinking.push_str(text),
                _ => msg.content.push(ContentBlock::Thinking {
                    thinking: text.clone(),
                    signature: None,
                    id: None,
                }),
            },
            StreamEvent::ThinkingSignature {
                signature,
                id: None,
            } => match msg.content.last_mut() {
                // Anthropic's signature may come in pieces.
                Some(ContentBlock::Thinking {
                    signature: sig,
                    id: None,
                    ..
                }) => {
                    sig.get_or_insert_with(String::new).push_str(signature);
                }
                _ => msg.content.push(ContentBlock::Thinking {
                    thinking: String::new(),
                    signature: Some(signature.clone()),
                    id: None,
                }),
            },
            // A whole item (Responses): it closes the block its summary
            // streamed into, or stands alone — never an earlier item's.
            StreamEvent::ThinkingSignature {
                signature,
                id: Some(item),
            } => match msg.content.last_mut() {
                Some(ContentBlock::Thinking {
                    signature: sig @ None,
                    id: open @ None,
                    ..
                }) => {
                    *sig = Some(signature.clone());
                    *open = Some(item.clone());
                }
                _ => msg.content.push(ContentBlock::Thinking {
                    thinking: String::new(),
                    signature: Some(signature.clone()),
                    id: Some(item.clone()),
                }),
            },
            StreamEvent::RedactedThinking { data } => {
                msg.content
                    .push(ContentBlock::RedactedThinking { data: data.clone() });
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                let content_position = msg.content.len();
                msg.content.push(ContentBlock::ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                    input: Value::Null,
                });
                self.calls.insert(
                    *index,
                    PendingCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments: String::new(),
                        content_position,
                    },
                );
            }
            StreamEvent::ToolCallDelta { index, fragment } => {
                if let Some(call) = self.calls.get_mut(index) {
                    call.arguments.push_str(fragment);
                }
            }
            StreamEvent::ToolCallEnd { .. } => {}
            StreamEvent::Usage { usage } => msg.usage = Some(*usage),
            StreamEvent::Stop { reason } => msg.stop_reason = Some(reason.clone()),
            StreamEvent::Error {
                code,
                message,
                retryable,
            } => {
                msg.error =
                    Some(AgentError::new(code.clone(), message.clone()).retryable(*retryable));
            }
        }
    }

    /// Finish: parse every tool call's arguments and return the message.
    pub fn finish(mut self) -> AssembledMessage {
        let truncated = self.message.stop_reason == Some(StopReason::MaxTokens);
        for (index, call) in std::mem::take(&mut self.calls) {
            let (arguments, error, repaired) = parse_arguments(&call, truncated);
            if let Some(ContentBlock::ToolUse { input, .. }) =
                self.message.content.get_mut(call.content_position)
            {
                *input = arguments.clone().unwrap_or(Value::Null);
            }
            self.message.tool_calls.push(AssembledToolCall {
                index,
                id: call.id,
                name: call.name,
                arguments,
                error,
                repaired,
            });
        }
        self.message
    }
}

/// A call's arguments, or why they cannot be used, and what was repaired.
type Parsed = (Option<Value>, Option<AgentError>, Option<String>);

fn parse_arguments(call: &PendingCall, truncated: bool) -> Parsed {
    let raw = call.arguments.trim();
    if raw.is_empty() {
        // A call without arguments streams no fragments (or an empty one).
        return (Some(Value::Object(Default::default())), None, None);
    }
    let parsed = serde_json::from_str::<Value>(raw);
    if let Ok(value @ Value::Object(_)) = parsed {
        return (Some(value), None, None);
    }
    // Cut off by the output limit is never guessed at.
    if !truncated && let Some((value, note)) = crate::repair::almost_json(raw) {
        return (Some(value), None, Some(note));
    }
    let problem = match parsed {
        Ok(_) => "are JSON but not an object".to_owned(),
        Err(err) if truncated => format!("were cut off by the output limit ({err})"),
        Err(err) => format!("are not valid JSON ({err})"),
    };
    let prefix: String = raw.chars().take(200).collect();
    let error = AgentError::new(
        codes::TOOL_ARGUMENTS_MALFORMED,
        format!("the arguments of tool call `{}` {problem}", call.name),
    )
    .with_field("tool", call.name.clone())
    .with_field("call_id", call.id.clone())
    .with_field("arguments_prefix", prefix)
    .with_field("arguments_len", raw.len());
    (None, Some(error), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call_events(fragments: &[&str]) -> Vec<StreamEvent> {
        let mut events = vec![StreamEvent::ToolCallStart {
            index: 0,
            id: "c1".into(),
            name: "add".into(),
        }];
        for f in fragments {
            events.push(StreamEvent::ToolCallDelta {
                index: 0,
                fragment: (*f).into(),
            });
        }
        events.push(StreamEvent::ToolCallEnd { index: 0 });
        events
    }

    fn assemble(events: &[StreamEvent]) -> AssembledMessage {
        let mut a = Assembler::new();
        for e in events {
            a.push(e);
        }
        a.finish()
    }

    #[test]
    fn fragments_join_into_arguments() {
        let m = assemble(&call_events(&["{\"a\":", " 1, \"b\"", ":2}"]));
        assert_eq!(
            m.tool_calls[0].arguments,
            Some(serde_json::json!({"a":1,"b":2}))
        );
        assert!(m.first_error().is_none());
        assert!(matches!(&m.content[0], ContentBlock::ToolUse { input, .. } if input["b"] == 2));
    }

    #[test]
    fn empty_arguments_are_an_empty_object() {
        let m = assemble(&call_events(&[]));
        assert_eq!(m.tool_calls[0].arguments, Some(serde_json::json!({})));
    }

    #[test]
    fn malformed_arguments_are_a_coded_error_not_a_panic() {
        let m = assemble(&call_events(&["{\"a\": 1"]));
        let err = m.tool_calls[0].error.as_ref().map(|e| e.code.clone());
        assert_eq!(err, Some(codes::TOOL_ARGUMENTS_MALFORMED));
        let m = assemble(&call_events(&["[1,2]"]));
        assert!(m.tool_calls[0].error.is_some());
    }

    #[test]
    fn a_replaced_part_of_the_text_takes_the_final_words() {
        let m = assemble(&[
            StreamEvent::TextDelta {
                text: "First.\n\n".into(),
            },
            StreamEvent::TextDelta {
                text: "Got it".into(),
            },
            StreamEvent::TextReplaced {
                streamed: "Got it".into(),
                text: "Got it, done.".into(),
            },
        ]);
        assert_eq!(m.text(), "First.\n\nGot it, done.");
        // Nothing to replace (the part is not at the end): the final words
        // are kept as their own block rather than lost.
        let m = assemble(&[
            StreamEvent::TextDelta { text: "a".into() },
            StreamEvent::TextReplaced {
                streamed: "zzz".into(),
                text: "b".into(),
            },
        ]);
        assert_eq!(m.text(), "ab");
    }

    #[test]
    fn text_and_thinking_keep_their_order() {
        let m = assemble(&[
            StreamEvent::ThinkingDelta { text: "hm".into() },
            StreamEvent::ThinkingSignature {
                signature: "sig".into(),
                id: None,
            },
            StreamEvent::TextDelta { text: "He".into() },
            StreamEvent::TextDelta { text: "llo".into() },
        ]);
        assert_eq!(m.text(), "Hello");

        assert_eq!(
            m.content[0],
            ContentBlock::Thinking {
                thinking: "hm".into(),
                signature: Some("sig".into()),
                id: None,
            }
        );
    }

    #[test]
    fn each_responses_reasoning_item_is_a_block_of_its_own() {
        // Item 1 streams a summary and closes; item 2 has no summary; a
        // call between them keeps its place.
        let m = assemble(&[
            StreamEvent::ThinkingDelta {
                text: "plan".into(),
            },
            StreamEvent::ThinkingSignature {
                signature: "enc1".into(),
                id: Some("rs_1".into()),
            },
            StreamEvent::ToolCallStart {
                index: 0,
                id: "c1".into(),
                name: "t".into(),
            },
            StreamEvent::ToolCallEnd { index: 0 },
            StreamEvent::ThinkingSignature {
                signature: "enc2".into(),
                id: Some("rs_2".into()),
            },
        ]);
        let kinds: Vec<(Option<&str>, Option<&str>)> = m
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Thinking { signature, id, .. } => {
                    (id.as_deref(), signature.as_deref())
                }
                _ => (None, None),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                (Some("rs_1"), Some("enc1")),
                (None, None),
                (Some("rs_2"), Some("enc2"))
            ]
        );
    }
}
