//! One model call of the step loop: the request built and kept inside the
//! window, `model.requested` staged, the stream assembled (text deltas
//! to the UI), the cache verdict and `model.completed` staged (both are
//! committed with the step's next append; see `journal`). An interrupt or
//! a stop cuts an open stream at once (the connection is dropped; the
//! step boundary ends the turn).
//!
//! Not here: building the request (`request`) or what the answer's calls
//! do (`calls`).

use std::time::Instant;

use futures::StreamExt;
use rein_sessions::{Acted, Event, Pressure};
use rein_tools::ToolBackend;
use rein_wire::{
    AgentError, AssembledMessage, AssembledToolCall, Assembler, PressureAction, Request,
    StreamEvent, error::codes,
};
use serde_json::Value;

use super::{Sees, Window};
use crate::conversation::folds::refused;
use crate::conversation::inbox::{INBOX_POLL, Inbox};
use crate::conversation::journal::Journal;
use rein_wire::UiKind;

impl Window {
    /// The model's answer, or `None` when an interrupt or a stop (heard
    /// through `inbox`) cut the stream short.
    pub(crate) async fn call(
        &mut self,
        sees: Sees<'_>,
        journal: &mut Journal,
        inbox: &mut Inbox,
        events: &crate::Log,
    ) -> Result<Option<AssembledMessage>, AgentError> {
        let Some(Sent {
            mut message,
            call_id,
            fingerprint,
            prefix_tokens,
            started,
        }) = self.send(sees, journal, inbox, events).await?
        else {
            return Ok(None);
        };
        // A small model's near misses, repaired when unambiguous and said.
        let names: Vec<String> = sees
            .tools
            .catalog(&sees.agent.guards.policy)
            .into_iter()
            .map(|t| t.name)
            .collect();
        let mut repaired = rein_wire::repair::calls(&mut message, &names);
        // A call printed as the whole answer is made — not when words were
        // asked for (the model is to answer, not to call).
        if !sees.words_only
            && let Some(made) =
                rein_wire::repair::call_in_text(&mut message, &names, &rein_wire::ids::new_id())
        {
            repaired.push(made);
        }
        // The model's own words echoing a key rein holds (read from a file,
        // say) never enter the log, its reply, nor the next request.
        for block in &mut message.content {
            if let rein_wire::ContentBlock::Text { text } = block {
                for secret in sees.agent.guards.secrets.iter().filter(|s| s.len() >= 8) {
                    if text.contains(secret.as_str()) {
                        *text = text.replace(secret.as_str(), rein_wire::secrets::MASK);
                    }
                }
            }
        }
        for repair in &repaired {
            journal.emit(UiKind::CallRepaired {
                call_id: repair.call_id.clone(),
                what: repair.what.clone(),
            });
        }
        let model = message
            .model
            .clone()
            .unwrap_or_else(|| sees.agent.profile.model.clone());
        let verdict = self.monitor.observe(
            &fingerprint,
            prefix_tokens,
            &message.usage.unwrap_or_default(),
            self.monitor.calls() > 0,
        );
        let price = sees.agent.prices.price(&model);
        let priced = message.usage.as_ref().zip(price);
        let cost = priced.map(|(usage, price)| price.cost_micro_usd(usage));
        let reasoning_cost = priced
            .filter(|(usage, _)| usage.reasoning > 0)
            .map(|(usage, price)| price.reasoning_cost_micro_usd(usage));
        if let Some(usage) = message.usage {
            journal.emit(UiKind::Usage {
                usage,
                cost_micro_usd: cost,
            });
        }
        // Staged too: durable with the step's first `tool.called` (before
        // any tool runs) or with the turn's end.
        journal
            .stage(vec![Event::ModelCompleted {
                call_id,
                model,
                message: message.to_message(),
                usage: message.usage,
                cost_micro_usd: cost,
                reasoning_cost_micro_usd: reasoning_cost,
                stop_reason: message.stop_reason.clone(),
                cache_verdict: Some(verdict),
                latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                repaired,
            }])
            .await?;
        // Malformed calls are answered at once with an error the model can read.
        let broken: Vec<&AssembledToolCall> = message
            .tool_calls
            .iter()
            .filter(|c| c.error.is_some())
            .collect();
        if !broken.is_empty() {
            let mut results = Vec::new();
            for (call, err) in broken
                .into_iter()
                .filter_map(|call| Some((call, call.error.as_ref()?)))
            {
                results.extend(refused(
                    call.id.clone(),
                    call.name.clone(),
                    Value::Null,
                    None,
                    &err.code,
                    &err.message,
                ));
            }
            // Nothing ran: staged like the message they answer.
            journal.stage(results).await?;
        }
        Ok(Some(message))
    }

