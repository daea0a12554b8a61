//! Where the conversation asks its hooks (see `crate::hooks`): before a
//! call (its recorded answer read back on resume), after a call, before a
//! model call, at the turn's end; every effect recorded as `hook.ran`.
//!
//! Not here: what a hook is (`crate::hooks`).

use std::sync::Arc;

use rein_sessions::Event;
use rein_tools::Outcome;
use rein_wire::AgentError;
use serde_json::{Value, json};

use super::journal::Journal;
use rein_wire::HookDid;

use crate::guards::Guards;
use crate::hooks::{Hook, HookEffect, HookInput, HookPoint, fits, recorded};
use crate::outcome::TurnOutcome;

/// A definition's hooks, in the order they are asked.
pub(super) type Hooks = [Arc<dyn Hook>];

fn ran(
    hook: &str,
    point: HookPoint,
    call_id: Option<&str>,
    effect: &Result<HookEffect, String>,
) -> Event {
    let (name, detail) = recorded(effect);
    Event::HookRan {
        hook: hook.to_owned(),
        point,
        call_id: call_id.map(str::to_owned),
        effect: name,
        detail,
    }
}

async fn ask(hooks: &Hooks, input: &HookInput) -> Vec<(String, Result<HookEffect, String>)> {
    let mut answers = Vec::new();
    for hook in hooks.iter().filter(|h| h.hears(input.point)) {
        let effect = match hook.run(input).await {
            Ok(effect) if !fits(input.point, &effect) => Err(format!(
                "answered {effect:?}, which {} does not take",
                input.point.as_str()
            )),
            other => other,
        };
        let stop = !matches!(
            effect,
            Ok(HookEffect::Continue | HookEffect::Edit(_) | HookEffect::Annotate(_))
        );
        answers.push((hook.name().to_owned(), effect));
        if stop {
            break;
        }
    }
    answers
}

/// The arguments a call runs with after the `before_call` hooks, or
/// why they refused it. Read back from the log when already asked.
pub(super) async fn before_call(
    guards: &Guards,
    journal: &mut Journal,
    events: &crate::Log,
    call_id: &str,
    tool: &str,
    mut args: Value,
) -> Result<Result<Value, String>, AgentError> {
    let earlier = events.hooks_before(call_id).to_vec();
    let answers: Vec<(String, Result<HookEffect, String>)> = if earlier.is_empty() {
        if !guards.hooks.iter().any(|h| h.hears(HookPoint::BeforeCall)) {
            return Ok(Ok(args));
        }
        let mut answers = Vec::new();
        // Each hook sees the arguments the hooks before it left.
        for hook in guards
            .hooks
            .iter()
            .filter(|h| h.hears(HookPoint::BeforeCall))
        {
            let input = HookInput {
                point: HookPoint::BeforeCall,
                tool: Some(tool.to_owned()),
                arguments: Some(args.clone()),
                result: None,
                outcome: None,
                app: guards.app_context.clone(),
            };
            let effect = match hook.run(&input).await {
                Ok(effect) if !fits(HookPoint::BeforeCall, &effect) => Err(format!(
                    "answered {effect:?}, which before_call does not take"
                )),
                other => other,
            };
            if let Ok(HookEffect::Edit(edited)) = &effect {
                args = edited.clone();
            }
            let stop = matches!(effect, Ok(HookEffect::Deny(_)) | Err(_));
            answers.push((hook.name().to_owned(), effect));
            if stop {
                break;
            }
        }
        let events: Vec<Event> = answers
            .iter()
            .map(|(hook, effect)| ran(hook, HookPoint::BeforeCall, Some(call_id), effect))
            .collect();
        journal.append(events).await?;
        answers
    } else {
        earlier
            .into_iter()
            .map(|(hook, effect, detail)| {
                let effect = match effect {
                    HookDid::Edit => Ok(HookEffect::Edit(detail)),
                    HookDid::Deny => Ok(HookEffect::Deny(detail.as_str().unwrap_or("").to_owned())),
                    HookDid::Continue => Ok(HookEffect::Continue),
                    HookDid::Annotate | HookDid::Failed => {
                        Err(detail.as_str().unwrap_or("").to_owned())
                    }
                };
                (hook, effect)
            })
            .collect()
    };
    for (hook, effect) in answers {
        match effect {
            Ok(HookEffect::Edit(edited)) => args = edited,
            Ok(HookEffect::Deny(reason)) => {
                return Ok(Err(format!("hook `{hook}` denied the call: {reason}")));
            }
            Err(why) => {
                return Ok(Err(format!(
                    "hook `{hook}` failed, so the call is refused: {why}"
                )));
            }
            Ok(_) => {}
        }
    }
    Ok(Ok(args))
}

