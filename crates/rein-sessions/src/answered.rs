//! A log's tool calls paired with their results: the one fold every reader
//! of "what was called and how it ended" shares (the eval's trail of a
//! failed try, the memory texts a conversation was shown).
//!
//! Not here: what a caller makes of a pair; calls with no result yet
//! (`recovery::dangling`).

use std::collections::HashMap;

use serde_json::Value;

use crate::event::{Event, StoredEvent, ToolStatus};

/// One tool call and its result.
#[derive(Debug, Clone, Copy)]
pub struct Answered<'a> {
    /// The call's id.
    pub call_id: &'a str,
    /// The tool called.
    pub tool: &'a str,
    /// The arguments it was called with.
    pub arguments: &'a Value,
    /// How it ended.
    pub status: ToolStatus,
    /// What it answered.
    pub content: &'a Value,
}

/// Each call of `events` that has a result, in the order the results came
/// (a result with no call before it is left out).
pub fn answered(events: &[StoredEvent]) -> Vec<Answered<'_>> {
    let mut called: HashMap<&str, (&str, &Value)> = HashMap::new();
    let mut pairs = Vec::new();
    for stored in events {
        match &stored.event {
            Event::ToolCalled {
                call_id,
                tool,
                arguments,
                ..
            } => {
                called.insert(call_id, (tool, arguments));
            }
            Event::ToolResult {
                call_id,
                status,
                content,
                ..
            } => {
                if let Some((tool, arguments)) = called.remove(call_id.as_str()) {
                    pairs.push(Answered {
                        call_id,
                        tool,
                        arguments,
                        status: *status,
                        content,
                    });
                }
            }
            _ => {}
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::answered;
    use crate::event::{Event, ResultSource, StoredEvent, ToolStatus};

    fn stored(seq: u64, event: Event) -> StoredEvent {
        StoredEvent {
            session_id: "s".into(),
            seq,
            at_ms: 0,
            agent_path: "main".into(),
            event,
        }
    }

    fn result(call_id: &str, status: ToolStatus) -> Event {
        Event::ToolResult {
            call_id: call_id.into(),
            status,
            source: ResultSource::Live,
            content: json!({"n": call_id}),
            artifact: None,
            operation_id: None,
            undo: false,
            duration_ms: 0,
            seen: None,
        }
    }

    #[test]
    fn each_call_is_paired_with_its_own_result_in_the_order_results_came() {
        let call = |id: &str, tool: &str| Event::ToolCalled {
            call_id: id.into(),
            tool: tool.into(),
            arguments: json!({"path": id}),
            permission: None,
        };
        let events = vec![
            stored(1, call("a", "read_file")),
            stored(2, call("b", "run_command")),
            stored(3, result("b", ToolStatus::Error)),
            stored(4, result("a", ToolStatus::Ok)),
            stored(5, result("stray", ToolStatus::Ok)),
            stored(6, call("c", "read_file")),
        ];
        let pairs = answered(&events);
        let seen: Vec<(&str, &str, ToolStatus)> = pairs
            .iter()
            .map(|p| (p.call_id, p.tool, p.status))
            .collect();
        assert_eq!(
            seen,
            [
                ("b", "run_command", ToolStatus::Error),
                ("a", "read_file", ToolStatus::Ok)
            ]
        );
        assert_eq!(pairs[1].arguments, &json!({"path": "a"}));
        assert_eq!(pairs[1].content, &json!({"n": "a"}));
    }
}