    /// The request fitted, `model.requested` staged, the answer streamed.
    /// A refusal as too long (`refused`) lowers the window to what it
    /// states and the request is fitted again — compacted whatever its
    /// share — and sent once more; a second refusal ends the turn.
    async fn send(
        &mut self,
        sees: Sees<'_>,
        journal: &mut Journal,
        inbox: &mut Inbox,
        events: &crate::Log,
    ) -> Result<Option<Sent>, AgentError> {
        let mut refused: Option<rein_sessions::Refused> = None;
        let mut reread: Option<std::sync::Arc<crate::Log>> = None;
        loop {
            let events = reread.as_deref().map_or(events, |log| log);
            let Fitted {
                mut request,
                bytes,
                digest,
                pressure,
            } = match self.fitted(sees, journal, events, refused.as_ref()).await {
                Err(err) if err.code == codes::CONTEXT_WINDOW_EXCEEDED => {
                    return Err(match &refused {
                        Some(refused) => super::refused::refused_again(err, refused),
                        None => err,
                    });
                }
                fitted => fitted?,
            };
            // What rein counted the prompt at (the answer's room left out),
            // and whether by its own estimate.
            let counted = ((pressure.sent * pressure.window as f64) as u64)
                .saturating_sub(u64::from(request.max_output_tokens));
            let estimated = pressure.method == rein_wire::CountMethod::Estimate;
            let call_id = rein_wire::ids::new_id();
            let prefix = match self.transcript.prefix_facts() {
                Some(facts) => facts.clone(),
                None => rein_cache::PrefixFacts::of(&request.system, &request.tools),
            };
            let fingerprint = prefix.fingerprint.clone();
            let prefix_tokens = prefix.tokens;
            // The digest covers what the model sees before breakpoints are
            // planned (they follow from it) and without the routing metadata.
            rein_cache::plan_with(&mut request, &sees.agent.provider.capabilities(), &prefix);
            request.metadata.session_id = Some(journal.session_id().to_owned());
            request.metadata.task_id.clone_from(&self.task_id);
            // Staged, not committed: nothing depends on it being durable before
            // the answer (a crash now means the call is made again).
            journal
                .stage(vec![Event::ModelRequested {
                    call_id: call_id.clone(),
                    prefix_fingerprint: fingerprint.clone(),
                    request_digest: digest,
                    estimated_tokens: (bytes * 2).div_ceil(7),
                    pressure: Some(pressure),
                }])
                .await?;
            let started = Instant::now();
            match streamed(sees, journal, inbox, events, request).await {
                Ok(answer) => {
                    return Ok(answer.map(|message| Sent {
                        message,
                        call_id,
                        fingerprint,
                        prefix_tokens,
                        started,
                    }));
                }
                Err(err) if err.code != codes::CONTEXT_WINDOW_EXCEEDED => return Err(err),
                Err(err) => {
                    if let Some(refused) = &refused {
                        return Err(super::refused::refused_again(err, refused));
                    }
                    let before = self.tokens(sees.agent);
                    let took = self.take_refusal(&err, counted, estimated, before);
                    journal.emit(UiKind::CatalogChanged {
                        changes: vec![format!(
                            "the provider refused the request as too long; working in {} tokens, compacting and asking once more",
                            took.window
                        )],
                    });
                    refused = Some(took);
                    reread = Some(journal.log().await?);
                }
            }
        }
    }

