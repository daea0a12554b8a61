//! `/branch`: list the session's turns, or make the next message continue
//! from an earlier one (its id, or enough of the start of it to name one).
//!
//! Not here: what a branch is in the log (`branch.created`, written by
//! `Conversation::branch_from`; the turn tree is the store's).

use std::io::Write;

use rein::runner::Conversation;
use rein::sessions::Store;
use rein::wire::{AgentError, error::codes};

use super::output::say;

/// Run `/branch` with `turn` (or list the turns without one).
pub async fn branch(
    conversation: &mut Conversation,
    store: &dyn Store,
    turn: Option<&str>,
    info: &mut impl Write,
) -> Result<(), AgentError> {
    let session = conversation.session_id().to_owned();
    let Some(wanted) = turn else {
        let mut tree = Vec::new();
        super::sessions_cmd::tree(store, &session, &mut tree).await?;
        say(info, String::from_utf8_lossy(&tree).trim_end())?;
        return say(
            info,
            "  /branch TURN continues from one of these (the start of its id will do)",
        );
    };
    let turns = store.turns(&session).await?;
    let matching: Vec<_> = turns.iter().filter(|t| t.id.starts_with(wanted)).collect();
    let chosen = match matching.as_slice() {
        [one] => *one,
        [] => {
            return Err(AgentError::new(
                codes::TURN_NOT_FOUND,
                format!("no turn of this session starts with `{wanted}` (/branch lists them)"),
            ));
        }
        many => {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                format!(
                    "{} turns start with `{wanted}`: give more of the id",
                    many.len()
                ),
            ));
        }
    };
    conversation.branch_from(&chosen.id).await?;
    let prompt: String = chosen.prompt.chars().take(60).collect();
    say(
        info,
        &format!(
            "  the next message continues from the turn \"{prompt}\" (the turns after it stay on their own branch)"
        ),
    )
}
