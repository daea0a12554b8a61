//! `/undo` in the chat: the session's last undoable change, found in its
//! log, undone by the file tools, and the model told.
//!
//! Not here: how a change is kept and put back (`rein::files::undo`).

use rein::approvals::Surface;
use rein::files::Root;
use rein::runner::Conversation;
use rein::sessions::Store;
use rein::wire::{AgentError, error::codes};

/// Undo the session's last undoable change: the path it restored.
pub async fn undo_last(
    conversation: &mut Conversation,
    store: &dyn Store,
    root: &Root,
) -> Result<String, AgentError> {
    let events = conversation.log_events().await?;
    let Some(op) = rein::sessions::recovery::last_undoable(&events).map(str::to_owned) else {
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            "nothing to undo in this session",
        ));
    };
    let path = rein::files::undo(root, store, &op).await?;
    conversation
        .record_undone(
            &op,
            &Surface::terminal(),
            &format!("(The person undid your last change to `{path}`: it is back as it was before that call. Do not make it again unless they ask.)"),
        )
        .await?;
    Ok(path)
}
