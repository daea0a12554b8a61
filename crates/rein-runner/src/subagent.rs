//! Sub-agents: rein's [`Spawn`] — a `delegate` call runs a child
//! conversation in a session of its own, and its answer (or a typed
//! failure) is the call's result.
//!
//! A sub-agent's session is made when its call is recorded and named in
//! the parent's `agent.started`, so a person finds it from the parent and a
//! resumed parent reattaches it. It runs with the parent's provider and
//! profile plus the delegation's instructions, the tools the call named
//! (never more than the parent's), its share of the parent's budget (what
//! it spends is drawn from the parent's turn), the parent's policy, and one
//! level less of delegation. Its events carry its agent path
//! (`main/agent-2`), and so do the UI events it sends to the parent's
//! watchers.
//!
//! A write it makes is asked of the same person as the parent's: the
//! child pauses — only that child — and [`UiKind::AgentAwaiting`] tells the
//! parent's surface where to decide it; it waits on its own session's
//! inbox, so a terminal, `rein approve` or a server decide it alike, and
//! nothing here decides. The parent's stop or interrupt cancels it: a
//! running child stops at its next step, a waiting one is stopped (its
//! pending approval decided `stopped`).
//!
//! Not here: when sub-agents start and what the parent records
//! (`conversation::reads`), the settings (`crate::delegation`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rein_tools::Outcome;
use rein_wire::{AgentError, Ending, error::codes};
use serde_json::{Value, json};

use crate::agent::{Child, Delegation, Spawn, Spawned};
use crate::conversation::Conversation;
use crate::outcome::TurnOutcome;
use crate::settings::Spent;
use rein_wire::UiKind;

/// What the surface that stopped a sub-agent is recorded as.
const PARENT_STOP: &str = "parent";

/// rein's own spawner: a child [`Conversation`] in a session of its own.
struct SubAgents;

impl Spawn for SubAgents {
    fn spawn(&self, child: Child) -> Pin<Box<dyn Future<Output = Spawned> + Send>> {
        Box::pin(run(child))
    }
}

impl Default for Delegation {
    fn default() -> Self {
        Delegation {
            max_per_turn: 4,
            max_steps: 20,
            max_depth: 2,
            writes: true,
            helpers: std::collections::BTreeMap::new(),
            depth: 0,
            spawner: Arc::new(SubAgents),
            instructions: "You are a sub-agent working on one task for another agent. Do the task with the tools you have; a change you make is asked of the person first. Answer with what you found or did, briefly and concretely.".into(),
        }
    }
}

impl Delegation {
    /// Sub-agents that can only read: their writes are refused.
    pub fn read_only() -> Self {
        Delegation {
            writes: false,
            instructions: "You are a sub-agent working on one task for another agent. You can read but not change anything. Answer with what you found, briefly and concretely.".into(),
            ..Delegation::default()
        }
    }
}

/// Run one sub-agent to its end; what it spent comes back with its result.
async fn run(child: Child) -> Spawned {
    let mut spent = Spent::default();
    let outcome = match drive(&child, &mut spent).await {
        Ok(outcome) => typed(&child, outcome, spent),
        Err(err) => Outcome::from_error(&err),
    };
    Spawned { outcome, spent }
}

