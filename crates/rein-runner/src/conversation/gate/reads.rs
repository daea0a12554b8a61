//! The parallel read batch: one `tool.called` batch, the invocations at
//! once (result cache consulted; `delegate` calls run their sub-agents side
//! by side), then the results in call order.
//!
//! Not here: writes and the gate (`calls`), which `delegate` calls start a
//! sub-agent (`delegate`).

use std::future::Future;
use std::time::Instant;

use rein_approvals::PermissionClass;
use rein_sessions::{Event, ResultSource};
use rein_tools::{Outcome, ToolBackend, ToolContext};
use rein_wire::ToolCall;
use rein_wire::{AgentError, ChildEnding};
use serde_json::Value;

use super::delegate::Delegate;
use super::{Around, Gate};
use crate::conversation::builtins;
use crate::conversation::folds::fingerprint;
use crate::conversation::hooked;
use crate::conversation::journal::Journal;
use crate::outcome::TurnOutcome;
use rein_wire::UiKind;

impl Gate {
    /// Run reads in parallel: one `tool.called` batch, the invocations at
    /// once, then the results in call order. While sub-agents run, the
    /// parent's interrupt or a stop from any surface cancels them.
    pub(super) async fn run_reads(
        &mut self,
        cx: &mut Around<'_>,
        events: &crate::Log,
        reads: Vec<ToolCall>,
        repeats: &mut rein_wire::loops::Repeats,
    ) -> Result<Option<TurnOutcome>, AgentError> {
        if reads.is_empty() {
            return Ok(None);
        }
        let revision = self.tools.revision();
        let plans = self.plan_children(cx, events, &reads).await?;
        record_called(cx.journal, &reads, &plans).await?;
        let cached = self.cached(&reads, &revision);
        let children = plans
            .iter()
            .filter(|p| matches!(p, Delegate::Child(_)))
            .count();
        let outcomes = self.invoke(cx, &reads, &cached, &plans, children).await?;
        let batch = Batch {
            reads: &reads,
            plans: &plans,
            revision: &revision,
        };
        let (results, fingerprints) = self.settle(cx, batch, cached, outcomes).await?;
        // Reads' results are staged: durable with the next commit (the next
        // step's `tool.called`, a decision asked for, or the turn's end).
        // A crash before it loses only them, and recovery answers those
        // calls `interrupted` — what a crash during the reads gave anyway;
        // a read is never a write that ran. A sub-agent's finish is written
        // at once: its work is not something to lose.
        if children > 0 {
            cx.journal.append(results).await?;
        } else {
            cx.journal.stage(results).await?;
        }
        for (fp, call_id) in fingerprints {
            if let Some(outcome) = self.count_repeat(cx, repeats, fp, &call_id).await? {
                return Ok(Some(outcome));
            }
        }
        Ok(None)
    }

    /// Each read's result from the cache, where its tool allows caching
    /// and this revision of the tools answered it before.
    fn cached(&self, reads: &[ToolCall], revision: &str) -> Vec<Option<Value>> {
        reads
            .iter()
            .map(
                |ToolCall {
                     tool,
                     arguments: args,
                     ..
                 }| {
                    if self.tools.cacheable(tool) {
                        self.cache.get(tool, args, revision).cloned()
                    } else {
                        None
                    }
                },
            )
            .collect()
    }

    /// Run the batch at once: a cached result as it is, a refused
    /// delegation as refused, a sub-agent through its spawner, any other
    /// read through the backend. Sub-agents share what is left of the
    /// turn's budget and are cancelled together.
    async fn invoke(
        &mut self,
        cx: &mut Around<'_>,
        reads: &[ToolCall],
        cached: &[Option<Value>],
        plans: &[Delegate],
        children: usize,
    ) -> Result<Vec<Ran>, AgentError> {
        let backend = self.tools.clone();
        let policy = cx.agent.guards.policy.clone();
        let share = self.child_budgets(cx, u32::try_from(children).unwrap_or(u32::MAX));
        let cancel = tokio_util::sync::CancellationToken::new();
        // rein's own facts, answered here: they are the turn's spending.
        let info = reads
            .iter()
            .any(|call| call.tool == builtins::SERVER_INFO && cx.agent.server_info)
            .then(|| {
                builtins::server_info(
                    cx.agent,
                    self.tools.product.as_ref(),
                    cx.spend.spent(),
                    cx.spend.elapsed(),
                )
            });
        let runs = reads.iter().zip(cached).zip(plans).map(
            |(
                (
                    ToolCall {
                        id: call_id,
                        tool,
                        arguments: args,
                    },
                    hit,
                ),
                plan,
            )| {
                let backend = backend.clone();
                let child = match plan {
                    Delegate::Child(planned) => Some(self.child(cx, planned, share, &cancel)),
                    _ => None,
                };
                let refused = match plan {
                    Delegate::Refused(outcome) => Some(outcome.clone()),
                    _ if tool == builtins::SERVER_INFO => info.clone(),
                    _ => None,
                };
                let ctx = ToolContext {
                    call_id: call_id.clone(),
                    session: cx.journal.session_id().to_owned(),
                    elevated: false,
                    asked: false,
                    policy: policy.clone(),
                    progress: cx.journal.progress(call_id),
                    app: cx.agent.guards.app_context.clone(),
                };
                let hit = hit.clone();
                async move {
                    let started = Instant::now();
                    let mut spent = crate::settings::Spent::default();
                    let outcome = match (hit, refused, child) {
                        (Some(result), _, _) => Outcome::ok(result),
                        (None, Some(refused), _) => refused,
                        (None, None, Some((spawner, child))) => {
                            let ran = spawner.spawn(child).await;
                            spent = ran.spent;
                            ran.outcome
                        }
                        (None, None, None) => {
                            crate::telemetry::traced_call(
                                tool,
                                call_id,
                                backend.invoke(tool, args.clone(), &ctx),
                            )
                            .await
                        }
                    };
                    (outcome, spent, started.elapsed())
                }
            },
        );
        let all = futures::future::join_all(runs);
        if children == 0 {
            Ok(all.await)
        } else {
            self.while_children_run(cx, all, &cancel).await
        }
    }

