//! The relay: the "model" of a conversation served over MCP.
//!
//! A call a client makes over MCP runs as a turn of an ordinary
//! conversation, so it gets everything a model's call gets: arguments
//! checked, the policy and a person's approval in front, the call recorded
//! before it runs, one result, bounds and offload. The relay is the
//! provider of that conversation: asked once, it answers with exactly the
//! client's call; asked again, it takes the call's result out of the
//! request and ends the turn. It invents nothing and costs nothing (its
//! usage is zero; its model is named `mcp-client` in the log).

use std::sync::Mutex;

use rein_gateway::{EventStream, Provider};
use rein_wire::{
    AgentError, CachingStyle, Capabilities, ContentBlock, Request, StopReason, StreamEvent, Usage,
    error::codes,
};
use serde_json::Value;

/// The model name a served conversation records.
pub const RELAY_MODEL: &str = "mcp-client";

/// The call being relayed.
pub(crate) struct Pending {
    pub(crate) call_id: String,
    pub(crate) tool: String,
    pub(crate) arguments: Value,
}

/// A relayed call's result, as the conversation recorded it.
#[derive(Debug, Clone)]
pub(crate) struct Relayed {
    pub(crate) content: Vec<ContentBlock>,
    pub(crate) is_error: bool,
}

#[derive(Default)]
pub(crate) struct Relay {
    pending: Mutex<Option<Pending>>,
    result: Mutex<Option<Relayed>>,
}

impl Relay {
    pub(crate) fn set(&self, pending: Pending) {
        *self.result.lock().unwrap_or_else(|p| p.into_inner()) = None;
        *self.pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(pending);
    }

    pub(crate) fn take(&self) -> Option<Relayed> {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        self.result.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

fn events(events: Vec<StreamEvent>) -> EventStream {
    Box::pin(futures::stream::iter(events.into_iter().map(Ok)))
}

impl Provider for Relay {
    fn name(&self) -> &str {
        "mcp-relay"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            caching: CachingStyle::None,
            max_cache_breakpoints: 0,
            context_window: u32::MAX,
            structured_output: false,
            token_counting: false,
        }
    }

    fn stream(&self, request: Request) -> EventStream {
        let pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let Some(pending) = pending.as_ref() else {
            return Box::pin(futures::stream::iter([Err(AgentError::new(
                codes::INTERNAL,
                "the MCP relay was asked with no call pending",
            ))]));
        };
        let start = StreamEvent::MessageStart {
            id: None,
            model: RELAY_MODEL.into(),
        };
        let answered = request.messages.last().and_then(|m| {
            m.content.iter().find_map(|block| match block {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } if *tool_use_id == pending.call_id => Some(Relayed {
                    content: content.clone(),
                    is_error: *is_error,
                }),
                _ => None,
            })
        });
        if let Some(result) = answered {
            *self.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
            return events(vec![
                start,
                StreamEvent::TextDelta {
                    text: "(the result went back to the MCP client)".into(),
                },
                StreamEvent::Stop {
                    reason: StopReason::EndTurn,
                },
                StreamEvent::Usage {
                    usage: Usage::default(),
                },
            ]);
        }
        events(vec![
            start,
            StreamEvent::ToolCallStart {
                index: 0,
                id: pending.call_id.clone(),
                name: pending.tool.clone(),
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                fragment: pending.arguments.to_string(),
            },
            StreamEvent::ToolCallEnd { index: 0 },
            StreamEvent::Stop {
                reason: StopReason::ToolUse,
            },
            StreamEvent::Usage {
                usage: Usage::default(),
            },
        ])
    }
}
