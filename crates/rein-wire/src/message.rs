//! Messages and content blocks: what a conversation is made of.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person (or the harness speaking for them, e.g. tool results).
    User,
    /// The model.
    Assistant,
}

/// Where an image's bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ImageSource {
    /// Inline base64 data with its media type (`image/png`, ...).
    Base64 {
        /// The MIME type of the image.
        media_type: String,
        /// Base64-encoded bytes.
        data: String,
    },
    /// A URL the provider fetches itself.
    Url {
        /// The image's address.
        url: String,
    },
}

/// One block of a message's content.
///
/// Providers each have their own block shapes; this enum is the common
/// ground. Blocks a provider invents that rein does not know are not
/// represented here: decoders pass over them without failing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// Where the image's bytes are.
        source: ImageSource,
    },
    /// A call the model asks the harness to make.
    ToolUse {
        /// The provider's call id, echoed back in the matching result.
        id: String,
        /// The tool's name.
        name: String,
        /// The parsed JSON arguments (always an object for well-formed calls).
        input: Value,
    },
    /// The result of a tool call, sent back to the model.
    ToolResult {
        /// The id of the [`ContentBlock::ToolUse`] this answers.
        tool_use_id: String,
        /// The result's content (text and images).
        content: Vec<ContentBlock>,
        /// Whether the call failed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// The model's visible reasoning, with the provider's signature that
    /// must be sent back unchanged.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// The opaque signature (Anthropic) or encrypted content (OpenAI).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// The provider's id for the reasoning item (OpenAI Responses
        /// `rs_…`), sent back with it; `None` for Anthropic's blocks.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// Reasoning the provider withheld; only the opaque payload is kept.
    RedactedThinking {
        /// The opaque payload to send back unchanged.
        data: String,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// The call this block asks for, when it is a [`ContentBlock::ToolUse`].
    pub fn tool_call(&self) -> Option<ToolCall> {
        match self {
            ContentBlock::ToolUse { id, name, input } => Some(ToolCall {
                id: id.clone(),
                tool: name.clone(),
                arguments: input.clone(),
            }),
            _ => None,
        }
    }
}

/// A tool call as it travels through the harness: its id, the tool it
/// names and its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id (what its result answers).
    pub id: String,
    /// The tool's name.
    pub tool: String,
    /// Its arguments (a JSON object for a well-formed call).
    pub arguments: Value,
}

impl ToolCall {
    /// A call of `tool` with `arguments`, under `id`.
    pub fn new(id: impl Into<String>, tool: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            tool: tool.into(),
            arguments,
        }
    }
}

/// A message in a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its content, in order.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user message holding one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// An assistant message holding one text block.
    pub fn assistant(text: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// The concatenated text blocks of this message.
    pub fn text(&self) -> String {
        text_of(&self.content)
    }
}

/// The text blocks of `blocks`, concatenated.
pub fn text_of(blocks: &[ContentBlock]) -> String {
    let mut out = String::new();
    for block in blocks {
        if let ContentBlock::Text { text } = block {
            out.push_str(text);
        }
    }
    out
}
