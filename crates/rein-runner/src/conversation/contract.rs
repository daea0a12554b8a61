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
//! Not here: the turn calls (`Conversation::turn_with`, `resume_with` in
//! `surface.rs`), the check itself (`verify.rs`), the authority rule
//! (`authority.rs`).

use std::sync::Arc;

use rein_sessions::{Event, Store, StoredEvent};
use rein_tools::ToolBackend;

use super::TurnOutcome;
use super::builtins::WithBuiltins;
use super::gate::Gate;
use super::window::Window;
use crate::agent::Agent;
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

impl TurnContract {
    /// Put this contract in force over `agent`'s definition (its check and
    /// budgets) and `gate`'s tools (the window's prefix frozen anew when
    /// they change); what it replaced, to put back.
    pub(super) fn apply(
        self,
        agent: &mut Agent,
        gate: &mut Gate,
        window: &mut Window,
        store: &Arc<dyn Store>,
    ) -> Replaced {
        let mut replaced = Replaced {
            check: agent.verification.clone(),
            budgets: agent.budgets,
            tools: None,
        };
        if let Some(check) = self.check {
            agent.verification = Some(check);
        }
        if let Some(budgets) = self.budgets {
            agent.budgets = budgets;
        }
        if let Some(extra) = self.tools {
            let joined = rein_tools::Joined::new(vec![agent.tools.clone(), extra]);
            let with = Arc::new(WithBuiltins {
                product: Arc::new(joined),
                store: store.clone(),
            });
            replaced.tools = Some(gate.swap_tools(with));
            window.refreeze();
        }
        replaced
    }
}

impl Replaced {
    /// The definition back in force.
    pub(super) fn put_back(self, agent: &mut Agent, gate: &mut Gate, window: &mut Window) {
        agent.verification = self.check;
        agent.budgets = self.budgets;
        if let Some(tools) = self.tools {
            gate.swap_tools(tools);
            window.refreeze();
        }
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
