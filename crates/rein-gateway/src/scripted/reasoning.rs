//! The scripted brain's reasoning: the thought it signs before each
//! message, and the check that a tool loop brings it back unchanged.
//!
//! Not here: when it reasons (the brain's `stream`).

use rein_wire::error::codes;
use rein_wire::{AgentError, ContentBlock, Request, Role};

/// What the brain "thinks" before a message: which calls it makes.
pub(super) fn thought_about(reply: &str, calls: &[rein_wire::ToolCall]) -> String {
    if calls.is_empty() {
        return format!("Nothing to call; the answer is {} characters.", reply.len());
    }
    let names: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
    format!("I will call {}.", names.join(", "))
}

/// The brain's signature of its own thinking: changed text, changed
/// signature (FNV-1a; it proves nothing, it only detects a change).
pub(super) fn signature_of(thought: &str) -> String {
    let hash = thought.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("scripted-{hash:016x}")
}

/// Anthropic's rule for a tool loop with thinking on: when the request
/// answers tool calls, the message that made them comes back with its
/// signed thinking block first, unchanged.
pub(super) fn reasoning_came_back(request: &Request) -> Result<(), AgentError> {
    let answering = request.messages.last().is_some_and(|m| {
        m.role == Role::User
            && m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolResult { .. }))
    });
    if !answering {
        return Ok(());
    }
    let Some(caller) = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
    else {
        return Ok(());
    };
    match caller.content.first() {
        Some(ContentBlock::Thinking {
            thinking,
            signature: Some(signature),
            ..
        }) if *signature == signature_of(thinking) => Ok(()),
        Some(ContentBlock::Thinking { .. }) => Err(AgentError::new(
            codes::PROVIDER_BAD_REQUEST,
            "scripted model: the thinking block of the message that made these calls was changed",
        )),
        _ => Err(AgentError::new(
            codes::PROVIDER_BAD_REQUEST,
            "scripted model: the message that made these calls must start with its thinking block",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_wire::Message;

    fn loop_with(first: Option<ContentBlock>) -> Request {
        let mut content: Vec<ContentBlock> = first.into_iter().collect();
        content.push(ContentBlock::ToolUse {
            id: "c1".into(),
            name: "read_file".into(),
            input: serde_json::json!({}),
        });
        Request::new(
            "m",
            vec![
                Message::user("go"),
                Message {
                    role: Role::Assistant,
                    content,
                },
                Message {
                    role: Role::User,
                    content: vec![ContentBlock::ToolResult {
                        tool_use_id: "c1".into(),
                        content: vec![ContentBlock::text("ok")],
                        is_error: false,
                    }],
                },
            ],
        )
    }

    fn thinking(text: &str, signature: String) -> ContentBlock {
        ContentBlock::Thinking {
            thinking: text.into(),
            signature: Some(signature),
            id: None,
        }
    }

    #[test]
    fn a_loop_must_bring_back_the_signed_thinking_unchanged() {
        let thought = "I will call c1.";
        assert!(
            reasoning_came_back(&loop_with(Some(thinking(thought, signature_of(thought))))).is_ok()
        );
        for broken in [
            None,
            Some(thinking("I will call c2.", signature_of(thought))),
            Some(ContentBlock::text("no thinking first")),
        ] {
            let error = reasoning_came_back(&loop_with(broken)).unwrap_err();
            assert_eq!(error.code, codes::PROVIDER_BAD_REQUEST);
        }
        // A request that answers no calls needs nothing back.
        assert!(reasoning_came_back(&Request::new("m", vec![Message::user("hi")])).is_ok());
    }
}
