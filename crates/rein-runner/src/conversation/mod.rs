//! [`Conversation`]: one session, its turns, and the step loop.
//!
//! This file is the loop: open, turn, resume, decide, stop, the step loop
//! and finishing a turn. Each other job has a module of its own:
//!
//! - `person`: what a person's surface does to the conversation (decide,
//!   stop);
//! - `journal`: `Journal`, the hold on the session — appends under the
//!   lease, the log read incrementally, UI
//!   events, recovery of interrupted calls;
//! - `folds`: pure folds over the log (current path, last calls, approval
//!   state, the events of a call that did not run);
//! - `window`: what the model sees — the request (frozen prefix, projected
//!   transcript), the model call, context pressure (measure, prune,
//!   compact, summarise);
//! - `calls`: a message's calls through the gate, one result each;
//! - `reads`: the parallel read batch;
//! - `delegate`: a read batch's sub-agents — planned, recorded, reattached;
//! - `builtins`: `read_result`, `load_tool` / `call_tool`, `read_skill`;
//! - `answers`: structured answers (`ask`, `ask_with_schema`);
//! - `verify`: the verification command.

mod answers;
mod asked;
mod authority;
mod builtins;
mod folds;
mod hooked;
mod inbox;
mod journal;
mod surface;

pub use crate::outcome::{ApprovalRequest, MAX_SHOWN_ARGUMENTS};
pub(crate) use answers::parse_answer;
pub use inbox::{Heard, INBOX_POLL};
mod gate;
mod revisions;
mod verify;
mod window;

use std::sync::Arc;
use std::time::Instant;

use rein_approvals::Leases;
use rein_sessions::recovery::dangling;
use rein_sessions::{Event, Store};
use rein_tools::ToolBackend;
use rein_wire::{AgentError, error::codes};
use serde_json::{Value, json};

use crate::agent::Agent;
use crate::outcome::{TurnOutcome, UiKind};

pub use crate::settings::{Budgets, Profile, ToolLoading, Verification, Wording};
use folds::{agents_in_open_turn, last_calls};

/// The most bytes a person's message starts a turn with: far past any
/// model's window, and a bound on what one event holds.
pub const MAX_PROMPT_BYTES: usize = 4 * 1024 * 1024;

/// One session, driven turn by turn.
pub struct Conversation {
    /// The definition it runs with (see [`Agent`]); its settings may be
    /// changed between turns, its tools are fixed at open.
    pub agent: Agent,
    /// The call gate: the tools, and the leases and revisions a turn keeps
    /// (see `gate`).
    gate: gate::Gate,
    /// What the open turn's step loop has used.
    spend: gate::Spend,
    /// What the model sees, step by step (see `window`).
    window: window::Window,
    /// The hold on the session: lease, the log as read so far, UI events.
    journal: journal::Journal,
    /// What reaches the loop from outside it (see `inbox`).
    inbox: inbox::Inbox,
}

impl Conversation {
    /// The one place a conversation is made: `agent`'s definition on
    /// `existing` (or a new session recording `metadata`). Reached only
    /// through [`Agent::open_session`].
    pub(crate) async fn start(
        agent: Agent,
        store: Arc<dyn Store>,
        existing: Option<&str>,
        metadata: Value,
    ) -> Result<Self, AgentError> {
        let info = match existing {
            Some(id) => store.session(id).await?,
            None => store.create_session(metadata).await?,
        };
        let journal = journal::Journal::open(store.clone(), &info).await?;
        let mut conversation = Conversation {
            gate: gate::Gate::new(Arc::new(builtins::WithBuiltins {
                product: agent.tools.clone(),
                store,
            })),
            agent,
            spend: gate::Spend::default(),
            journal,
            window: window::Window::default(),
            inbox: inbox::Inbox::default(),
        };
        conversation.journal.recover().await?;
        Ok(conversation)
    }

