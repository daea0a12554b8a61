//! A case's result filled in from its log — what it cost, what it asked,
//! the calls of a failed try — and then held to its checks.
//!
//! Not here: the checks themselves (`check.rs`) or running the case.

use rein_sessions::{Event, StoredEvent};

use crate::project::Project;
use crate::result::CaseResult;
use crate::suite::Case;

/// Fill in what the case did — `totals` of its model calls and tools, the
/// approvals asked anywhere in `everything` (sub-agents' sessions too),
/// the sub-agents and tool runs of `own` — then run the checks.
pub(crate) async fn conclude(
    case: &Case,
    result: &mut CaseResult,
    totals: &rein_trace::Totals,
    everything: &[StoredEvent],
    own: &[StoredEvent],
    project: &Project,
) {
    result.steps = totals.model_calls;
    result.tokens = totals.usage.prompt_total() + totals.usage.output;
    result.cost_micro_usd = totals.cost_micro_usd;
    result.cache_read_share = totals.cache_read_share;
    result.compactions = totals.compactions;
    result.summary_checks = own
        .iter()
        .filter_map(|e| match &e.event {
            Event::CompactionCreated { summary, .. } => match &**summary {
                rein_sessions::Compaction::Compact(compact) => compact
                    .summary_check
                    .as_ref()?
                    .typed()
                    .map(|check| check.outcome.as_str().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    result.pressures = crate::pressure::Pressures::of(own);
    result.tool_results = totals.tools.total;
    result.approvals = everything
        .iter()
        .filter(|e| matches!(e.event, Event::ApprovalRequested { .. }))
        .count() as u64;
    result.agents = own
        .iter()
        .filter(|e| matches!(e.event, Event::AgentStarted { .. }))
        .count() as u64;
    result.trail = trail_of(own);
    let ran = project.ran(own);
    crate::check::check(case, result, totals, &ran, &project.files());
    for command in &case.expect.commands_pass {
        if let Some(why) = project.command_fails(command).await {
            result.failures.push(why);
        }
    }
    // The calls are kept for a try that failed: what to look at.
    if result.failures.is_empty() {
        result.trail.clear();
    }
}

/// Each call of `events` with how it ended: `tool target: ok`, or the
/// error's code — the target being a path, a command or a query, cut short.
fn trail_of(events: &[StoredEvent]) -> Vec<String> {
    rein_sessions::answered(events)
        .into_iter()
        .map(|call| {
            let target = ["path", "command", "query", "task"]
                .iter()
                .find_map(|k| call.arguments.get(*k))
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .unwrap_or_default();
            let target: String = target.chars().take(60).collect();
            let how = call
                .content
                .pointer("/error/code")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("ok");
            format!("{} {target}", call.tool).trim_end().to_owned() + ": " + how
        })
        .collect()
}