    /// The request for `events`, made to fit the window — older read
    /// results pruned past the soft line, older history compacted past the
    /// hard one, which must reach the target (one step's reads set aside
    /// if need be: `overflow`) — with its JSON size, digest and the record
    /// of its pressure; `context_window_exceeded` when it does not fit
    /// even then.
    async fn fitted(
        &mut self,
        sees: Sees<'_>,
        journal: &mut Journal,
        events: &crate::Log,
        refused: Option<&rein_sessions::Refused>,
    ) -> Result<Fitted, AgentError> {
        let policy = &sees.agent.context;
        let mut request = self.request(sees, events)?;
        let window = self.tokens(sees.agent);
        // One pass over the request gives its size (for the estimate) and its
        // digest (for the record); it is redone only when the request changes.
        let (bytes, digest) = self.transcript.size_and_digest(&mut request);
        let (before, method) =
            Self::measure(sees.agent, &request, bytes, window, self.estimate_scale).await;
        let mut fitted = Fitted {
            request,
            bytes,
            digest,
            pressure: Pressure {
                method,
                window,
                before,
                sent: before,
                acted: Vec::new(),
                refused: refused.cloned(),
            },
        };
        if before > policy.soft && Self::soft_prune(sees.agent, journal, window, before).await? {
            let acts = acted(PressureAction::Pruned, before, policy.soft, policy.soft);
            self.refit(sees, journal, &mut fitted, acts).await?;
        }
        let share = fitted.pressure.sent;
        // After a refusal the provider's word stands over rein's count.
        if share <= policy.hard && refused.is_none() {
            return Ok(fitted);
        }
        let (trigger, line) = match refused {
            Some(_) => (super::pressure::Trigger::Refused, share.min(policy.hard)),
            None => (super::pressure::Trigger::HardLine, policy.hard),
        };
        let pressed = super::pressure::Pressed {
            window,
            share,
            reserve: super::pressure::reserve_of(&fitted.request),
            trigger,
        };
        // One attempt: it reaches the target, or — one step's reads too
        // many for the window — those are set aside, or the turn ends.
        match Self::compact(sees.agent, journal, pressed).await {
            Ok(()) => {
                let mut acts = acted(PressureAction::Compacted, share, line, policy.target);
                if refused.is_some() {
                    acts.reason =
                        "the provider refused the request as longer than its window".into();
                }
                self.refit(sees, journal, &mut fitted, acts).await?;
            }
            Err(err) if err.code == codes::CONTEXT_WINDOW_EXCEEDED => {}
            Err(err) => return Err(err),
        }
        // Each round sets aside at least one result, so this ends; the
        // estimate of what a result costs may fall short, hence rounds.
        while fitted.pressure.sent > policy.target {
            let share = fitted.pressure.sent;
            let over = ((share - policy.target) * window as f64).ceil() as u64;
            if !Self::set_aside_to_fit(journal, window, share, policy.target, over).await? {
                break;
            }
            let acts = acted(PressureAction::Pruned, share, policy.target, policy.target);
            self.refit(sees, journal, &mut fitted, acts).await?;
        }
        // Short of the target but inside the window, the request is sent:
        // a small window (a prefix, the answer's room and one file read may
        // be most of 4,096 tokens) compacts more often, and works; were
        // rein's count short, the provider's refusal says so (`send`).
        if fitted.pressure.sent > 1.0 {
            return Err(AgentError::new(
                codes::CONTEXT_WINDOW_EXCEEDED,
                "the conversation does not fit the context window even after compaction",
            )
            .with_field(
                "estimated_tokens",
                rein_context::window::estimate_from_bytes(
                    fitted.bytes,
                    fitted.request.max_output_tokens,
                ),
            )
            .with_field("window", window)
            .with_field("share", fitted.pressure.sent)
            .with_field("target", policy.target));
        }
        Ok(fitted)
    }

