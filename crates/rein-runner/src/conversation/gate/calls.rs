//! The calls of an assistant message: each checked (arguments, precheck,
//! permission), gated (a person's no, policy, leases, approvals), recorded
//! before it runs, run, and given exactly one result; writes in order,
//! reads batched; repeats counted; revision guards carried.
//!
//! Not here: the parallel read batch (`reads`) or the built-in tools
//! (`builtins`).

use std::time::Instant;

use rein_approvals::{Decision, Leases, PermissionClass, Said, Verdict, gate};
use rein_sessions::{Event, ResultSource};
use rein_tools::{Outcome, ToolBackend, ToolContext};
use rein_wire::ToolCall;
use rein_wire::{AgentError, ErrorCode, error::codes};
use serde_json::{Value, json};

use super::results::refuse;
use super::{Around, Gate};
use crate::conversation::asked::awaiting;
use crate::conversation::builtins::CALL_TOOL;
use crate::conversation::folds::{ApprovalState, error_result, fingerprint, now_ms, refused};
use crate::conversation::{hooked, revisions};
use crate::outcome::TurnOutcome;
use rein_wire::UiKind;

/// A write the gate decides on.
struct Write {
    id: String,
    tool: String,
    args: Value,
    class: PermissionClass,
}

/// What checking a call before the gate found.
enum Checked {
    /// It goes to the gate with these arguments and this class.
    Runs(Value, PermissionClass),
    /// It will not run: the arguments it was refused with, why, and whether
    /// a repeat of it counts towards loop detection.
    Refused {
        args: Value,
        code: ErrorCode,
        message: String,
        counts: bool,
    },
}

impl Checked {
    fn refused(args: Value, code: ErrorCode, message: String, counts: bool) -> Self {
        Checked::Refused {
            args,
            code,
            message,
            counts,
        }
    }
}

impl Gate {
    /// A call's arguments through the hooks (an edit is then checked like
    /// the model's), normalised once (the policy, the person and the tool
    /// see the same input), and classed — or why it will not run.
    async fn check_call(
        &mut self,
        cx: &mut Around<'_>,
        events: &crate::Log,
        call_id: &str,
        tool: &str,
        args: Value,
    ) -> Result<Checked, AgentError> {
        let guards = &cx.agent.guards;
        let args =
            match hooked::before_call(guards, cx.journal, events, call_id, tool, args.clone())
                .await?
            {
                Ok(args) => args,
                Err(why) => {
                    return Ok(Checked::refused(args, codes::HOOK_DENIED, why, false));
                }
            };
        let args = match self.tools.prepare(tool, args.clone()) {
            Ok(args) => args,
            Err(err) => {
                return Ok(Checked::refused(args, err.code, err.message, false));
            }
        };
        match self.tools.permission(tool, &args) {
            Ok(class) => Ok(Checked::Runs(args, class)),
            Err(err) => {
                let err = self.tools.naming_builtins(cx.agent, err);
                Ok(Checked::refused(args, err.code, err.message, true))
            }
        }
    }

    /// Run the calls of the last assistant message that have no result
    /// yet. `Some(outcome)` ends (or pauses) the turn.
    pub(crate) async fn run_calls(
        &mut self,
        cx: &mut Around<'_>,
        events: &crate::Log,
        calls: Vec<ToolCall>,
        repeats: &mut rein_wire::loops::Repeats,
    ) -> Result<Option<TurnOutcome>, AgentError> {
        let mut reads: Vec<ToolCall> = Vec::new();
        for ToolCall {
            id: call_id,
            tool,
            arguments: args,
        } in calls
        {
            // `call_tool` is the deferred form of a direct call.
            let (tool, args) = if tool == CALL_TOOL {
                match (
                    args.get("name").and_then(Value::as_str),
                    args.get("arguments"),
                ) {
                    (Some(name), Some(inner)) => (name.to_owned(), inner.clone()),
                    (Some(name), None) => (name.to_owned(), json!({})),
                    _ => (tool, args),
                }
            } else {
                (tool, args)
            };
            let (args, class) = match self.check_call(cx, events, &call_id, &tool, args).await? {
                Checked::Runs(args, class) => (args, class),
                Checked::Refused {
                    args,
                    code,
                    message,
                    counts,
                } => {
                    // An edit that cannot apply to a file the model never
                    // saw is answered with the file (`read_first`).
                    let call = (call_id.as_str(), tool.as_str(), &args, None);
                    if !self.refuse_unseen(cx, events, call, &code).await? {
                        refuse(cx.journal, &call_id, &tool, &args, None, &code, &message).await?;
                    }
                    // A change the file already holds ends the edit loop:
                    // the next answer is asked in words.
                    if code == codes::EDIT_ALREADY_MADE {
                        repeats.ask_for_words();
                    }
                    // The same refused call made again and again is a loop
                    // too (a small model retrying an invalid edit, say).
                    if counts {
                        let refused = error_result(&call_id, &code, &message);
                        let fp = fingerprint(&tool, &args, &refused);
                        if let Some(outcome) = self.count_repeat(cx, repeats, fp, &call_id).await? {
                            return Ok(Some(outcome));
                        }
                    }
                    continue;
                }
            };
            if class.is_read() {
                reads.push(ToolCall::new(call_id, tool, args));
                continue;
            }
            // A write: first the reads before it, then it, in order.
            self.run_reads(cx, events, std::mem::take(&mut reads), repeats)
                .await?;
            let call = Write {
                id: call_id,
                tool,
                args,
                class,
            };
            if let Some(outcome) = self.write(cx, events, call, repeats).await? {
                return Ok(Some(outcome));
            }
        }
        self.run_reads(cx, events, reads, repeats).await
    }