async fn drive(child: &Child, spent: &mut Spent) -> Result<TurnOutcome, AgentError> {
    let mut conversation = child
        .agent
        .open_session(child.store.clone(), Some(&child.session), Value::Null)
        .await?;
    conversation.set_agent_path(&child.agent_path);
    if let Some(task) = &child.graph_task {
        conversation.serve_task(task);
    }
    if let Some(ui) = &child.ui {
        conversation.share_ui(ui.clone());
    }
    // The parent's stop or interrupt: the child stops at its next step.
    let steering = conversation.steering();
    let cancel = child.cancel.clone();
    let watcher = tokio::spawn(async move {
        cancel.cancelled().await;
        steering.interrupt();
    });
    let result = async {
        let mut outcome = if child.reattach {
            // After a restart: go on with its turn, or take how it ended
            // if it ended before the parent heard.
            match ended(&mut conversation).await? {
                Some(outcome) => outcome,
                None => conversation.resume().await?,
            }
        } else {
            conversation.turn(&child.task).await?
        };
        spent.add(conversation.spent());
        while let TurnOutcome::AwaitingApproval(request) = outcome {
            conversation.announce(UiKind::AgentAwaiting {
                session: child.session.clone(),
                request: request.clone(),
            });
            outcome = match conversation
                .wait_for_decision(&request.approval_id, &child.cancel)
                .await?
            {
                Some(outcome) => outcome,
                // Stopped while it waited: its approval is decided `stopped`.
                None => conversation.stop_by(PARENT_STOP).await?,
            };
            spent.add(conversation.spent());
        }
        Ok(outcome)
    }
    .await;
    watcher.abort();
    let closed = conversation.close().await;
    let outcome = result?;
    if let Err(err) = closed {
        tracing::warn!(code = %err.code, "a sub-agent's lease was not released");
    }
    Ok(outcome)
}

/// How the sub-agent's turn ended, if it did (read from its log).
async fn ended(conversation: &mut Conversation) -> Result<Option<TurnOutcome>, AgentError> {
    if conversation.has_open_turn().await? {
        return Ok(None);
    }
    let log = conversation.log_events().await?;
    let last = log.iter().rev().find_map(|e| match &e.event {
        rein_sessions::Event::TurnFinished { outcome, reply, .. } => Some((*outcome, reply)),
        _ => None,
    });
    Ok(Some(match last {
        Some((Ending::Finished, Some(reply))) => TurnOutcome::Finished {
            reply: reply.clone(),
        },
        Some((Ending::Interrupted, _)) => TurnOutcome::Interrupted,
        Some((Ending::Budget, _)) => TurnOutcome::Budget {
            which: "recorded".into(),
        },
        Some((outcome, _)) => TurnOutcome::Error {
            error: AgentError::new(
                codes::AGENT_UNFINISHED,
                format!("its turn ended `{outcome}` before a restart"),
            ),
        },
        None => TurnOutcome::Error {
            error: AgentError::new(codes::AGENT_UNFINISHED, "it never began its turn"),
        },
    }))
}

/// The `delegate` call's result for how the sub-agent's turn ended: its
/// answer, or a failure whose code says why (stopped, over its budget,
/// unfinished) and whose detail names the agent, its session and what it
/// spent — the parent's model reads both.
fn typed(child: &Child, outcome: TurnOutcome, spent: Spent) -> Outcome {
    let mut about = json!({
        "agent": child.agent_path,
        "session": child.session,
        "spent": {"steps": spent.steps, "tokens": spent.tokens, "cost_micro_usd": spent.cost},
    });
    let (code, message) = match outcome {
        TurnOutcome::Finished { reply } => {
            about["answer"] = Value::String(reply);
            return Outcome::ok(about);
        }
        TurnOutcome::Interrupted => (
            codes::AGENT_STOPPED,
            "the sub-agent was stopped before it finished".to_owned(),
        ),
        TurnOutcome::Budget { which } => {
            let message = format!("the sub-agent used up its share of the {which} budget");
            about["budget"] = Value::String(which);
            (codes::AGENT_OVER_BUDGET, message)
        }
        TurnOutcome::Error { error } => {
            about["error"] = json!({"code": error.code, "message": error.message});
            (
                codes::AGENT_UNFINISHED,
                format!("the sub-agent failed: {}", error.message),
            )
        }
        other => (
            codes::AGENT_UNFINISHED,
            format!("the sub-agent ended without an answer ({})", other.name()),
        ),
    };
    Outcome::Failed {
        code,
        message,
        detail: Some(about),
        retryable: false,
    }
}
