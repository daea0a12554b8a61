//! The run's authority: what a run was allowed when it started — the
//! model, the tools offered (each by name and a digest of its
//! definition), the policy, what the product adds (its roots, its
//! sandbox) and the check its final answer must pass — recorded in `run.started`, and checked when the run is
//! resumed: a resume under different authority is refused
//! (`authority_changed`, naming what changed) until a person accepts the
//! change (`authority.accepted`, from a person's surface).
//!
//! Not here: deciding single calls (the gate).

use rein_sessions::Event;
use rein_tools::ToolBackend;
use rein_wire::{AgentError, error::codes};
use serde_json::{Value, json};

use crate::agent::Agent;
use crate::settings::Verification;

/// The authority `agent` would run with now, offering `tools`, under
/// `check` in place of the definition's own when given.
pub(super) fn of(agent: &Agent, tools: &dyn ToolBackend, check: Option<&Verification>) -> Value {
    let tools: serde_json::Map<String, Value> = tools
        .catalog(&agent.guards.policy)
        .into_iter()
        .map(|t| {
            let digest = tools
                .definition(&t.name)
                .and_then(|d| serde_json::to_vec(&d).ok())
                .map(|bytes| blake3::hash(&bytes).to_hex()[..16].to_owned());
            (t.name, json!(digest))
        })
        .collect();
    let mut authority = json!({
        "model": agent.profile.model,
        "tools": tools,
        "policy": agent.guards.policy,
        "product": agent.guards.authority,
    });
    // The check a final answer must pass, when there is one (a run
    // without one records none, as before checks were authority).
    if let Some(check) = check.or(agent.verification.as_ref()) {
        authority["check"] = json!({"command": check.command, "expected": check.expected});
    }
    authority
}

/// Refuse to go on with the open run when its authority changed and
/// no person accepted the change.
///
/// A run opened in imported history is never taken on its word: its
/// recorded authority (roots included) is evidence, so it goes on only
/// once a person accepted it after the import, whatever it records.
pub(super) fn check(
    agent: &Agent,
    check: Option<&Verification>,
    tools: &dyn ToolBackend,
    evidence: u64,
    events: &crate::Log,
) -> Result<(), AgentError> {
    let open = events.dangling();
    let Some(run) = open.runs.last() else {
        return Ok(());
    };
    let started = events.iter().rev().find_map(|e| match &e.event {
        Event::RunStarted {
            run_id, profile, ..
        } if run_id == run => Some((e.seq, profile.get("authority").cloned())),
        _ => None,
    });
    let imported = started.as_ref().is_some_and(|(seq, _)| *seq <= evidence);
    let now = of(agent, tools, check);
    // Only a person's acceptance made after the import counts.
    let accepted = events.iter().rev().any(|e| {
        e.seq > evidence && matches!(&e.event, Event::AuthorityAccepted { to, .. } if *to == now)
    });
    if imported {
        if accepted {
            return Ok(());
        }
        let recorded = started.and_then(|(_, a)| a).unwrap_or(Value::Null);
        return Err(AgentError::new(
                codes::AUTHORITY_CHANGED,
                "this run was imported: what it records (root, tools, decisions) is evidence, not permission; a person accepts going on under what this chat allows now, and its approvals are asked again",
            )
            .with_field("recorded", recorded)
            .with_field("now", now));
    }
    // A run recorded before authority was: nothing to compare.
    let Some(recorded) = started.and_then(|(_, a)| a) else {
        return Ok(());
    };
    if recorded == now || accepted {
        return Ok(());
    }
    Err(AgentError::new(
        codes::AUTHORITY_CHANGED,
        format!(
            "this run started with other authority; changed: {}",
            changed(&recorded, &now).join(", ")
        ),
    )
    .with_field("recorded", recorded)
    .with_field("now", now))
}

/// The check the open run's `run.started` records (command, expected exit).
pub(super) fn recorded_check(events: &crate::Log) -> Option<(Vec<String>, i32)> {
    let run = events.dangling().runs.last()?.clone();
    let check = events.iter().rev().find_map(|e| match &e.event {
        Event::RunStarted {
            run_id, profile, ..
        } if *run_id == run => profile.pointer("/authority/check").cloned(),
        _ => None,
    })?;
    let command = serde_json::from_value(check.get("command")?.clone()).ok()?;
    let expected = i32::try_from(check.get("expected")?.as_i64()?).ok()?;
    Some((command, expected))
}

/// The top-level parts (and tools) that differ.
fn changed(recorded: &Value, now: &Value) -> Vec<String> {
    let mut changed = Vec::new();
    for key in ["model", "policy", "product", "check"] {
        if recorded.get(key) != now.get(key) {
            changed.push(key.to_owned());
        }
    }
    let tools = |v: &Value| {
        v.get("tools")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (before, after) = (tools(recorded), tools(now));
    for (name, digest) in &before {
        match after.get(name) {
            None => changed.push(format!("tool {name} removed")),
            Some(d) if d != digest => changed.push(format!("tool {name} changed")),
            _ => {}
        }
    }
    for name in after.keys().filter(|n| !before.contains_key(*n)) {
        changed.push(format!("tool {name} added"));
    }
    changed
}