    /// A write, once the reads before it ran: the person's word, the
    /// revision it must run on, the policy and leases — then it runs, is
    /// refused, or the person is asked.
    async fn write(
        &mut self,
        cx: &mut Around<'_>,
        events: &crate::Log,
        call: Write,
        repeats: &mut rein_wire::loops::Repeats,
    ) -> Result<Option<TurnOutcome>, AgentError> {
        let Write {
            id: call_id,
            tool,
            args,
            class,
        } = call;
        // What the person said about this call comes first: their "no"
        // wins over any lease.
        let state = if class.needs_approval() {
            events.approval_state(&call_id, cx.journal.evidence_through())
        } else {
            ApprovalState::None
        };
        let said = match state {
            ApprovalState::Approved { .. } => Said::Yes,
            ApprovalState::Refused { .. } => Said::No,
            ApprovalState::Pending { .. } | ApprovalState::None => Said::Nothing,
        };
        // A change to what exists runs only on the revision the model
        // saw (and an approved one on the revision the person saw);
        // refused before anyone is asked.
        if let Some(err) = self.stale_change(cx, events, &tool, &args, &state) {
            let call = (call_id.as_str(), tool.as_str(), &args, Some(class));
            self.refuse_stale(cx, events, call, &err).await?;
            let refused = error_result(&call_id, &err.code, &err.message);
            if let Some(outcome) = self
                .count_repeat(cx, repeats, fingerprint(&tool, &args, &refused), &call_id)
                .await?
            {
                return Ok(Some(outcome));
            }
            return Ok(None);
        }
        // A call the person refused is asked again: no lease covers it.
        let no_lease = Leases::default();
        let leases = if said == Said::Nothing && events.refused_in_turn(&tool, &args) {
            &no_lease
        } else {
            &self.leases
        };
        let elevated = match gate(class, &tool, &cx.agent.guards.policy, leases, said) {
            Verdict::Run { elevated } => {
                // A yes to a protected call is for that call alone: its
                // "always" leases nothing, not even the tool's ordinary calls.
                if let ApprovalState::Approved { scope, .. } = state
                    && class.leasable()
                {
                    self.leases.grant(&tool, scope);
                }
                elevated
            }
            Verdict::Denied => {
                let decision = match &state {
                    ApprovalState::Refused { decision } => decision.as_str(),
                    _ => Decision::Denied.as_str(),
                };
                refuse(
                    cx.journal,
                    &call_id,
                    &tool,
                    &args,
                    Some(class),
                    &codes::NOT_APPROVED,
                    &cx.agent.profile.wording.not_approved(&tool, decision),
                )
                .await?;
                return Ok(None);
            }
            Verdict::Refuse { reason } => {
                refuse(
                    cx.journal,
                    &call_id,
                    &tool,
                    &args,
                    Some(class),
                    &codes::POLICY_REFUSED,
                    &reason,
                )
                .await?;
                return Ok(None);
            }
            Verdict::Ask => {
                let call = Write {
                    id: call_id,
                    tool,
                    args,
                    class,
                };
                return self.ask(cx, events, state, call).await;
            }
        };
        let fp = self
            .run_one(
                cx,
                call_id.clone(),
                tool,
                args,
                class,
                (elevated, said == Said::Yes),
            )
            .await?;
        self.count_repeat(cx, repeats, fp, &call_id).await
    }

