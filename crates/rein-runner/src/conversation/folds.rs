//! Pure folds over the log: the current path of turns, the last message's
//! calls, a call's approval state, and the events of a call that did not
//! run. No I/O.
//!
//! Not here: anything that appends.

use rein_approvals::{Decision, PermissionClass};
use rein_sessions::{Event, ResultSource, StoredEvent, ToolStatus, history};
use rein_wire::ErrorCode;
use rein_wire::ToolCall;
use serde_json::{Value, json};

use crate::outcome::TurnOutcome;

pub(super) fn tool_error_content(code: &ErrorCode, message: &str) -> Value {
    json!({"error": {"code": code, "message": message}})
}

/// A failed tool's structured detail is shown to the model up to this
/// size (JSON bytes); a larger one is left out, with a note saying so.
pub(super) const MAX_ERROR_DETAIL: usize = 16 * 1024;

/// [`tool_error_content`] with the tool's structured detail (what the
/// model needs to act on the failure: a conflict's current value, say).
pub(super) fn tool_error_content_with(
    code: &ErrorCode,
    message: &str,
    detail: Option<&Value>,
) -> Value {
    let mut content = tool_error_content(code, message);
    if let Some(detail) = detail {
        let size = serde_json::to_vec(detail).map_or(usize::MAX, |d| d.len());
        content["error"]["detail"] = if size <= MAX_ERROR_DETAIL {
            detail.clone()
        } else {
            json!({"omitted": format!("{size} bytes of detail, more than {MAX_ERROR_DETAIL}")})
        };
    }
    content
}

pub(super) fn error_result(call_id: &str, code: &ErrorCode, message: &str) -> Event {
    Event::ToolResult {
        call_id: call_id.to_owned(),
        status: ToolStatus::Error,
        source: ResultSource::Live,
        content: tool_error_content(code, message),
        artifact: None,
        operation_id: None,
        undo: false,
        duration_ms: 0,
        seen: None,
    }
}

/// A call's loop fingerprint: its tool, its input, and what its result
/// says (not when or how long: `rein_wire::loops::result_digest`).
pub(super) fn fingerprint(tool: &str, args: &Value, result: &Event) -> String {
    let args = rein_wire::canonical::to_string(args).unwrap_or_default();
    let content = match result {
        Event::ToolResult { content, .. } => rein_wire::loops::result_digest(content),
        _ => String::new(),
    };
    rein_wire::loops::fingerprint(tool, &args, &content)
}

/// The turn ids from the root to the open (or last) turn.
///
/// Borrows the turn ids and parents rather than building each turn's
/// record (prompt included): this runs every step over the whole log.
pub(super) fn current_path(events: &[StoredEvent]) -> Vec<String> {
    let parents: std::collections::HashMap<&str, Option<&str>> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::TurnStarted {
                turn_id, parent, ..
            } => Some((turn_id.as_str(), parent.as_deref())),
            _ => None,
        })
        .collect();
    let head = events.iter().rev().find_map(|e| match &e.event {
        Event::TurnStarted { turn_id, .. } => Some(turn_id.as_str()),
        _ => None,
    });
    let mut path = Vec::new();
    let mut at = head;
    // Bounded by the number of turns: a cycle (which the store refuses)
    // cannot loop here.
    while let Some(id) = at
        && let Some(parent) = parents.get(id)
        && path.len() <= parents.len()
    {
        path.push(id.to_owned());
        at = *parent;
    }
    path.reverse();
    debug_assert_eq!(
        Some(&path),
        Some(&{
            let turns: Vec<rein_sessions::TurnInfo> = events
                .iter()
                .filter_map(rein_sessions::started_turn)
                .collect();
            turns
                .last()
                .map(|head| {
                    history(&turns, &head.id)
                        .into_iter()
                        .map(|t| t.id)
                        .collect()
                })
                .unwrap_or_default()
        }),
        "the current path drifted from the turn tree's history"
    );
    path
}

/// The tool calls of the last assistant message of the open turn that have
/// no result yet: (call id, tool, arguments), in order.
pub(super) fn last_calls(events: &[StoredEvent]) -> Option<(Vec<ToolCall>, u64)> {
    let (seq, message) = events.iter().rev().find_map(|e| match &e.event {
        Event::ModelCompleted { message, .. } => Some((e.seq, message)),
        Event::TurnStarted { .. } => Some((0, &EMPTY)),
        _ => None,
    })?;
    if seq == 0 {
        return None;
    }
    let after = events.partition_point(|e| e.seq <= seq);
    let done: std::collections::HashSet<&str> = events[after..]
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let calls: Vec<ToolCall> = message
        .content
        .iter()
        .filter_map(rein_wire::ContentBlock::tool_call)
        .filter(|call| !done.contains(call.id.as_str()))
        .collect();
    if calls.is_empty() {
        None
    } else {
        Some((calls, seq))
    }
}

pub(super) static EMPTY: rein_wire::Message = rein_wire::Message {
    role: rein_wire::Role::Assistant,
    content: Vec::new(),
};

#[derive(Debug, PartialEq)]
pub(super) enum ApprovalState {
    None,
    Pending {
        approval_id: String,
    },
    Approved {
        scope: rein_approvals::LeaseScope,
        approval_id: String,
    },
    Refused {
        decision: Decision,
    },
}

