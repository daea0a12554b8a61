//! The conversation as a product and a person's surface hold it, besides
//! the turn itself: opening it, watching it, its settings and report,
//! branching, structured answers, deciding a pending approval in this
//! process, stopping the open turn, taking what other surfaces put in the
//! session's inbox, waiting for a decision, accepting changed authority.
//!
//! Not here: the turn and its step loop (`mod.rs`), posting from another
//! process (`rein_approvals::decide`, `say`, `stop`).

use std::sync::Arc;

use rein_approvals::{Answer, Decision, Surface};
use rein_gateway::Provider;
use rein_sessions::recovery::dangling;
use rein_sessions::{Event, Store, StoredEvent};
use rein_tools::ToolBackend;
use rein_wire::ToolCall;
use rein_wire::{AgentError, PriceTable, Request, error::codes};
use serde_json::Value;
use tokio::sync::broadcast;

use super::answers::parse_answer;
use super::contract::{self, Replaced, TurnContract, TurnResult};
use super::folds::{last_calls, refused};
use super::inbox::Heard;
use super::{Conversation, asked, authority, window};
use crate::agent::Agent;
use crate::outcome::TurnOutcome;
use crate::settings::{Profile, Verification};
use rein_wire::{ApprovalRequest, UiEvent, UiKind};

impl Conversation {
    /// Open a new session (or continue `existing`), take its lock, and
    /// recover what a crashed process left: every tool call recorded
    /// without a result gets an `interrupted` result (it is never re-run).
    /// The same as [`Agent::open_session`] of `Agent::new(provider,
    /// backend, profile)`; build an [`Agent`] to set more.
    pub async fn open(
        store: Arc<dyn Store>,
        provider: Arc<dyn Provider>,
        backend: Arc<dyn ToolBackend>,
        profile: Profile,
        existing: Option<&str>,
    ) -> Result<Self, AgentError> {
        Agent::new(provider, backend, profile)
            .open_session(store, existing, Value::Null)
            .await
    }

    /// Like [`Conversation::open`], with the application's metadata for a
    /// new session.
    pub async fn open_with(
        store: Arc<dyn Store>,
        provider: Arc<dyn Provider>,
        backend: Arc<dyn ToolBackend>,
        profile: Profile,
        existing: Option<&str>,
        metadata: Value,
    ) -> Result<Self, AgentError> {
        Agent::new(provider, backend, profile)
            .open_session(store, existing, metadata)
            .await
    }

    /// Run as a sub-agent with this path (its events and UI events carry it).
    pub(crate) fn set_agent_path(&mut self, path: &str) {
        self.journal.set_agent(path);
    }

    /// Send UI events to a parent's watchers.
    pub(crate) fn share_ui(&mut self, sender: broadcast::Sender<UiEvent>) {
        self.journal.share_ui(sender);
    }

    /// Tell watchers something (a sub-agent's pause, from its spawner).
    pub(crate) fn announce(&self, kind: UiKind) {
        self.journal.emit(kind);
    }

    /// What the step loop used since it last started or resumed.
    pub(crate) fn spent(&self) -> crate::settings::Spent {
        self.spend.spent
    }

    /// The store the session lives in (a surface decides a sub-agent's
    /// approval there with [`rein_approvals::decide`]).
    pub fn store(&self) -> Arc<dyn Store> {
        self.journal.store().clone()
    }

    /// Use these prices for cost (default: rein's built-in table, looked up
    /// by the model name the provider reports, else the profile's model; a
    /// model missing from the table has no cost, never a cost of zero).
    /// Better set on the [`Agent`], which every reopen takes.
    pub fn set_prices(&mut self, prices: PriceTable) {
        self.agent.prices = prices;
    }

    /// Mask these secret values (the provider's key, say) in every tool
    /// result before it is recorded or shown to the model (see
    /// [`crate::Guards::secrets`]).
    pub fn mask_secrets(&mut self, secrets: Vec<String>) {
        self.agent.guards.secrets = secrets;
    }

    /// The session's id.
    pub fn session_id(&self) -> &str {
        self.journal.session_id()
    }

    /// Watch what happens.
    pub fn subscribe(&self) -> broadcast::Receiver<UiEvent> {
        self.journal.subscribe()
    }

