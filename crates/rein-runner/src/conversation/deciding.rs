//! A person's hand in a conversation held in this process: deciding a
//! pending approval, stopping the open turn, taking what other surfaces put
//! in the session's inbox, waiting for a decision, accepting changed
//! authority.
//!
//! Not here: posting from another process (`rein_approvals::decide`,
//! `say`, `stop`), or the turn itself (`mod.rs`).

use rein_approvals::{Answer, Decision, Surface};
use rein_sessions::Event;
use rein_wire::ToolCall;
use rein_wire::{AgentError, error::codes};
use serde_json::Value;

use super::folds::{last_calls, refused};
use super::inbox::Heard;
use super::{Conversation, asked, authority};
use crate::outcome::TurnOutcome;
use crate::settings::Verification;
use rein_wire::{ApprovalRequest, UiKind};

impl Conversation {
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
        if let Some(taken) = heard.decided.iter().find(|d| d.approval_id == approval_id) {
            return Err(AgentError::new(
                codes::CONFLICT,
                format!(
                    "approval `{approval_id}` was already {} by {}",
                    taken.decision, taken.by
                ),
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
        asked::pending(&mut self.journal, self.gate.tools().as_ref()).await
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

    /// Whether a turn is open (running, paused at an approval, or cut
    /// short by a crash).
    pub async fn has_open_turn(&mut self) -> Result<bool, AgentError> {
        Ok(self.journal.log().await?.turn_open())
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
        Ok(authority::recorded_check(&*self.journal.log().await?))
    }

    /// A person accepts that the open run goes on under the authority it
    /// would have now (recorded as `authority.accepted`, naming them).
    pub async fn accept_authority(
        &mut self,
        surface: &rein_approvals::Surface,
    ) -> Result<(), AgentError> {
        let events = self.journal.log().await?;
        let open = events.dangling();
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
                to: authority::of(&self.agent, self.gate.tools().as_ref(), None),
            }])
            .await?;
        Ok(())
    }
}