    /// The batch's results in call order: a sub-agent's spending drawn
    /// from the turn's budget and its `agent.finished`, a live result
    /// cached, each outcome through the after-call hooks; with each
    /// result's fingerprint and call id for the loop detector.
    async fn settle(
        &mut self,
        cx: &mut Around<'_>,
        batch: Batch<'_>,
        cached: Vec<Option<Value>>,
        outcomes: Vec<Ran>,
    ) -> Result<(Vec<Event>, Vec<(String, String)>), AgentError> {
        let mut results = Vec::new();
        let mut fingerprints = Vec::new();
        for (
            (
                (
                    ToolCall {
                        id: call_id,
                        tool,
                        arguments: args,
                    },
                    hit,
                ),
                (outcome, spent, took),
            ),
            plan,
        ) in batch
            .reads
            .iter()
            .zip(cached)
            .zip(outcomes)
            .zip(batch.plans)
        {
            if let Delegate::Child(planned) = plan {
                // What a sub-agent spent is drawn from this turn's budget.
                cx.spend.add(spent);
                results.push(Event::AgentFinished {
                    agent_path: planned.path.clone(),
                    outcome: match &outcome {
                        Outcome::Ok { .. } => ChildEnding::Finished,
                        Outcome::Failed { code, .. } => ChildEnding::Failed(code.clone()),
                    },
                });
            }
            let source = if hit.is_some() {
                ResultSource::Cache
            } else {
                ResultSource::Live
            };
            if hit.is_none()
                && self.tools.cacheable(tool)
                && let Outcome::Ok { result, .. } = &outcome
            {
                self.cache.put(tool, args, batch.revision, result.clone());
            }
            let (outcome, records) =
                hooked::after_call(&cx.agent.guards, call_id, tool, args, outcome).await;
            results.extend(records);
            let event = self
                .result_event(cx, call_id, outcome, source, took)
                .await?;
            fingerprints.push((fingerprint(tool, args, &event), call_id.clone()));
            results.push(event);
        }
        Ok((results, fingerprints))
    }

    /// Wait for a batch with sub-agents, hearing the parent's interrupt or
    /// a stop posted from another surface (at once from this process, at
    /// the inbox's next look from another); either cancels the sub-agents
    /// (they end `agent_stopped`), and the turn ends at its next step
    /// boundary, where the stop is taken from the inbox. Only looked at,
    /// not taken, here: words said meanwhile are recorded after the batch's
    /// results, never between a call and its result.
    async fn while_children_run<T>(
        &mut self,
        cx: &mut Around<'_>,
        all: impl Future<Output = T>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<T, AgentError> {
        tokio::pin!(all);
        let opened = cx.journal.log().await?.open_turn_started();
        let mut looked = std::time::Instant::now();
        loop {
            tokio::select! {
                done = &mut all => return Ok(done),
                () = cx.inbox.stirred(looked), if !cancel.is_cancelled() => {
                    if cx.inbox.steering().is_interrupted() {
                        cancel.cancel();
                        continue;
                    }
                    looked = std::time::Instant::now();
                    let queued = cx
                        .journal
                        .store()
                        .inbox(cx.journal.session_id())
                        .await?;
                    if queued.iter().any(|e| e.stops_turn_opened_at(opened)) {
                        cancel.cancel();
                        // Taken at the next step boundary, without waiting.
                        cx.inbox.look_next();
                    }
                }
            }
        }
    }
}

/// What one read came to: its outcome, what a sub-agent spent, how long.
type Ran = (Outcome, crate::settings::Spent, std::time::Duration);

/// A read batch as planned: the calls, each one's delegation plan, and the
/// tools' revision the results are cached under.
struct Batch<'a> {
    reads: &'a [ToolCall],
    plans: &'a [Delegate],
    revision: &'a str,
}

/// The batch's `tool.called` records (and each new sub-agent's
/// `agent.started`), durable before any of them runs; a sub-agent
/// reattached after a restart has them already.
async fn record_called(
    journal: &mut Journal,
    reads: &[ToolCall],
    plans: &[Delegate],
) -> Result<(), AgentError> {
    let mut called = Vec::new();
    for (
        ToolCall {
            id: call_id,
            tool,
            arguments: args,
        },
        plan,
    ) in reads.iter().zip(plans)
    {
        if let Delegate::Child(planned) = plan
            && planned.reattach
        {
            continue;
        }
        called.push(Event::ToolCalled {
            call_id: call_id.clone(),
            tool: tool.clone(),
            arguments: args.clone(),
            permission: Some(PermissionClass::Read),
        });
        if let Delegate::Child(planned) = plan {
            called.extend(planned.started(call_id));
        }
        journal.emit(UiKind::ToolCall {
            call_id: call_id.clone(),
            tool: tool.clone(),
            arguments: args.clone(),
        });
    }
    journal.append(called).await?;
    Ok(())
}