    /// After pressure acted (`acts` says how): the request built again from
    /// the log, and measured again.
    async fn refit(
        &mut self,
        sees: Sees<'_>,
        journal: &mut Journal,
        fitted: &mut Fitted,
        acts: Acted,
    ) -> Result<(), AgentError> {
        fitted.pressure.acted.push(acts);
        let events = journal.log().await?;
        fitted.request = self.request(sees, &events)?;
        (fitted.bytes, fitted.digest) = self.transcript.size_and_digest(&mut fitted.request);
        (fitted.pressure.sent, fitted.pressure.method) = Self::measure(
            sees.agent,
            &fitted.request,
            fitted.bytes,
            fitted.pressure.window,
            self.estimate_scale,
        )
        .await;
        Ok(())
    }
}

/// A sent request's answer and what the call's records need of it.
struct Sent {
    message: AssembledMessage,
    call_id: String,
    fingerprint: String,
    prefix_tokens: u64,
    started: Instant,
}

/// A request fitted to the window, its JSON size and digest, and the
/// record of how full the window was.
struct Fitted {
    request: Request,
    bytes: u64,
    digest: String,
    pressure: Pressure,
}

/// The record of `action`, set off at `share` over `line`, aiming at
/// `target`.
fn acted(action: PressureAction, share: f64, line: f64, target: f64) -> Acted {
    Acted {
        action,
        line,
        target,
        reason: format!(
            "the request was {:.1}% of the window, over the {:.0}% line",
            share * 100.0,
            line * 100.0
        ),
    }
}

/// `request` streamed from the provider, text deltas shown as they come;
/// `None` when an interrupt or a stop posted to the session's inbox cut it
/// short (the connection is dropped). Either is heard when it comes (a
/// stop from another process as soon as the store tells of it).
async fn streamed(
    sees: Sees<'_>,
    journal: &Journal,
    inbox: &mut Inbox,
    events: &crate::Log,
    request: Request,
) -> Result<Option<AssembledMessage>, AgentError> {
    let mut stream = sees.agent.provider.stream(request);
    let mut assembler = Assembler::new();
    let opened = events.open_turn_started();
    // One fallback timer for the whole stream (for a stop posted from
    // another process, on a store that cannot tell of it), reset each time
    // the inbox is looked at.
    let polls = inbox.polls();
    let fallback = tokio::time::sleep(INBOX_POLL);
    tokio::pin!(fallback);
    loop {
        // `Some(next)` from the stream; `None` when the inbox is to be
        // looked at.
        let woke = tokio::select! {
            biased;
            item = stream.next() => Some(item),
            () = inbox.nudged() => None,
            () = &mut fallback, if polls => None,
        };
        let Some(item) = woke else {
            if inbox.steering().is_interrupted() {
                return Ok(None);
            }
            fallback
                .as_mut()
                .reset(tokio::time::Instant::now() + INBOX_POLL);
            let queued = journal.store().inbox(journal.session_id()).await?;
            if queued.iter().any(|e| e.stops_turn_opened_at(opened)) {
                return Ok(None);
            }
            continue;
        };
        let Some(item) = item else { break };
        let event = item?;
        match &event {
            StreamEvent::TextDelta { text } => {
                journal.emit(UiKind::TextDelta { text: text.clone() });
            }
            StreamEvent::ThinkingDelta { text } => {
                journal.emit(UiKind::ReasoningDelta { text: text.clone() });
            }
            StreamEvent::TextReplaced { streamed, text } => {
                journal.emit(UiKind::TextReplaced {
                    streamed: streamed.clone(),
                    text: text.clone(),
                });
            }
            _ => {}
        }
        assembler.push(&event);
    }
    let message = assembler.finish();
    match &message.error {
        Some(err) => Err(err.clone()),
        None => Ok(Some(message)),
    }
}
