//! A turn with its own contract: a check that must pass (a command and the
//! exit it must give, in the product's sandbox when the check carries
//! one), budgets, and tools for this turn only — extra tools, an MCP
//! server's, skills: any backend joined beside the definition's. The turn
//! finishes only when the check passes; the definition comes back when the
//! call returns, so a later turn runs as before.
//!
//! The contract is part of the run's authority (its check, its tools,
//! recorded in `run.started`): a turn that paused at an approval is
//! resumed with the same contract (`resume_with`); resumed without it,
//! it is refused (`authority_changed`, naming the check or the tools)
//! until a person accepts going on without it. The log is evidence of
//! the contract, never a reason to run its command.
//!
//! Not here: the check itself (`verify.rs`), the authority rule
//! (`authority.rs`).

use std::sync::Arc;

use rein_sessions::{Event, StoredEvent};
use rein_tools::ToolBackend;
use rein_wire::AgentError;

use super::{Conversation, TurnOutcome, builtins::WithBuiltins};
use crate::settings::{Budgets, Verification};

/// What one turn runs under besides the agent's definition.
#[derive(Default, Clone)]
pub struct TurnContract {
    /// The check the turn's final answer must pass (in place of the
    /// definition's); its `expected` exit passes.
    pub check: Option<Verification>,
    /// This turn's budgets (in place of the definition's).
    pub budgets: Option<Budgets>,
    /// Tools offered for this turn only, beside the definition's (a
    /// product's backend, an MCP server's, skills).
    pub tools: Option<Arc<dyn ToolBackend>>,
}

impl TurnContract {
    /// A contract whose check is `check`.
    pub fn checked(check: Verification) -> Self {
        TurnContract {
            check: Some(check),
            ..TurnContract::default()
        }
    }
}

/// A turn's result with where it is in the log: its turn id (to branch
/// from) and run id.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    /// How it ended (or paused).
    pub outcome: TurnOutcome,
    /// The turn's id.
    pub turn_id: String,
    /// The run's id.
    pub run_id: String,
}

/// The definition's part a contract replaced, put back when the turn ends.
pub(super) struct Replaced {
    check: Option<Verification>,
    budgets: Budgets,
    tools: Option<Arc<WithBuiltins>>,
}

impl Conversation {
    /// [`Conversation::turn`] under `contract`, with the turn's ids.
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
        // A contract already in force (the turn paused in this process)
        // gives way to this one; the definition held aside stays so.
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

    /// A turn that paused keeps its contract in force (its definition held
    /// aside until it ends: `Conversation::finish` puts it back); any other
    /// end puts the definition back now.
    fn hold_or_put_back(&mut self, replaced: Replaced, outcome: Result<&TurnOutcome, &AgentError>) {
        if let Ok(TurnOutcome::AwaitingApproval(_)) = outcome {
            self.contract = Some(replaced);
        } else {
            self.put_back(replaced);
        }
    }

    /// The turn ended: the definition a contract replaced comes back.
    pub(super) fn contract_ended(&mut self) {
        if let Some(replaced) = self.contract.take() {
            self.put_back(replaced);
        }
    }

    fn apply(&mut self, contract: TurnContract) -> Replaced {
        let mut replaced = Replaced {
            check: self.agent.verification.clone(),
            budgets: self.agent.budgets,
            tools: None,
        };
        if let Some(check) = contract.check {
            self.agent.verification = Some(check);
        }
        if let Some(budgets) = contract.budgets {
            self.agent.budgets = budgets;
        }
        if let Some(extra) = contract.tools {
            let joined = rein_tools::Joined::new(vec![self.agent.tools.clone(), extra]);
            let with = Arc::new(WithBuiltins {
                product: Arc::new(joined),
                store: self.journal.store().clone(),
            });
            replaced.tools = Some(std::mem::replace(&mut self.gate.tools, with));
            self.window.transcript.refreeze();
        }
        replaced
    }

    fn put_back(&mut self, replaced: Replaced) {
        self.agent.verification = replaced.check;
        self.agent.budgets = replaced.budgets;
        if let Some(tools) = replaced.tools {
            self.gate.tools = tools;
            self.window.transcript.refreeze();
        }
    }

    /// `outcome` with the ids of the run it came from (the last started).
    async fn with_ids(&mut self, outcome: TurnOutcome) -> Result<TurnResult, AgentError> {
        let (turn_id, run_id) = last_run(&self.journal.log().await?);
        Ok(TurnResult {
            outcome,
            turn_id,
            run_id,
        })
    }
}

/// The turn and run ids of the last run started in `events`.
pub(super) fn last_run(events: &[StoredEvent]) -> (String, String) {
    events
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            Event::RunStarted {
                run_id, turn_id, ..
            } => Some((turn_id.clone(), run_id.clone())),
            _ => None,
        })
        .unwrap_or_default()
}
