//! The transcript the model sees, projected from the log.
//!
//! For the turns on the path from the root to the current turn: each
//! prompt, each completed assistant message, each tool result (threaded as
//! a user message of `tool_result` blocks right after the assistant message
//! that called them), and what a person said mid-turn. The log is read, not
//! changed.

use std::collections::HashSet;

use rein_sessions::{Event, StoredEvent, ToolStatus};
use rein_wire::{ContentBlock, Message, Role};
use serde_json::Value;

fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A result's content blocks: its JSON as text, its `_images` as images.
fn result_blocks(content: &Value) -> Vec<ContentBlock> {
    let Some(images) = content.get("_images").and_then(Value::as_array) else {
        return vec![ContentBlock::text(result_text(content))];
    };
    let mut rest = content.clone();
    if let Some(map) = rest.as_object_mut() {
        map.remove("_images");
    }
    let mut blocks = vec![ContentBlock::text(result_text(&rest))];
    for img in images {
        if let (Some(media_type), Some(data)) = (
            img.get("media_type").and_then(Value::as_str),
            img.get("data").and_then(Value::as_str),
        ) {
            blocks.push(ContentBlock::Image {
                source: rein_wire::ImageSource::Base64 {
                    media_type: media_type.to_owned(),
                    data: data.to_owned(),
                },
            });
        }
    }
    blocks
}

/// The messages for the turns in `path` (turn ids), from `events`.
pub fn project(events: &[StoredEvent], path: &[String]) -> Vec<Message> {
    let on_path: HashSet<&str> = path.iter().map(String::as_str).collect();
    let mut messages: Vec<Message> = Vec::new();
    let mut current: Option<&str> = None;
    let user_blocks = |messages: &mut Vec<Message>, block: ContentBlock| match messages.last_mut() {
        Some(m) if m.role == Role::User => m.content.push(block),
        _ => messages.push(Message {
            role: Role::User,
            content: vec![block],
        }),
    };
    for stored in events {
        match &stored.event {
            Event::TurnStarted {
                turn_id, prompt, ..
            } => {
                current = on_path.get(turn_id.as_str()).copied();
                if current.is_some() {
                    user_blocks(&mut messages, ContentBlock::text(prompt.clone()));
                }
            }
            _ if current.is_none() => {}
            Event::ModelCompleted { message, .. } if !message.content.is_empty() => {
                messages.push(message.clone());
            }
            Event::ToolResult {
                call_id,
                status,
                content,
                ..
            } => {
                user_blocks(
                    &mut messages,
                    ContentBlock::ToolResult {
                        tool_use_id: call_id.clone(),
                        content: result_blocks(content),
                        is_error: *status == ToolStatus::Error,
                    },
                );
            }
            Event::SteerSaid { text } => {
                user_blocks(&mut messages, ContentBlock::text(text.clone()))
            }
            _ => {}
        }
    }
    messages
}