    /// The request the next step would send (prefix, projected history,
    /// breakpoints), without sending it or recording anything.
    pub async fn next_request(&mut self) -> Result<Request, AgentError> {
        let events = self.journal.log().await?;
        let sees = window::Sees {
            agent: &self.agent,
            tools: &self.gate.tools,
            words_only: false,
        };
        let mut request = self.window.request(sees, &events)?;
        rein_cache::plan(&mut request, &self.agent.provider.capabilities());
        Ok(request)
    }

    /// Compact the history now (a person asked, or a product decided), as
    /// hard compaction would: older complete groups become a derived state
    /// and a model-written summary; the recent tail stays raw.
    pub async fn compact_now(&mut self) -> Result<(), AgentError> {
        let request = self.next_request().await?;
        let tokens = self.window.tokens(&self.agent);
        let bytes = rein_wire::canonical::to_string(&request).map_or(0, |s| s.len() as u64);
        let estimate = crate::context::estimate_from_bytes(bytes, request.max_output_tokens);
        let pressed = window::Pressed {
            window: tokens,
            share: estimate as f64 / tokens.max(1) as f64,
            reserve: window::reserve_of(&request),
            trigger: window::Trigger::Asked,
        };
        window::Window::compact(&self.agent, &mut self.journal, pressed).await
    }

    /// The prompt-cache monitor: verdict counts, read share, logged misses.
    pub fn cache_monitor(&self) -> &rein_cache::CacheMonitor {
        &self.window.monitor
    }

    /// A handle to steer from anywhere.
    pub fn steering(&self) -> crate::Steering {
        self.inbox.steering.clone()
    }

    /// The session's whole log.
    pub async fn log_events(&mut self) -> Result<Vec<StoredEvent>, AgentError> {
        Ok(self.journal.log().await?.as_ref().clone())
    }

    /// What the session did and cost so far (tokens, cost, tools, per
    /// run), read from its log, with its sub-agents rolled up.
    pub async fn report(&mut self) -> Result<rein_trace::TraceReport, AgentError> {
        crate::report_with_agents(self.journal.store().as_ref(), self.journal.session_id()).await
    }

    /// Give the session's lock back.
    pub async fn close(self) -> Result<(), AgentError> {
        self.journal.release().await
    }

