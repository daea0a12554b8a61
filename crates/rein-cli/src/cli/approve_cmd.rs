//! `rein approve`: list what waits for a person in a session (each with
//! what it does, never blind) or decide one, and the words that tell the
//! person where the decision went (shared with `say` and `stop`).
//!
//! Not here: the decision itself (`rein::approvals::decide`).

use std::path::PathBuf;

use rein::wire::AgentError;
use rein::wire::error::codes;

/// `rein approve SESSION [APPROVAL yes|no [--always]]`: decide one, or
/// list what waits (each with what it does, never blind). A hosted run
/// whose driver died is closed first: its question died with it.
pub async fn approve(
    home: Option<PathBuf>,
    session: &str,
    approval: Option<String>,
    decision: Option<String>,
    always: bool,
) -> Result<(), AgentError> {
    let dir = rein::sessions::home::resolve(home.clone())?;
    let store = crate::cli::stores::open(home).await?;
    crate::cli::agents_list::close_dead(&dir, store.as_ref()).await?;
    let (approval, decision) = match (approval, decision) {
        (Some(approval), Some(decision)) => (approval, decision),
        (None, None) => {
            let waiting = rein::approvals::waiting(store.as_ref(), session).await?;
            if waiting.is_empty() {
                return crate::say_out(&format!("nothing waits for a decision in {session}"));
            }
            let mut lines = Vec::with_capacity(waiting.len());
            for w in waiting {
                lines.push(format!(
                    "{:<16} {:<16} {} ({})",
                    w.agent_path, w.tool, w.approval_id, w.permission
                ));
                // Never asked blind: what the call does, or its
                // arguments.
                lines.push(
                    crate::cli::preview::asked_lines(&w.tool, &w.arguments, w.preview.as_ref())
                        .trim_end()
                        .to_owned(),
                );
            }
            lines.push(format!(
                "decide one with: rein approve {session} APPROVAL yes|no"
            ));
            return crate::say_out(&lines.join("\n"));
        }
        _ => {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "say yes or no after the approval",
            ));
        }
    };
    let answer = rein::approvals::Answer::decided(&decision, always)?;
    let delivery = rein::approvals::decide(
        store.as_ref(),
        session,
        &approval,
        answer,
        &rein::approvals::Surface::command("approve"),
    )
    .await?;
    let metadata = store
        .session(session)
        .await
        .map(|info| info.metadata)
        .unwrap_or_default();
    // A hosted run waits on its question and takes the answer at once.
    if metadata.get("hosted").is_some() && delivery == rein::approvals::Delivery::Queued {
        return crate::say_out("decided; the hosted run it asks for takes it now");
    }
    // A served MCP call is its client's: with no server holding the
    // session, the client is gone and the call is stopped, never resumed.
    if metadata["surface"] == "mcp" {
        return crate::say_out(match delivery {
            rein::approvals::Delivery::Queued => {
                "decided; the rein mcp serve holding the session takes it now"
            }
            rein::approvals::Delivery::Recorded => {
                "decided; no rein mcp serve holds the session, so its client is gone: the call is stopped when the session is served again, never run"
            }
        });
    }
    crate::say_out(&delivered(delivery, session, "decided"))
}

/// What the person is told after `rein approve`, `say` or `stop`.
pub fn delivered(delivery: rein::approvals::Delivery, session: &str, what: &str) -> String {
    match delivery {
        rein::approvals::Delivery::Recorded => {
            format!("{what}; continue with: rein chat --resume {session}")
        }
        rein::approvals::Delivery::Queued => format!(
            "{what}; a chat driving session {session} takes it at its next step (or when it resumes: rein chat --resume {session})"
        ),
    }
}