    /// A write the gate asks a person about: waiting on the question asked
    /// (or refused when nobody decided in time), or asked now.
    async fn ask(
        &mut self,
        cx: &mut Around<'_>,
        events: &crate::Log,
        state: ApprovalState,
        call: Write,
    ) -> Result<Option<TurnOutcome>, AgentError> {
        let Write {
            id: call_id,
            tool,
            args,
            class,
        } = call;
        match state {
            ApprovalState::Pending { approval_id } => {
                let asked_ms = events.asked_at(&approval_id);
                let age_ms = now_ms().saturating_sub(asked_ms.unwrap_or(i64::MAX));
                if age_ms > i64::try_from(cx.agent.approval_ttl.as_millis()).unwrap_or(i64::MAX) {
                    // Nobody decided in time: the call is refused.
                    cx.journal
                        .append(
                            vec![Event::ApprovalDecided {
                                approval_id,
                                decision: Decision::Expired,
                                by: "rein".into(),
                                lease: None,
                            }]
                            .into_iter()
                            .chain(refused(
                                call_id.clone(),
                                tool.clone(),
                                args.clone(),
                                Some(class),
                                &codes::NOT_APPROVED,
                                &cx.agent.profile.wording.not_approved(&tool, "let expire"),
                            ))
                            .collect(),
                        )
                        .await?;
                    return Ok(None);
                }
                return Ok(Some(
                    awaiting(cx.journal, self.tools.as_ref(), &approval_id).await?,
                ));
            }
            // Nothing asked yet (an approved or refused call never
            // reaches here: the gate runs the one, the other was
            // refused above).
            _ => {
                let approval_id = rein_wire::ids::new_id();
                // What the person sees is made now, from the world as
                // it is when they are asked, and kept with the request.
                // A tool that makes none (an MCP server's, a product's) is
                // shown its whole arguments (bounded as every preview):
                // the terminal shows their start, `d` the rest.
                let preview = self.tools.preview(&tool, &args).or_else(|| {
                    Some(rein_wire::Preview::new(
                        rein_wire::PreviewKind::Text,
                        &tool,
                        rein_wire::arguments_text(&args, usize::MAX),
                    ))
                });
                // One asked in imported history is left unanswered
                // there: closed as expired, and asked anew here.
                let stale = cx
                    .journal
                    .control()
                    .await?
                    .pending
                    .into_iter()
                    .filter(|p| p.call_id == call_id)
                    .map(|p| Event::ApprovalDecided {
                        approval_id: p.approval_id,
                        decision: Decision::Expired,
                        by: "rein: asked again after an import".into(),
                        lease: None,
                    });
                let asked = Event::ApprovalRequested {
                    approval_id: approval_id.clone(),
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    arguments: args.clone(),
                    permission: class,
                    preview: preview.clone(),
                    bound_to: self.tools.changes(&tool, &args),
                };
                cx.journal.append(stale.chain([asked]).collect()).await?;
                cx.journal.emit(UiKind::ApprovalRequested {
                    approval_id: approval_id.clone(),
                    tool: tool.clone(),
                    arguments: args,
                    permission: class,
                    preview,
                });
                return Ok(Some(
                    awaiting(cx.journal, self.tools.as_ref(), &approval_id).await?,
                ));
            }
        }
    }

    pub(super) async fn run_one(
        &mut self,
        cx: &mut Around<'_>,
        call_id: String,
        tool: String,
        args: Value,
        class: PermissionClass,
        (elevated, asked): (bool, bool),
    ) -> Result<String, AgentError> {
        let args = self.carry_revision(args);
        cx.journal
            .append(vec![Event::ToolCalled {
                call_id: call_id.clone(),
                tool: tool.clone(),
                arguments: args.clone(),
                permission: Some(class),
            }])
            .await?;
        cx.journal.emit(UiKind::ToolCall {
            call_id: call_id.clone(),
            tool: tool.clone(),
            arguments: args.clone(),
        });
        let ctx = ToolContext {
            call_id: call_id.clone(),
            session: cx.journal.session_id().to_owned(),
            elevated,
            asked,
            policy: cx.agent.guards.policy.clone(),
            progress: cx.journal.progress(&call_id),
            app: cx.agent.guards.app_context.clone(),
        };
        let started = Instant::now();
        let outcome = crate::telemetry::traced_call(
            &tool,
            &call_id,
            self.tools.invoke(&tool, args.clone(), &ctx),
        )
        .await;
        if let Outcome::Ok {
            advanced: Some(moved),
            ..
        } = &outcome
        {
            self.carried.insert(
                (moved.scope.clone(), moved.before.clone()),
                moved.after.clone(),
            );
        }
        if let Outcome::Ok {
            seen: Some(left), ..
        } = &outcome
        {
            self.left.insert(left.clone());
        }
        let (outcome, mut records) =
            hooked::after_call(&cx.agent.guards, &call_id, &tool, &args, outcome).await;
        let event = self
            .result_event(cx, &call_id, outcome, ResultSource::Live, started.elapsed())
            .await?;
        let fp = fingerprint(&tool, &args, &event);
        records.push(event);
        cx.journal.append(records).await?;
        Ok(fp)
    }