    /// Make the next turn continue from `turn_id`, an earlier turn of this
    /// session (the turns after it stay in the log, on their own branch).
    /// Refused while a turn is open (`invalid_input`), and for a turn of
    /// another session or none (`turn_not_in_session`, `turn_not_found`).
    pub async fn branch_from(&mut self, turn_id: &str) -> Result<(), AgentError> {
        if !dangling(&self.journal.log().await?).turns.is_empty() {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "a turn is open: finish or stop it before branching",
            ));
        }
        self.journal
            .append(vec![Event::BranchCreated {
                from_turn: Some(turn_id.to_owned()),
            }])
            .await?;
        Ok(())
    }

    /// Ask for a structured answer: the reply must be JSON following `T`'s
    /// schema. The provider's native structured output is used where it has
    /// one; otherwise the schema is given in the prompt. An answer that does
    /// not validate gets one repair turn; then `structured_answer_invalid`.
    pub async fn ask<T: schemars::JsonSchema + serde::de::DeserializeOwned>(
        &mut self,
        text: &str,
    ) -> Result<T, AgentError> {
        let value = self
            .ask_with_schema(text, rein_tools::schema_for::<T>())
            .await?;
        serde_json::from_value::<T>(value).map_err(|e| {
            AgentError::new(
                codes::STRUCTURED_ANSWER_INVALID,
                format!("the answer does not fit: {e}"),
            )
        })
    }

    /// [`Conversation::ask`] with the schema given as JSON (a product or an
    /// eval that has no Rust type for it): the validated answer.
    pub async fn ask_with_schema(
        &mut self,
        text: &str,
        schema: Value,
    ) -> Result<Value, AgentError> {
        let validator = jsonschema::validator_for(&schema).map_err(|e| {
            AgentError::new(
                codes::INVALID_INPUT,
                format!("the answer schema does not compile: {e}"),
            )
        })?;
        let native = self.agent.provider.capabilities().structured_output;
        self.window.answer_schema = native.then(|| rein_wire::OutputSchema {
            name: "answer".into(),
            schema: schema.clone(),
        });
        let mut prompt = text.to_owned();
        if !native {
            prompt.push_str(&format!("\n\nAnswer with only a JSON value that follows this JSON schema, and nothing else:\n{schema}"));
        }
        let result = async {
            let mut problem = String::new();
            for attempt in 0..2 {
                let outcome = if attempt == 0 {
                    self.turn(&prompt).await?
                } else {
                    self.turn(&format!(
                        "Your answer did not follow the schema: {problem}. Answer again with only the JSON value."
                    ))
                    .await?
                };
                let reply = match outcome {
                    TurnOutcome::Finished { reply } => reply,
                    TurnOutcome::Error { error } => return Err(error),
                    other => {
                        return Err(AgentError::new(
                            codes::STRUCTURED_ANSWER_INVALID,
                            format!("the turn ended without an answer ({})", other.name()),
                        ));
                    }
                };
                match parse_answer(&reply) {
                    Ok(value) => {
                        let errors: Vec<String> = validator.iter_errors(&value).take(5).map(|e| e.to_string()).collect();
                        if errors.is_empty() {
                            return Ok(value);
                        }
                        problem = errors.join("; ");
                    }
                    Err(e) => problem = e,
                }
            }
            Err(AgentError::new(
                codes::STRUCTURED_ANSWER_INVALID,
                format!("the answer did not follow the schema after one repair: {problem}"),
            ))
        }
        .await;
        self.window.answer_schema = None;
        result
    }

    /// Decide a pending approval from a person's surface in this process
    /// (the terminal's y/N). Other processes use [`rein_approvals::decide`].
    /// A decision another surface already made wins: the inbox is taken
    /// first, and an approval decided there is `conflict` here.
    pub async fn decide(
        &mut self,
        approval_id: &str,
        answer: Answer,
        surface: &Surface,
    ) -> Result<(), AgentError> {
        let heard = self.take_inbox().await?;
        if let Some(by) = &heard.stop {
            return Err(AgentError::new(
                codes::CONFLICT,
                format!(
                    "the turn was stopped by {by}: approval `{approval_id}` was refused with it"
                ),
            ));
        }
        if let Some((_, decision, by)) = heard.decided.iter().find(|(a, _, _)| a == approval_id) {
            return Err(AgentError::new(
                codes::CONFLICT,
                format!("approval `{approval_id}` was already {decision} by {by}"),
            ));
        }
        // A yes under authority that changed since the run started (and
        // nobody accepted) is refused before it is recorded: it could not
        // run anyway. A no is always recorded.
        let yes = matches!(answer, Answer::Approve(_));
        let (decision, _) = answer.stored();
        let control = self.journal.control().await?;
        let Some(event) = rein_approvals::decided(&control, approval_id, answer, surface) else {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                format!("approval `{approval_id}` is not pending"),
            ));
        };
        if yes {
            let events = self.journal.log().await?;
            self.check_authority(&events, None)?;
        }
        self.journal.append(vec![event]).await?;
        self.journal.emit(UiKind::ApprovalDecided {
            approval_id: approval_id.to_owned(),
            decision,
        });
        Ok(())
    }

    /// Take what other surfaces put in the session's inbox into the log:
    /// a decision for an approval still pending becomes `approval.decided`
    /// (one decided meanwhile is passed over), words become `steer.said`,
    /// all in one transaction with marking them taken. A stop is acted on
    /// here, so no caller can pass over one: it wins over every decision
    /// queued after it (those are not recorded), then the turn is stopped
    /// ([`Conversation::stop_by`]) and [`Heard::stop`] says by whom; a stop
    /// posted before the open turn began is passed over. The loop calls
    /// this at every step boundary and on resume; a surface waiting at an
    /// approval calls it to learn of decisions made elsewhere.
    pub async fn take_inbox(&mut self) -> Result<Heard, AgentError> {
        let heard = self.inbox.take(&mut self.journal).await?;
        if let Some(by) = &heard.stop {
            self.stop_by(by).await?;
        }
        Ok(heard)
    }

    /// Stop the open turn from a person's surface: every pending approval
    /// is decided `stopped` (its call gets an error result telling the model
    /// not to work around it) and the turn ends as `interrupted`.
    pub async fn stop(&mut self, surface: &Surface) -> Result<TurnOutcome, AgentError> {
        self.stop_by(surface.name()).await
    }

    /// The approvals waiting for a person, oldest first — after a restart
    /// too (they are read from the log).
    pub async fn pending_approvals(&mut self) -> Result<Vec<ApprovalRequest>, AgentError> {
        asked::pending(&mut self.journal, self.gate.tools.as_ref()).await
    }

    /// Wait until `approval_id` is decided by a person on any surface
    /// (through the session's inbox: `rein approve`, a terminal, a server —
    /// one in this process wakes the wait at once, through
    /// [`rein_sessions::Store::posted`]),
    /// then go on with the turn. A stop from a surface ends the turn;
    /// `cancel` ends the wait with `None` (the caller decides what that
    /// means: a graph task stops waiting, a sub-agent is stopped). Never
    /// decides anything itself.
    pub async fn wait_for_decision(
        &mut self,
        approval_id: &str,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Option<TurnOutcome>, AgentError> {
        // A surface in this process wakes the wait when it posts; one in
        // another process is heard at the next look.
        loop {
            let looked = std::time::Instant::now();
            if self.take_inbox().await?.stop.is_some() {
                return Ok(Some(TurnOutcome::Interrupted));
            }
            let control = self.journal.control().await?;
            if !control.pending.iter().any(|p| p.approval_id == approval_id) {
                return self.resume().await.map(Some);
            }
            tokio::select! {
                () = self.inbox.stirred(looked) => {}
                () = cancel.cancelled() => return Ok(None),
            }
        }
    }

    /// Decide a pending approval and go on with the turn: [`Conversation::decide`]
    /// then [`Conversation::resume`]. The usual call for a product whose
    /// own UI asked the person.
    pub async fn decide_and_resume(
        &mut self,
        approval_id: &str,
        answer: Answer,
        surface: &Surface,
    ) -> Result<TurnOutcome, AgentError> {
        self.decide(approval_id, answer, surface).await?;
        self.resume().await
    }

    /// Record that a person undid `operation_id` (the product or the
    /// terminal has reverted its effect), and tell the model in `told` —
    /// it reads that at its next step. Between turns only: a running turn
    /// is steered instead.
    pub async fn record_undone(
        &mut self,
        operation_id: &str,
        surface: &Surface,
        told: &str,
    ) -> Result<(), AgentError> {
        self.journal
            .append(vec![
                Event::OperationUndone {
                    operation_id: operation_id.to_owned(),
                    by: surface.name().to_owned(),
                },
                Event::SteerSaid {
                    text: told.to_owned(),
                },
            ])
            .await?;
        Ok(())
    }

    /// Whether a turn is open (running, paused at an approval, or cut
    /// short by a crash).
    pub async fn has_open_turn(&mut self) -> Result<bool, AgentError> {
        Ok(!dangling(&self.journal.log().await?).turns.is_empty())
    }

    /// [`Conversation::stop`] for a stop that came through the inbox
    /// ([`Heard::stop`]), recorded as asked by the surface named `by`.
    pub async fn stop_by(&mut self, by: &str) -> Result<TurnOutcome, AgentError> {
        let control = self.journal.control().await?;
        let events = self.journal.log().await?;
        let mut stopping = vec![Event::Stopped { by: by.to_owned() }];
        for pending in &control.pending {
            stopping.push(Event::ApprovalDecided {
                approval_id: pending.approval_id.clone(),
                decision: Decision::Stopped,
                by: by.to_owned(),
                lease: None,
            });
            let arguments =
                rein_sessions::recovery::approval_arguments(&events, &pending.approval_id);
            stopping.extend(refused(
                pending.call_id.clone(),
                pending.tool.clone(),
                arguments,
                Some(pending.permission),
                &codes::NOT_APPROVED,
                &self
                    .agent
                    .profile
                    .wording
                    .not_approved(&pending.tool, Decision::Stopped.as_str()),
            ));
        }
        // Calls of the same message that never ran get a result too, so the
        // history stays well formed.
        if let Some((calls, _)) = last_calls(&events) {
            for ToolCall {
                id: call_id,
                tool,
                arguments,
            } in calls
            {
                if control.pending.iter().any(|p| p.call_id == call_id) {
                    continue;
                }
                stopping.extend(refused(
                    call_id,
                    tool,
                    arguments,
                    None,
                    &codes::CALL_STOPPED,
                    "The turn was stopped before this call ran.",
                ));
            }
        }
        self.journal.append(stopping).await?;
        self.finish(TurnOutcome::Interrupted).await
    }

    /// What a resume would be refused for now (`authority_changed`, with
    /// what changed), so a surface can ask the person first; `None` when
    /// the open run (if any) may go on. With `check`: a resume under that
    /// check in place of the definition's ([`Self::resume_with`]).
    pub async fn authority_change(
        &mut self,
        check: Option<&Verification>,
    ) -> Result<Option<AgentError>, AgentError> {
        let events = self.journal.log().await?;
        Ok(self.check_authority(&events, check).err())
    }

    /// The check the open run started under (its program and arguments,
    /// and the exit that passes), as recorded; `None` without one.
    pub async fn open_run_check(&mut self) -> Result<Option<(Vec<String>, i32)>, AgentError> {
        Ok(authority::recorded_check(&self.journal.log().await?))
    }

    /// A person accepts that the open run goes on under the authority it
    /// would have now (recorded as `authority.accepted`, naming them).
    pub async fn accept_authority(
        &mut self,
        surface: &rein_approvals::Surface,
    ) -> Result<(), AgentError> {
        let events = self.journal.log().await?;
        let open = dangling(&events);
        let Some(run) = open.runs.last() else {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "there is no open run to accept a change for",
            ));
        };
        let from = events
            .iter()
            .rev()
            .find_map(|e| match &e.event {
                Event::RunStarted {
                    run_id, profile, ..
                } if run_id == run => profile.get("authority").cloned(),
                _ => None,
            })
            .unwrap_or(Value::Null);
        self.journal
            .append(vec![Event::AuthorityAccepted {
                by: surface.name().to_owned(),
                from,
                to: authority::of(&self.agent, self.gate.tools.as_ref(), None),
            }])
            .await?;
        Ok(())
    }

    /// [`Conversation::turn`] under `contract` (`contract.rs`), with the
    /// turn's ids.
    pub async fn turn_with(
        &mut self,
        text: &str,
        contract: TurnContract,
    ) -> Result<TurnResult, AgentError> {
        // A paused turn's contract ends with it (a new turn leaves it).
        self.contract_ended();
        let replaced = self.apply(contract);
        let outcome = self.turn(text).await;
        self.hold_or_put_back(replaced, outcome.as_ref());
        self.with_ids(outcome?).await
    }

    /// [`Conversation::resume`] under `contract` (the one the turn
    /// started with), with the turn's ids.
    pub async fn resume_with(&mut self, contract: TurnContract) -> Result<TurnResult, AgentError> {
        // A contract in force (the turn paused in this process) gives way
        // to this one; the definition held aside stays so.
        let replaced = match self.contract.take() {
            Some(definition) => {
                self.apply(contract);
                definition
            }
            None => self.apply(contract),
        };
        let outcome = self.resume().await;
        self.hold_or_put_back(replaced, outcome.as_ref());
        self.with_ids(outcome?).await
    }

    fn apply(&mut self, contract: TurnContract) -> Replaced {
        let store = self.journal.store().clone();
        contract.apply(&mut self.agent, &mut self.gate, &mut self.window, &store)
    }

    /// A turn that paused keeps its contract in force (the definition held
    /// aside until it ends); any other end puts the definition back now.
    fn hold_or_put_back(&mut self, replaced: Replaced, outcome: Result<&TurnOutcome, &AgentError>) {
        if let Ok(TurnOutcome::AwaitingApproval(_)) = outcome {
            self.contract = Some(replaced);
        } else {
            replaced.put_back(&mut self.agent, &mut self.gate, &mut self.window);
        }
    }

    /// The turn ended: the definition a contract replaced comes back.
    pub(super) fn contract_ended(&mut self) {
        if let Some(replaced) = self.contract.take() {
            replaced.put_back(&mut self.agent, &mut self.gate, &mut self.window);
        }
    }

    /// `outcome` with the ids of the run it came from (the last started).
    async fn with_ids(&mut self, outcome: TurnOutcome) -> Result<TurnResult, AgentError> {
        let (turn_id, run_id) = contract::last_run(&self.journal.log().await?);
        Ok(TurnResult {
            outcome,
            turn_id,
            run_id,
        })
    }
}
