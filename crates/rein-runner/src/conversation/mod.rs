//! [`Conversation`]: one session, its turns, and the step loop.
//!
//! This file is the loop: a conversation made from its [`Agent`], a turn
//! started or resumed, one step at a time (`step() -> Step`), a turn
//! finished. The conversation is its parts, each owning its state:
//!
//! - the `Agent` it runs (the definition; public, changed between turns);
//! - `journal::Journal`: the hold on the session — appends under the
//!   lease, the log read incrementally, UI events, recovery;
//! - `window::Window`: what the model sees — the request, the model call,
//!   context pressure, a structured answer's schema;
//! - `gate::Gate`: a message's calls — checked, gated, recorded, run, one
//!   result each; reads batched; sub-agents; leases and carried revisions;
//! - `inbox::Inbox`, what reaches the loop; `gate::Spend`, what the turn used.
//!
//! Beside them: `run` (what one run of the loop keeps between steps),
//! `surface` (the API besides the turn), `open`, `kept` (what a closed
//! conversation keeps for the next open), `asked`,
//! `hooked`, `authority`, `folds` (and `log`, the ones a step asks kept as
//! events come), `builtins`, `revisions`, `verify`, `answers`.

mod answers;
mod asked;
mod authority;
mod builtins;
mod contract;
mod contracted;
mod deciding;
mod folds;
mod gate;
mod hooked;
mod inbox;
mod journal;
mod kept;
mod log;
mod open;
mod revisions;
mod run;
mod surface;
mod verify;
mod window;

pub use crate::outcome::MAX_SHOWN_ARGUMENTS;
pub(crate) use answers::parse_answer;
pub use contract::{TurnContract, TurnResult};
pub use inbox::{Heard, INBOX_POLL};
pub use kept::KeptLog;
pub use log::Log;
pub use rein_wire::ApprovalRequest;

use std::sync::Arc;

use rein_sessions::{Event, Store};
use rein_wire::{AgentError, error::codes};
use serde_json::{Value, json};

use crate::agent::Agent;
use crate::outcome::TurnOutcome;
pub use crate::settings::{Budgets, Profile, ToolLoading, Verification, Wording};
use folds::last_calls;
use rein_wire::UiKind;
use run::Run;

/// The most bytes a person's message starts a turn with: far past any
/// model's window, and a bound on what one event holds.
pub const MAX_PROMPT_BYTES: usize = 4 * 1024 * 1024;