    /// Why a change `tool` would make with `args` must not run now (see
    /// `revisions`): checked for a call not yet asked about, or approved.
    pub(super) fn stale_change(
        &self,
        cx: &Around<'_>,
        events: &crate::Log,
        tool: &str,
        args: &Value,
        state: &ApprovalState,
    ) -> Option<AgentError> {
        let approved = match state {
            ApprovalState::None => None,
            ApprovalState::Approved { approval_id, .. } => Some(events.bound_to(approval_id)),
            // Waiting, or refused: nothing runs either way.
            ApprovalState::Pending { .. } | ApprovalState::Refused { .. } => return None,
        };
        let now = self.tools.changes(tool, args)?;
        revisions::stale(
            events.last_seen(&now.resource, cx.journal.evidence_through()),
            &self.left,
            &now,
            approved,
        )
    }

    /// Carry a write's expected revision past the revisions this message's
    /// own earlier writes moved it through (and only those).
    pub(super) fn carry_revision(&self, mut args: Value) -> Value {
        let Some(guard) = self.tools.revision_guard() else {
            return args;
        };
        let scope = guard
            .scope_arg
            .as_ref()
            .and_then(|a| args.get(a))
            .map_or_else(
                || "default".to_owned(),
                |v| v.as_str().map_or_else(|| v.to_string(), str::to_owned),
            );
        let Some(expected) = args.get(&guard.expected_arg).cloned() else {
            return args;
        };
        let as_text = expected
            .as_str()
            .map_or_else(|| expected.to_string(), str::to_owned);
        let mut current = as_text.clone();
        let mut hops = 0;
        while let Some(next) = self.carried.get(&(scope.clone(), current.clone())) {
            current = next.clone();
            hops += 1;
            if hops > self.carried.len() {
                break;
            }
        }
        if current != as_text
            && let Some(map) = args.as_object_mut()
        {
            // Keep the argument's JSON type: a number stays a number.
            let carried = if expected.is_number() {
                current
                    .parse::<u64>()
                    .map_or(Value::String(current.clone()), Value::from)
            } else {
                Value::String(current)
            };
            map.insert(guard.expected_arg.clone(), carried);
        }
        args
    }

    pub(super) async fn count_repeat(
        &mut self,
        cx: &mut Around<'_>,
        repeats: &mut rein_wire::loops::Repeats,
        fp: String,
        call_id: &str,
    ) -> Result<Option<TurnOutcome>, AgentError> {
        match repeats.observe_call(fp, call_id) {
            rein_wire::loops::Repeat::Stop => Ok(Some(TurnOutcome::LoopDetected)),
            rein_wire::loops::Repeat::Nudge => {
                let nudge = &cx.agent.profile.wording.loop_nudge;
                let mut said = nudge.clone();
                if nudge.contains("{asked}") || nudge.contains("{found}") {
                    let (asked, found) = asked_and_found(cx.journal).await?;
                    said = said.replace("{asked}", &asked).replace("{found}", &found);
                }
                cx.inbox.steering().say(said);
                Ok(None)
            }
            rein_wire::loops::Repeat::Fine => Ok(None),
        }
    }
}

/// What the person asked in the turn under way, quoted line by line and
/// cut to [`ASKED_CHARS`]: a model going round in circles is shown the task
/// again (a small one loses it after a compaction). With it, the lines
/// found in the files read as the turn's latest compaction keeps them
/// (`state_text::lines_found`, ending in a line break; "" without one).
async fn asked_and_found(
    journal: &mut crate::conversation::journal::Journal,
) -> Result<(String, String), AgentError> {
    use rein_sessions::Event;
    let log = journal.log().await?;
    let turn = log
        .iter()
        .rposition(|e| matches!(e.event, Event::TurnStarted { .. }))
        .unwrap_or(0);
    let prompt = match log.get(turn).map(|e| &e.event) {
        Some(Event::TurnStarted { prompt, .. }) => prompt.as_str(),
        _ => "",
    };
    let mut cut: String = prompt.chars().take(ASKED_CHARS).collect();
    if cut.len() < prompt.len() {
        cut.push('…');
    }
    let found = log[turn..]
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            Event::CompactionCreated { summary, .. } => match &**summary {
                rein_sessions::Compaction::Compact(compact) => compact
                    .state
                    .typed()
                    .and_then(rein_context::state_text::lines_found),
                _ => None,
            },
            _ => None,
        })
        .map(|lines| format!("{lines}\n"))
        .unwrap_or_default();
    Ok((rein_context::state_text::quote_lines(&cut), found))
}

/// The most of the person's words a loop nudge repeats, in characters.
const ASKED_CHARS: usize = 600;