    /// Start a turn with what the person said, and run it. A message past
    /// [`MAX_PROMPT_BYTES`] is refused (`invalid_input`) before anything is
    /// recorded.
    pub async fn turn(&mut self, text: &str) -> Result<TurnOutcome, AgentError> {
        if text.len() > MAX_PROMPT_BYTES {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                format!(
                    "the message is {} bytes; a turn takes at most {MAX_PROMPT_BYTES} (give a long text as a file the tools read)",
                    text.len()
                ),
            ));
        }
        let info = self
            .journal
            .store()
            .session(self.journal.session_id())
            .await?;
        let turn_id = rein_wire::ids::new_id();
        let run_id = rein_wire::ids::new_id();
        self.gate.new_turn();
        // The one place the tools on offer may change: before a turn's
        // first request, never inside a turn.
        let changes = self.gate.tools.turn_boundary();
        if !changes.is_empty() {
            self.window.transcript.refreeze();
            self.journal.emit(UiKind::CatalogChanged { changes });
        }
        self.journal.append(vec![
            Event::TurnStarted { turn_id: turn_id.clone(), parent: info.head_turn, prompt: text.to_owned() },
            Event::RunStarted {
                run_id,
                turn_id,
                budgets: json!({"max_steps": self.agent.budgets.max_steps, "max_tokens": self.agent.budgets.max_tokens,
                                "max_cost_micro_usd": self.agent.budgets.max_cost_micro_usd, "max_wall_s": self.agent.budgets.max_wall.as_secs()}),
                profile: json!({"name": self.agent.profile.name, "model": self.agent.profile.model, "authority": authority::of(&self.agent, self.gate.tools.as_ref())}),
            },
        ])
        .await?;
        let span = crate::telemetry::agent_span(
            &self.agent.profile.name,
            self.journal.session_id(),
            self.journal.agent(),
            self.agent.guards.telemetry_content.then_some(text),
        );
        tracing::Instrument::instrument(self.run(), span).await
    }

    /// Continue the open turn: after an approval was decided, or after a
    /// crash. Without an open turn there is nothing to do (`invalid_input`).
    pub async fn resume(&mut self) -> Result<TurnOutcome, AgentError> {
        let events = self.journal.log().await?;
        let open = dangling(&events);
        if open.turns.is_empty() {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "there is no unfinished turn to resume",
            ));
        }
        // A fresh process (nothing frozen yet) takes in what its backend
        // offers now; a paused run in this process keeps its tools.
        if !self.window.transcript.is_frozen() {
            let changes = self.gate.tools.turn_boundary();
            if !changes.is_empty() {
                self.journal.emit(UiKind::CatalogChanged { changes });
            }
        }
        self.check_authority(&events)?;
        // What other surfaces decided or said meanwhile goes in first.
        let heard = self.take_inbox().await?;
        if heard.stop.is_some() {
            return Ok(TurnOutcome::Interrupted);
        }
        let events = if heard.is_empty() {
            events
        } else {
            self.journal.log().await?
        };
        // Leases granted earlier in this run still hold; none from before
        // it, and none from imported history.
        let evidence = self.journal.evidence_through();
        let log: Vec<Event> = events
            .iter()
            .filter(|e| e.seq > evidence)
            .map(|e| e.event.clone())
            .collect();
        // Sub-agents started earlier in this turn count against its bound
        // (and keep their paths), after a restart too.
        self.gate
            .resume_turn(Leases::of_open_run(&log), agents_in_open_turn(&events));
        let span = crate::telemetry::agent_span(
            &self.agent.profile.name,
            self.journal.session_id(),
            self.journal.agent(),
            None,
        );
        tracing::Instrument::instrument(self.run(), span).await
    }

    /// The step loop of the open turn.
    async fn run(&mut self) -> Result<TurnOutcome, AgentError> {
        let started = Instant::now();
        self.spend = gate::Spend {
            spent: crate::delegation::Spent::default(),
            started: Some(started),
        };
        let mut repeats = rein_wire::loops::Repeats::new();
        let mut failed_checks: u32 = 0;
        loop {
            let events = self.journal.log().await?;
            // Tool calls of the last message that still need running.
            if let Some((message_calls, _)) = last_calls(&events) {
                let mut around = gate::Around {
                    agent: &self.agent,
                    journal: &mut self.journal,
                    inbox: &mut self.inbox,
                    spend: &mut self.spend,
                };
                let ran = self
                    .gate
                    .run_calls(&mut around, &events, message_calls, &mut repeats)
                    .await?;
                match ran {
                    Some(outcome) => return self.finish(outcome).await,
                    None => continue,
                }
            }
            // The step boundary: the inbox, interrupts, what was said, budgets.
            let heard = if self.inbox.due() {
                self.take_inbox().await?
            } else {
                Heard::default()
            };
            if heard.stop.is_some() {
                return Ok(TurnOutcome::Interrupted);
            }
            if heard.said > 0 {
                continue;
            }
            if self.inbox.steering.take_interrupt() {
                self.journal
                    .append(vec![Event::SteerInterrupted { reason: None }])
                    .await?;
                return self.finish(TurnOutcome::Interrupted).await;
            }
            let said = self.inbox.steering.take_said();
            if !said.is_empty() {
                self.journal
                    .append(
                        said.into_iter()
                            .map(|text| Event::SteerSaid { text })
                            .collect(),
                    )
                    .await?;
                continue;
            }
            let spent = self.spend.spent;
            if let Some(which) =
                self.agent
                    .budgets
                    .exceeded(spent.steps, spent.tokens, spent.cost, started)
            {
                return self
                    .finish(TurnOutcome::Budget {
                        which: which.into(),
                    })
                    .await;
            }
            self.spend.spent.steps += 1;
            if let Some(why) =
                hooked::before_model_call(&self.agent.guards.hooks, &mut self.journal).await?
            {
                let error = AgentError::new(codes::HOOK_DENIED, why);
                return self.finish(TurnOutcome::Error { error }).await;
            }
            let chat =
                crate::telemetry::chat_span(self.agent.provider.name(), &self.agent.profile.model);
            let asked = Instant::now();
            let sees = window::Sees {
                agent: &self.agent,
                tools: &self.gate.tools,
            };
            let calling = self
                .window
                .call(sees, &mut self.journal, &self.inbox.steering, &events);
            let called = tracing::Instrument::instrument(calling, chat.clone()).await;
            // Cut short by a stop or an interrupt: the step boundary ends
            // the turn (the inbox is looked at again at once).
            let Some(called) = called.transpose() else {
                self.inbox.look_next();
                continue;
            };
            match &called {
                Ok(message) => crate::telemetry::model_called(
                    &chat,
                    self.agent.provider.name(),
                    message
                        .model
                        .as_deref()
                        .unwrap_or(&self.agent.profile.model),
                    message.usage.as_ref(),
                    message.stop_reason.as_ref().map(|r| r.as_str()),
                    asked.elapsed().as_secs_f64(),
                ),
                Err(err) => crate::telemetry::model_failed(&chat, err.code.as_str()),
            }
            let message = match called {
                Ok(message) => {
                    // Revisions carried in the answered step are spent.
                    self.gate.answered();
                    message
                }
                Err(err) => {
                    self.journal.emit(UiKind::Error {
                        code: err.code.to_string(),
                        message: err.message.clone(),
                    });
                    return self.finish(TurnOutcome::Error { error: err }).await;
                }
            };
            if let Some(usage) = &message.usage {
                let model = message
                    .model
                    .as_deref()
                    .unwrap_or(&self.agent.profile.model);
                self.spend.spent.add(crate::delegation::Spent {
                    steps: 0,
                    tokens: usage.prompt_total() + usage.output,
                    cost: self.agent.prices.cost_micro_usd(model, usage).unwrap_or(0),
                });
            }
            if message.tool_calls.is_empty() {
                if let Some(check) = self.agent.verification.clone() {
                    match verify::verdict(&check, &mut failed_checks, &self.agent.profile.wording)
                        .await
                    {
                        verify::Checked::Passed => {}
                        verify::Checked::GaveUp(error) => {
                            return self.finish(TurnOutcome::Error { error }).await;
                        }
                        verify::Checked::Retry(text) => {
                            self.journal.append(vec![Event::SteerSaid { text }]).await?;
                            continue;
                        }
                    }
                }
                return self
                    .finish(TurnOutcome::Finished {
                        reply: message.text(),
                    })
                    .await;
            }
        }
    }

    async fn finish(&mut self, outcome: TurnOutcome) -> Result<TurnOutcome, AgentError> {
        if let TurnOutcome::AwaitingApproval(_) = outcome {
            // The turn stays open; the log and control record say why.
            self.journal.emit(UiKind::Paused);
            return Ok(outcome);
        }
        let events = self.journal.log().await?;
        let open = dangling(&events);
        let reply = match &outcome {
            TurnOutcome::Finished { reply } => Some(reply.clone()),
            _ => None,
        };
        let mut closing = Vec::new();
        for turn_id in &open.turns {
            closing.push(Event::TurnFinished {
                turn_id: turn_id.clone(),
                outcome: outcome.name().into(),
                reply: reply.clone(),
            });
        }
        for run_id in open.runs {
            let totals = match &outcome {
                TurnOutcome::Error { error } => json!({"error": error.code}),
                TurnOutcome::Budget { which } => json!({"budget": which}),
                _ => json!({}),
            };
            closing.push(Event::RunFinished {
                run_id,
                outcome: outcome.name().into(),
                totals,
            });
        }
        // A failed turn stays in the log, but the next turn grows from the
        // turn before it, so the failure is not part of later context.
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
        self.journal.append(closing).await?;
        self.journal.emit(UiKind::TurnFinished {
            outcome: outcome.name().into(),
        });
        hooked::turn_end(&self.agent.guards.hooks, &outcome).await;
        Ok(outcome)
    }
}
