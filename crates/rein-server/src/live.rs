//! Turns this server runs: at most one per conversation here (a second
//! server gets `session_locked` from the store's lease while one runs),
//! each on a task of its own, with its steering handle and a cancel for a
//! person's interrupt; and a UI channel per watched conversation that the
//! running turn's live events (answer text as it streams) go to.
//!
//! A turn paused at an approval waits for a person's decision on any
//! surface (this API, the terminal, `rein approve`) through the session's
//! inbox; nothing here decides. What a finished turn's conversation had
//! read of its log is kept (bounded) for the next turn's open, so a turn
//! posted to a long conversation does not read its whole log first.
//!
//! Not here: routes (`routes`), the event stream (`events`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use rein_runner::{Conversation, KeptLog, Steering, TurnContract, TurnOutcome, UiEvent};
use rein_wire::{AgentError, error::codes};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::Inner;

/// UI events a watcher may fall behind by.
const UI_BUFFER: usize = 1024;
/// Events of kept logs, at most, over all conversations.
const KEPT_EVENTS: usize = 200_000;
/// Conversations whose logs are kept, at most.
const KEPT_LOGS: usize = 1_024;

/// A running turn's handles: its cancel from the moment its place is
/// claimed, its steering once its conversation is open.
#[derive(Clone)]
struct Running {
    steering: Option<Steering>,
    cancel: CancellationToken,
}

/// A conversation's place among the running, claimed before its
/// conversation is opened (so a second request at once is `turn_running`,
/// not the store lease's `session_locked`); given back when dropped unless
/// the turn started.
struct Claim<'a> {
    live: &'a Live,
    session: String,
    cancel: CancellationToken,
    started: bool,
}

impl Claim<'_> {
    /// The turn starts: its steering is known, and its place is kept until
    /// it ends ([`Live::finished`]).
    fn started(mut self, steering: Steering) -> CancellationToken {
        if let Some(running) = self
            .live
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(&self.session)
        {
            running.steering = Some(steering);
        }
        self.started = true;
        self.cancel.clone()
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.started {
            self.live.finished(&self.session);
        }
    }
}

#[derive(Default)]
pub(crate) struct Live {
    running: Mutex<HashMap<String, Running>>,
    ui: Mutex<HashMap<String, broadcast::Sender<UiEvent>>>,
    kept: Mutex<Kept>,
}

/// Logs kept for the next open, the least recently kept first.
#[derive(Default)]
struct Kept {
    logs: VecDeque<KeptLog>,
    events: usize,
}

impl Live {
    /// The log kept of `session`, taken (a conversation opened with it
    /// keeps its own from then on).
    pub(crate) fn take_kept(&self, session: &str) -> Option<KeptLog> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let at = kept.logs.iter().position(|k| k.session() == session)?;
        let log = kept.logs.remove(at)?;
        kept.events -= log.len();
        Some(log)
    }

    /// Keep `log` for the next open of its session, letting the least
    /// recently kept go past [`KEPT_EVENTS`] or [`KEPT_LOGS`].
    pub(crate) fn keep(&self, log: KeptLog) {
        if log.len() > KEPT_EVENTS {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.events += log.len();
        kept.logs.push_back(log);
        while kept.events > KEPT_EVENTS || kept.logs.len() > KEPT_LOGS {
            let Some(old) = kept.logs.pop_front() else {
                break;
            };
            kept.events -= old.len();
        }
    }

    /// The live UI channel of `session` (made on first use).
    pub(crate) fn ui(&self, session: &str) -> broadcast::Sender<UiEvent> {
        self.ui
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(session.to_owned())
            .or_insert_with(|| broadcast::channel(UI_BUFFER).0)
            .clone()
    }

    /// Whether a turn of `session` runs here.
    pub(crate) fn is_running(&self, session: &str) -> bool {
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(session)
    }

    /// Claim `session`'s place, or `turn_running` when a turn has it.
    fn claim(&self, session: &str) -> Result<Claim<'_>, AgentError> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if running.contains_key(session) {
            return Err(AgentError::new(
                codes::TURN_RUNNING,
                "a turn of this conversation is already running",
            ));
        }
        let cancel = CancellationToken::new();
        running.insert(
            session.to_owned(),
            Running {
                steering: None,
                cancel: cancel.clone(),
            },
        );
        Ok(Claim {
            live: self,
            session: session.to_owned(),
            cancel,
            started: false,
        })
    }

    /// Interrupt the turn running here: at its next step, or at once if
    /// it waits for a person (its pending approvals are then `stopped`).
    /// One still starting is cancelled before its first step.
    pub(crate) fn interrupt(&self, session: &str) -> Result<(), AgentError> {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let Some(turn) = running.get(session) else {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "no turn of this conversation is running here",
            ));
        };
        if let Some(steering) = &turn.steering {
            steering.interrupt();
        }
        turn.cancel.cancel();
        Ok(())
    }

    fn finished(&self, session: &str) {
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(session);
    }
}