/// What a person said about `call_id`. Imported history (events up to
/// `evidence_through`) is evidence, not a decision: an approval asked or
/// decided there counts as never asked, so the call is asked again.
pub(super) fn approval_state(
    events: &[StoredEvent],
    call_id: &str,
    evidence_through: u64,
) -> ApprovalState {
    let live = events.iter().filter(|e| e.seq > evidence_through);
    let Some(approval_id) = live.clone().rev().find_map(|e| match &e.event {
        Event::ApprovalRequested {
            approval_id,
            call_id: c,
            ..
        } if c == call_id => Some(approval_id.clone()),
        _ => None,
    }) else {
        return ApprovalState::None;
    };
    for e in live {
        if let Event::ApprovalDecided {
            approval_id: a,
            decision,
            lease,
            ..
        } = &e.event
            && *a == approval_id
        {
            if *decision == Decision::Approved {
                let scope = lease.unwrap_or(rein_approvals::LeaseScope::Once);
                return ApprovalState::Approved { scope, approval_id };
            }
            return ApprovalState::Refused {
                decision: *decision,
            };
        }
    }
    ApprovalState::Pending { approval_id }
}

/// Whether a person refused a call of `tool` with exactly `args` earlier in
/// the open turn: that call is asked again, never covered by a lease
/// granted since ("no" to it, then "always" for its tool, is still "no"
/// to it until the person says otherwise).
pub(super) fn refused_in_turn(events: &[StoredEvent], tool: &str, args: &Value) -> bool {
    let start = events
        .iter()
        .rposition(|e| matches!(e.event, Event::TurnStarted { .. }))
        .unwrap_or(0);
    let turn = &events[start..];
    turn.iter().any(|e| match &e.event {
        Event::ApprovalDecided {
            approval_id,
            decision: Decision::Denied,
            ..
        } => turn.iter().any(|r| {
            matches!(&r.event, Event::ApprovalRequested { approval_id: a, tool: t, arguments, .. }
                if a == approval_id && t == tool && arguments == args)
        }),
        _ => false,
    })
}

/// A call that did not run: its `tool.called` and its one error result.
pub(super) fn refused(
    call_id: impl Into<String>,
    tool: impl Into<String>,
    arguments: Value,
    permission: Option<PermissionClass>,
    code: &ErrorCode,
    message: &str,
) -> [Event; 2] {
    let call_id = call_id.into();
    let result = error_result(&call_id, code, message);
    [
        Event::ToolCalled {
            call_id,
            tool: tool.into(),
            arguments,
            permission,
        },
        result,
    ]
}

/// What the `before_call` hooks did about `call_id`, as the log records
/// it: (hook, what it did, detail), in order. The rule over the whole log;
/// a step asks `Log::hooks_before`, kept as events come.
pub(super) fn before_call_ran(
    events: &[StoredEvent],
    call_id: &str,
) -> Vec<(String, rein_wire::HookDid, Value)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::HookRan {
                hook,
                point,
                call_id: Some(id),
                effect,
                detail,
            } if id == call_id && *point == rein_wire::HookPoint::BeforeCall => {
                Some((hook.clone(), *effect, detail.clone()))
            }
            _ => None,
        })
        .collect()
}

pub(super) use rein_wire::clock::now_ms;

/// The sub-agent a `delegate` call started: (path, session, task), from
/// its `agent.started` (logs from before sub-agents had sessions name none).
pub(super) fn agent_of_call(
    events: &[StoredEvent],
    call: &str,
) -> Option<(String, String, String)> {
    events.iter().rev().find_map(|e| match &e.event {
        Event::AgentStarted {
            agent_path,
            task,
            call_id: Some(id),
            session: Some(session),
        } if id == call => Some((agent_path.clone(), session.clone(), task.clone())),
        _ => None,
    })
}

/// Sub-agents started since the last turn began.
pub(super) fn agents_in_open_turn(events: &[StoredEvent]) -> u32 {
    let count = events
        .iter()
        .rev()
        .take_while(|e| !matches!(e.event, Event::TurnStarted { .. }))
        .filter(|e| matches!(e.event, Event::AgentStarted { .. }))
        .count();
    u32::try_from(count).unwrap_or(u32::MAX)
}

/// The events that close the open turns and runs (`open`, what `events`
/// leaves unfinished) with `outcome`; a failed turn also branches back to the turn before it, so
/// the failure stays in the log but not in later context.
pub(super) fn closing(
    open: rein_sessions::recovery::Dangling,
    events: &[StoredEvent],
    outcome: &TurnOutcome,
) -> Vec<Event> {
    let reply = match outcome {
        TurnOutcome::Finished { reply } => Some(reply.clone()),
        _ => None,
    };
    let mut closing = Vec::new();
    for turn_id in &open.turns {
        closing.push(Event::TurnFinished {
            turn_id: turn_id.clone(),
            outcome: outcome.name(),
            reply: reply.clone(),
        });
    }
    for run_id in open.runs {
        let totals = match outcome {
            TurnOutcome::Error { error } => json!({"error": error.code}),
            TurnOutcome::Budget { which } => json!({"budget": which}),
            _ => json!({}),
        };
        closing.push(Event::RunFinished {
            run_id,
            outcome: outcome.name(),
            totals,
        });
    }
    if let TurnOutcome::Error { .. } = outcome
        && let Some(failed) = open.turns.last()
    {
        let parent = events.iter().find_map(|e| match &e.event {
            Event::TurnStarted {
                turn_id, parent, ..
            } if turn_id == failed => Some(parent.clone()),
            _ => None,
        });
        closing.push(Event::BranchCreated {
            from_turn: parent.flatten(),
        });
    }
    closing
}