/// One session, driven turn by turn.
pub struct Conversation {
    /// The definition it runs (see [`Agent`]): settings change between
    /// turns; its tools are fixed at open.
    pub agent: Agent,
    /// The call gate: the tools, leases, carried revisions (see `gate`).
    gate: gate::Gate,
    /// What the open turn's step loop has used.
    spend: gate::Spend,
    /// What the model sees, step by step (see `window`).
    window: window::Window,
    /// The hold on the session: lease, the log as read so far, UI events.
    journal: journal::Journal,
    /// What reaches the loop from outside it (see `inbox`).
    inbox: inbox::Inbox,
    /// The definition a turn's contract replaced, while that turn is open.
    contract: Option<contract::Replaced>,
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
        kept: Option<KeptLog>,
    ) -> Result<Self, AgentError> {
        // The store's queue for opens, if it keeps one (`Store::opening`);
        // never closed (were it, opens would go on unqueued).
        let queued = store.clone();
        let _opening = match queued.opening() {
            Some(queue) => queue.acquire().await.ok(),
            None => None,
        };
        let info = match existing {
            Some(id) => store.session(id).await?,
            None => store.create_session(metadata).await?,
        };
        let (kept, carried) = match kept {
            Some(kept) => (Some(kept.events), kept.transcript),
            None => (None, None),
        };
        let journal = journal::Journal::open(store.clone(), &info, kept).await?;
        let inbox = inbox::Inbox::new(store.posted(&info.id));
        let mut conversation = Conversation {
            gate: gate::Gate::new(Arc::new(builtins::WithBuiltins {
                product: agent.tools.clone(),
                store,
            })),
            agent,
            spend: gate::Spend::default(),
            journal,
            window: window::Window::default(),
            inbox,
            contract: None,
        };
        conversation.journal.recover().await?;
        // Recovery read the log: a kept one was checked against the store,
        // and what was carried must not have seen past it.
        if let Some(carried) = carried
            && conversation.journal.kept_held()
            && carried.seen() <= conversation.journal.log().await?.len() as u64
        {
            conversation.window.carry(carried);
        }
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
        self.contract_ended();
        // The one place the prefix may change (tools, standing text):
        // before a turn's first request, never inside a turn.
        let (agent, tools) = (&self.agent, self.gate.tools());
        self.window
            .turn_boundary(agent, tools, &mut self.journal)
            .await?;
        self.journal.append(vec![
            Event::TurnStarted { turn_id: turn_id.clone(), parent: info.head_turn, prompt: text.to_owned() },
            Event::RunStarted {
                run_id,
                turn_id,
                budgets: self.agent.budgets.recorded(),
                profile: json!({"name": self.agent.profile.name, "model": self.agent.profile.model, "authority": authority::of(&self.agent, self.gate.tools().as_ref(), None)}),
            },
        ])
        .await?;
        self.run(Run::default(), Some(text)).await
    }

    /// Continue the open turn: after an approval was decided, or after a
    /// crash. Without an open turn there is nothing to do (`invalid_input`).
    pub async fn resume(&mut self) -> Result<TurnOutcome, AgentError> {
        let events = self.journal.log().await?;
        let open = events.dangling();
        if open.turns.is_empty() {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "there is no unfinished turn to resume",
            ));
        }
        // A fresh process (nothing frozen yet) takes in what its backend
        // offers now; a paused run in this process keeps its tools.
        if !self.window.tools_frozen() {
            let (agent, tools) = (&self.agent, self.gate.tools());
            self.window
                .turn_boundary(agent, tools, &mut self.journal)
                .await?;
        }
        self.check_authority(&events, None)?;
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
        self.gate
            .resume_turn(&events, self.journal.evidence_through());
        self.run(Run::resumed(&events), None).await
    }

    /// The step loop of the open turn from `run` (fresh for a new turn, the
    /// turn's calls counted again for a resume), in the agent's telemetry
    /// span (with the person's `prompt` where the definition lets content
    /// be traced).
    async fn run(&mut self, run: Run, prompt: Option<&str>) -> Result<TurnOutcome, AgentError> {
        let span = crate::telemetry::agent_span(
            &self.agent.profile.name,
            self.journal.session_id(),
            self.journal.agent(),
            prompt.filter(|_| self.agent.guards.telemetry_content),
        );
        tracing::Instrument::instrument(self.steps(run), span).await
    }

    /// Step after step until one ends the turn.
    async fn steps(&mut self, mut run: Run) -> Result<TurnOutcome, AgentError> {
        self.spend = gate::Spend::starting();
        loop {
            match self.step(&mut run).await? {
                Step::Next => {}
                Step::Ends(outcome) => return self.finish(outcome).await,
                Step::Stopped => return Ok(TurnOutcome::Interrupted),
            }
        }
    }

    /// One step: the calls still to run, else the step boundary and a
    /// model call.
    async fn step(&mut self, run: &mut Run) -> Result<Step, AgentError> {
        let events = self.journal.log().await?;
        run.forget_hidden_repeats(&events);
        // Tool calls of the last message that still need running.
        if let Some((calls, _)) = last_calls(&events) {
            let mut around = gate::Around {
                agent: &self.agent,
                journal: &mut self.journal,
                inbox: &mut self.inbox,
                spend: &mut self.spend,
                task: self.window.task(),
            };
            let ran = self
                .gate
                .run_calls(&mut around, &events, calls, &mut run.repeats)
                .await?;
            return Ok(ran.map_or(Step::Next, Step::Ends));
        }
        if let Some(step) = self.boundary().await? {
            return Ok(step);
        }
        let spent = self.spend.spent();
        let started = self.spend.started();
        let budgets = &self.agent.budgets;
        if let Some(which) = budgets.exceeded(spent.steps, spent.tokens, spent.cost, started) {
            let which = which.into();
            return Ok(Step::Ends(TurnOutcome::Budget { which }));
        }
        self.spend.step();
        let guards = &self.agent.guards;
        if let Some(why) = hooked::before_model_call(guards, &mut self.journal).await? {
            let error = AgentError::new(codes::HOOK_DENIED, why);
            return Ok(Step::Ends(TurnOutcome::Error { error }));
        }
        // After a loop nudge the model answers in words: the tools stay
        // offered, calling them is off for this one call.
        let sees = window::Sees {
            agent: &self.agent,
            tools: self.gate.tools(),
            words_only: run.words_next(),
        };
        let called = self
            .window
            .call(sees, &mut self.journal, &mut self.inbox, &events);
        let called = crate::telemetry::traced_model_call(&self.agent, called).await;
        let message = match called {
            // Cut short by a stop or an interrupt: the step boundary ends
            // the turn (the inbox is looked at again at once).
            Ok(None) => {
                self.inbox.look_next();
                return Ok(Step::Next);
            }
            Ok(Some(message)) => message,
            Err(error) => {
                self.journal.emit(UiKind::Error {
                    code: error.code.clone(),
                    message: error.message.clone(),
                });
                return Ok(Step::Ends(TurnOutcome::Error { error }));
            }
        };
        // Revisions carried in the answered step are spent.
        self.gate.answered();
        self.spend.add(self.agent.spent_on(&message));
        if !message.tool_calls.is_empty() {
            return Ok(Step::Next);
        }
        if let Some(check) = &self.agent.verification {
            let said = (&self.agent.profile.wording, &self.agent.guards.secrets[..]);
            let journal = &mut self.journal;
            match verify::verdict(check, &mut run.failed_checks, said, journal).await? {
                verify::Checked::Passed => {}
                verify::Checked::GaveUp(error) => {
                    return Ok(Step::Ends(TurnOutcome::Error { error }));
                }
                verify::Checked::Retry(text) => {
                    self.journal.append(vec![Event::SteerSaid { text }]).await?;
                    return Ok(Step::Next);
                }
            }
        }
        let reply = message.text();
        Ok(Step::Ends(TurnOutcome::Finished { reply }))
    }

    /// The step boundary: the store's inbox (when due), an interrupt, words
    /// said in this process. `Some` when the step ends here.
    async fn boundary(&mut self) -> Result<Option<Step>, AgentError> {
        if self.inbox.due() {
            let heard = self.take_inbox().await?;
            if heard.stop.is_some() {
                return Ok(Some(Step::Stopped));
            }
            if heard.said > 0 {
                return Ok(Some(Step::Next));
            }
        }
        if self.inbox.steering().take_interrupt() {
            let interrupted = Event::SteerInterrupted { reason: None };
            self.journal.append(vec![interrupted]).await?;
            return Ok(Some(Step::Ends(TurnOutcome::Interrupted)));
        }
        let said = self.inbox.steering().take_said();
        if said.is_empty() {
            return Ok(None);
        }
        let said = said.into_iter().map(|text| Event::SteerSaid { text });
        self.journal.append(said.collect()).await?;
        Ok(Some(Step::Next))
    }

    async fn finish(&mut self, outcome: TurnOutcome) -> Result<TurnOutcome, AgentError> {
        if let TurnOutcome::AwaitingApproval(_) = outcome {
            // The turn stays open; the log and control record say why.
            self.journal.emit(UiKind::Paused);
            return Ok(outcome);
        }
        let events = self.journal.log().await?;
        self.journal
            .append(folds::closing(events.dangling(), &events, &outcome))
            .await?;
        let (outcome_name, (turn_id, run_id)) = (outcome.name(), contract::last_run(&events));
        self.contract_ended();
        let ended = UiKind::TurnFinished {
            outcome: outcome_name,
            turn_id,
            run_id,
        };
        self.journal.emit(ended);
        hooked::turn_end(&self.agent.guards, &outcome).await;
        Ok(outcome)
    }

    /// Refuse to go on with the open run when its authority changed and
    /// no person accepted the change (see `authority`); under `check` in
    /// place of the definition's own when given.
    pub(super) fn check_authority(
        &self,
        events: &crate::Log,
        check: Option<&crate::settings::Verification>,
    ) -> Result<(), AgentError> {
        let evidence = self.journal.evidence_through();
        authority::check(
            &self.agent,
            check,
            self.gate.tools().as_ref(),
            evidence,
            events,
        )
    }
}

/// What a step did.
#[expect(clippy::large_enum_variant, reason = "one a step, matched at once")]
enum Step {
    /// Take the next step.
    Next,
    /// The turn ends (or pauses at an approval) with this outcome.
    Ends(TurnOutcome),
    /// A stop from another surface ended it (already recorded).
    Stopped,
}
