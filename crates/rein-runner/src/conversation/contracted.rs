//! Turns with terms: a structured answer (`ask`, its schema, one repair),
//! and a turn or a resume under a [`TurnContract`] — its own check,
//! budgets or tools for that turn only, the definition put back after.
//!
//! Not here: what a contract holds (`contract.rs`), or the step loop.

use rein_wire::{AgentError, error::codes};
use serde_json::Value;

use super::Conversation;
use super::answers::parse_answer;
use super::contract::{self, Replaced, TurnContract, TurnResult};
use crate::outcome::TurnOutcome;

impl Conversation {
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
        self.window
            .ask_answer(native.then(|| rein_wire::OutputSchema {
                name: "answer".into(),
                schema: schema.clone(),
            }));
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
        self.window.ask_answer(None);
        result
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