/// Start a turn of `session` with `text`, or (`None`) go on with its open
/// turn — after a restart, or a decision made while nobody drove it.
/// Refused while a turn runs here (`turn_running`) or in another process
/// (`session_locked`, from the lease); a new turn is refused while one is
/// open, and going on without one is `invalid_input`. Going on keeps the
/// check the turn was started with; what the run's authority refuses is
/// answered now, not found in the background.
pub(crate) async fn start_turn(
    inner: &Arc<Inner>,
    budgets: Option<rein_runner::Budgets>,
    session: &str,
    asked: Asked,
    person: String,
) -> Result<(), AgentError> {
    let Asked { text, check } = asked;
    let claim = inner.live.claim(session)?;
    let mut conversation = inner.open(session).await?;
    if let Some(budgets) = budgets {
        conversation.agent.budgets = budgets;
    }
    let contract = match prepared(&mut conversation, text.is_some(), check).await {
        Ok(contract) => contract,
        Err(err) => {
            conversation.close().await?;
            return Err(err);
        }
    };
    let cancel = claim.started(conversation.steering());
    let ui = inner.live.ui(session);
    let done = CancellationToken::new();
    let forward = tokio::spawn(rein_runner::hand_on(
        conversation.subscribe(),
        done.clone(),
        move |event| {
            let _ = ui.send(event);
        },
    ));
    let inner = inner.clone();
    let session = session.to_owned();
    tokio::spawn(async move {
        let ended = drive(
            &mut conversation,
            text.as_deref(),
            contract,
            &cancel,
            &person,
        )
        .await;
        if let Err(err) = ended {
            tracing::warn!(code = %err.code, session = %session, "a turn served over HTTP failed");
        }
        match conversation.close_keeping().await {
            Ok(log) => inner.live.keep(log),
            Err(err) => {
                tracing::warn!(code = %err.code, "a served conversation's lease was not released");
            }
        }
        // Every event the turn sent is in the channel by now: the
        // forwarder hands on what it has not yet, then ends.
        done.cancel();
        let _ = forward.await;
        inner.live.finished(&session);
    });
    Ok(())
}

/// The contract a new turn (`says`) or the open one runs under, or why it
/// may not start: a new turn while one is open, going on with none, a
/// check the person's policy refuses, a run whose authority changed.
async fn prepared(
    conversation: &mut Conversation,
    says: bool,
    check: Option<TurnCheck>,
) -> Result<TurnContract, AgentError> {
    let open = conversation.has_open_turn().await?;
    if says && open {
        return Err(AgentError::new(
            codes::TURN_RUNNING,
            "a turn of this conversation is open (it may wait for a person): decide it, stop it, or resume it",
        ));
    }
    if !says && !open {
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            "there is no unfinished turn to resume",
        ));
    }
    let check = match check {
        None if !says => kept_check(conversation).await?,
        check => check,
    };
    let contract = check
        .map(|c| c.contract(conversation))
        .transpose()?
        .unwrap_or_default();
    if !says
        && let Some(refused) = conversation
            .authority_change(contract.check.as_ref())
            .await?
    {
        return Err(refused);
    }
    Ok(contract)
}

