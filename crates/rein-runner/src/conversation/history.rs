//! Changing where the conversation goes between turns: continuing from
//! an earlier turn (a branch), and recording that a person undid a change.
//!
//! Not here: the undo itself (the product's or the file tools'), or a
//! running turn's steering.

use rein_approvals::Surface;
use rein_sessions::Event;
use rein_sessions::recovery::dangling;
use rein_wire::{AgentError, error::codes};

use super::Conversation;

impl Conversation {
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
}