/// The outcome after the `after_call` hooks, and their records.
pub(super) async fn after_call(
    guards: &Guards,
    call_id: &str,
    tool: &str,
    args: &Value,
    mut outcome: Outcome,
) -> (Outcome, Vec<Event>) {
    if !guards.hooks.iter().any(|h| h.hears(HookPoint::AfterCall)) {
        return (outcome, Vec::new());
    }
    let input = HookInput {
        point: HookPoint::AfterCall,
        tool: Some(tool.to_owned()),
        arguments: Some(args.clone()),
        result: serde_json::to_value(&outcome).ok(),
        outcome: None,
        app: guards.app_context.clone(),
    };
    let mut records = Vec::new();
    for (hook, effect) in ask(&guards.hooks, &input).await {
        if let Ok(HookEffect::Annotate(note)) = &effect {
            outcome = annotated(outcome, &hook, note);
        }
        if !matches!(effect, Ok(HookEffect::Continue)) {
            records.push(ran(&hook, HookPoint::AfterCall, Some(call_id), &effect));
        }
    }
    (outcome, records)
}

/// Why the `before_model_call` hooks refuse the next model call, if
/// they do (recorded).
pub(super) async fn before_model_call(
    guards: &Guards,
    journal: &mut Journal,
) -> Result<Option<String>, AgentError> {
    if !guards
        .hooks
        .iter()
        .any(|h| h.hears(HookPoint::BeforeModelCall))
    {
        return Ok(None);
    }
    let input = HookInput {
        point: HookPoint::BeforeModelCall,
        tool: None,
        arguments: None,
        result: None,
        outcome: None,
        app: guards.app_context.clone(),
    };
    for (hook, effect) in ask(&guards.hooks, &input).await {
        let why = match &effect {
            Ok(HookEffect::Deny(reason)) => {
                format!("hook `{hook}` denied the model call: {reason}")
            }
            Err(failed) => {
                format!("hook `{hook}` failed, so the model call is refused: {failed}")
            }
            _ => continue,
        };
        journal
            .append(vec![ran(&hook, HookPoint::BeforeModelCall, None, &effect)])
            .await?;
        return Ok(Some(why));
    }
    Ok(None)
}

/// Tell the `turn_end` hooks how the turn ended (their answers change
/// nothing; a failure is logged).
pub(super) async fn turn_end(guards: &Guards, outcome: &TurnOutcome) {
    let input = HookInput {
        point: HookPoint::TurnEnd,
        tool: None,
        arguments: None,
        result: None,
        outcome: Some(outcome.name()),
        app: guards.app_context.clone(),
    };
    for (hook, effect) in ask(&guards.hooks, &input).await {
        if let Err(why) = effect {
            tracing::warn!(%hook, %why, "a turn_end hook failed");
        }
    }
}

/// `outcome` with a hook's note the model reads.
fn annotated(outcome: Outcome, hook: &str, note: &str) -> Outcome {
    let line = format!("[hook {hook}] {note}");
    match outcome {
        Outcome::Ok {
            result,
            operation_id,
            undo,
            advanced,
            seen,
        } => {
            let result = match result {
                Value::Object(mut map) => {
                    let notes = map.entry("hook_notes").or_insert_with(|| json!([]));
                    if let Some(list) = notes.as_array_mut() {
                        list.push(json!(line));
                    }
                    Value::Object(map)
                }
                other => json!({"result": other, "hook_notes": [line]}),
            };
            Outcome::Ok {
                result,
                operation_id,
                undo,
                advanced,
                seen,
            }
        }
        Outcome::Failed {
            code,
            message,
            detail,
            retryable,
        } => Outcome::Failed {
            code,
            message: format!("{message}\n{line}"),
            detail,
            retryable,
        },
    }
}