/// The check the open turn was started with when it is not the agent's
/// own (a client's, posted with the turn): going on keeps it — checked
/// again against the person's policy and sandbox as they are now.
async fn kept_check(conversation: &mut Conversation) -> Result<Option<TurnCheck>, AgentError> {
    let Some((command, expected)) = conversation.open_run_check().await? else {
        return Ok(None);
    };
    let own = conversation.agent.verification.as_ref();
    if own.is_some_and(|v| v.command == command && v.expected == expected) {
        return Ok(None);
    }
    Ok(Some(TurnCheck {
        command,
        expected_exit: expected,
    }))
}

/// Stop the open turn of `session` that no one here drives (after a
/// restart, say): it ends at once, its pending approvals `stopped`. `false`
/// when a turn runs here (the stop posted reaches it) or none is open.
pub(crate) async fn stop_undriven(
    inner: &Arc<Inner>,
    session: &str,
    by: &str,
) -> Result<bool, AgentError> {
    let Ok(_claim) = inner.live.claim(session) else {
        return Ok(false);
    };
    // Driven in another process: the stop posted reaches it there.
    let mut conversation = match inner.open(session).await {
        Ok(conversation) => conversation,
        Err(err) if err.code == codes::SESSION_LOCKED => return Ok(false),
        Err(err) => return Err(err),
    };
    let stopped = match conversation.has_open_turn().await {
        Ok(true) => conversation.stop_by(by).await.map(|_| true),
        Ok(false) => Ok(false),
        Err(err) => Err(err),
    };
    conversation.close().await?;
    stopped
}

async fn drive(
    conversation: &mut Conversation,
    text: Option<&str>,
    contract: TurnContract,
    cancel: &CancellationToken,
    person: &str,
) -> Result<TurnOutcome, AgentError> {
    let mut outcome = match text {
        Some(text) => conversation.turn_with(text, contract).await?.outcome,
        None => conversation.resume_with(contract).await?.outcome,
    };
    while let TurnOutcome::AwaitingApproval(request) = outcome {
        outcome = match conversation
            .wait_for_decision(&request.approval_id, cancel)
            .await?
        {
            Some(outcome) => outcome,
            None => conversation.stop_by(&format!("http:{person}")).await?,
        };
    }
    Ok(outcome)
}

/// What a turn is started with: what the person says (`None`: go on with
/// the open turn) and the check this turn alone must pass.
#[derive(Default)]
pub(crate) struct Asked {
    pub(crate) text: Option<String>,
    pub(crate) check: Option<TurnCheck>,
}

/// A turn's own check, as a client asks for it.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TurnCheck {
    /// The program and its arguments (no shell; at most 64, 8 KiB in all).
    command: Vec<String>,
    /// The exit code that passes (default 0).
    #[serde(default)]
    expected_exit: i32,
}

impl TurnCheck {
    /// The contract: this command in place of the agent's own check, run
    /// where that one runs (its sandbox, folder and environment) — only
    /// where that sandbox confines and the person's command policy lets it
    /// run unasked (`Verification::for_command`): a client's command never
    /// runs on the host, nor past the person's policy.
    fn contract(self, conversation: &Conversation) -> Result<TurnContract, AgentError> {
        let bytes: usize = self.command.iter().map(String::len).sum();
        if self.command.is_empty() || self.command.len() > 64 || bytes > 8 * 1024 {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "verify.command: a program and its arguments (at most 64, 8 KiB in all)",
            ));
        }
        let Some(base) = conversation.agent.verification.as_ref() else {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "this agent runs no checks: a turn's check runs in the sandbox of the agent's own (`[agent.verify]`), and it has none",
            ));
        };
        // The person's sandbox and policy decide, as for the model's commands.
        let check = base.for_command(self.command, self.expected_exit)?;
        Ok(TurnContract::checked(check))
    }
}
