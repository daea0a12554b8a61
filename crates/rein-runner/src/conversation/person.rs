//! What a person's surface does to a running conversation: decide a
//! pending approval in this process, stop the open turn.
//!
//! Not here: deciding from another process (`rein_approvals::decide`), or
//! steering (`crate::steering`).

use super::*;

impl Conversation {
    /// Decide a pending approval from a person's surface in this process
    /// (the terminal's y/N). Other processes use [`rein_approvals::decide`].
    pub async fn decide(
        &mut self,
        approval_id: &str,
        answer: Answer,
        surface: &Surface,
    ) -> Result<(), AgentError> {
        let control = self.store.control(&self.session_id).await?;
        if !control.pending.iter().any(|p| p.approval_id == approval_id) {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                format!("approval `{approval_id}` is not pending"),
            ));
        }
        let (decision, lease) = match answer {
            Answer::Approve(scope) => ("approved", Some(scope.as_str().to_owned())),
            Answer::Deny => ("denied", None),
        };
        self.append(vec![Event::ApprovalDecided {
            approval_id: approval_id.to_owned(),
            decision: decision.into(),
            by: surface.name().to_owned(),
            lease,
        }])
        .await?;
        self.emit(UiKind::ApprovalDecided {
            approval_id: approval_id.to_owned(),
            decision: decision.into(),
        });
        Ok(())
    }

    /// Stop the open turn from a person's surface: every pending approval
    /// is decided `stopped` (its call gets an error result telling the model
    /// not to work around it) and the turn ends as `interrupted`.
    pub async fn stop(&mut self, surface: &Surface) -> Result<TurnOutcome, AgentError> {
        let control = self.store.control(&self.session_id).await?;
        let events = self.log().await?;
        let mut stopping = vec![Event::Stopped {
            by: surface.name().to_owned(),
        }];
        for pending in &control.pending {
            stopping.push(Event::ApprovalDecided {
                approval_id: pending.approval_id.clone(),
                decision: "stopped".into(),
                by: surface.name().to_owned(),
                lease: None,
            });
            let arguments = events
                .iter()
                .find_map(|e| match &e.event {
                    Event::ApprovalRequested {
                        approval_id,
                        arguments,
                        ..
                    } if *approval_id == pending.approval_id => Some(arguments.clone()),
                    _ => None,
                })
                .unwrap_or(Value::Null);
            stopping.extend(refused(
                pending.call_id.clone(),
                pending.tool.clone(),
                arguments,
                &pending.permission,
                "not_approved",
                &self.profile.wording.not_approved(&pending.tool, "stopped"),
            ));
        }
        // Calls of the same message that never ran get a result too, so the
        // history stays well formed.
        if let Some((calls, _)) = last_calls(&events) {
            for (call_id, tool, arguments) in calls {
                if control.pending.iter().any(|p| p.call_id == call_id) {
                    continue;
                }
                stopping.extend(refused(
                    call_id,
                    tool,
                    arguments,
                    "none",
                    "stopped",
                    "The turn was stopped before this call ran.",
                ));
            }
        }
        self.append(stopping).await?;
        self.finish(TurnOutcome::Interrupted).await
    }
}
