//! The parallel read batch: one `tool.called` batch, the invocations at
//! once (result cache consulted), then the results in call order.
//!
//! Not here: writes and the gate (`calls`).

use super::*;

impl Conversation {
    /// Run reads in parallel: one `tool.called` batch, the invocations at
    /// once, then the results in call order.
    pub(super) async fn run_reads(
        &mut self,
        reads: Vec<(String, String, Value)>,
        repeats: &mut HashMap<String, u32>,
    ) -> Result<Option<TurnOutcome>, AgentError> {
        if reads.is_empty() {
            return Ok(None);
        }
        let revision = self.backend.revision();
        let mut called = Vec::new();
        // Each delegate call gets its sub-agent's path, or none past the bound.
        let mut agents: Vec<Option<String>> = Vec::with_capacity(reads.len());
        for (call_id, tool, args) in &reads {
            called.push(Event::ToolCalled {
                call_id: call_id.clone(),
                tool: tool.clone(),
                arguments: args.clone(),
                permission: Some(PermissionClass::Read),
            });
            let agent = match (&self.delegation, tool == crate::delegation::DELEGATE) {
                (Some(delegation), true) if self.turn.delegated < delegation.max_per_turn => {
                    self.turn.delegated += 1;
                    let path = format!("{}/agent-{}", self.journal.agent(), self.turn.delegated);
                    called.push(Event::AgentStarted {
                        agent_path: path.clone(),
                        task: crate::delegation::task_of(args)
                            .unwrap_or_default()
                            .to_owned(),
                    });
                    Some(path)
                }
                _ => None,
            };
            agents.push(agent);
            self.journal.emit(UiKind::ToolCall {
                call_id: call_id.clone(),
                tool: tool.clone(),
                arguments: args.clone(),
            });
        }
        self.journal.append(called).await?;
        let backend = self.backend.clone();
        let policy = self.policy.clone();
        let cached: Vec<Option<Value>> = reads
            .iter()
            .map(|(_, tool, args)| {
                if backend.cacheable(tool) {
                    self.cache.get(tool, args, &revision).cloned()
                } else {
                    None
                }
            })
            .collect();
        let runs = reads
            .iter()
            .zip(&cached)
            .zip(&agents)
            .map(|(((call_id, tool, args), hit), agent)| {
                let backend = backend.clone();
                let sub = match (agent, &self.delegation) {
                    (Some(path), Some(delegation)) => Some((
                        crate::delegation::Parent {
                            store: self.journal.store().clone(),
                            provider: self.provider.clone(),
                            backend: self.backend.product.clone(),
                            profile: self.profile.clone(),
                            session_id: self.journal.session_id().to_owned(),
                            delegation: delegation.clone(),
                        },
                        path.clone(),
                    )),
                    _ => None,
                };
                let ctx = ToolContext {
                    call_id: call_id.clone(),
                    elevated: false,
                    policy: policy.clone(),
                };
                let hit = hit.clone();
                async move {
                    let started = Instant::now();
                    let outcome = match hit {
                        Some(result) => Outcome::ok(result),
                        None if tool == crate::delegation::DELEGATE => match sub {
                            Some((parent, path)) => {
                                let task = crate::delegation::task_of(args).unwrap_or_default();
                                parent.delegation.spawner.clone().spawn(parent, path, task.to_owned()).await
                            }
                            None => Outcome::failed(
                                codes::DELEGATION_REFUSED.as_str(),
                                "no more sub-agents can be started in this turn (or delegation is off); do the task yourself",
                            ),
                        },
                        None => backend.invoke(tool, args.clone(), &ctx).await,
                    };
                    (outcome, started.elapsed())
                }
            });
        let outcomes = futures::future::join_all(runs).await;
        let delegated = agents.iter().any(Option::is_some);
        let mut results = Vec::new();
        let mut fingerprints = Vec::new();
        for ((((call_id, tool, args), hit), (outcome, took)), agent) in
            reads.iter().zip(cached).zip(outcomes).zip(agents)
        {
            if let Some(agent_path) = agent {
                results.push(Event::AgentFinished {
                    agent_path,
                    outcome: match &outcome {
                        Outcome::Ok { .. } => "finished".into(),
                        Outcome::Failed { code, .. } => code.clone(),
                    },
                });
            }
            let source = if hit.is_some() {
                ResultSource::Cache
            } else {
                ResultSource::Live
            };
            if hit.is_none()
                && backend.cacheable(tool)
                && let Outcome::Ok { result, .. } = &outcome
            {
                self.cache.put(tool, args, &revision, result.clone());
            }
            let event = self.result_event(call_id, outcome, source, took).await?;
            fingerprints.push(fingerprint(tool, args, &event));
            results.push(event);
        }
        // Reads' results are staged: durable with the next commit (the next
        // step's `tool.called`, a decision asked for, or the turn's end).
        // A crash before it loses only them, and recovery answers those
        // calls `interrupted` — what a crash during the reads gave anyway;
        // a read is never a write that ran. A sub-agent's finish is written
        // at once: its work is not something to lose.
        if delegated {
            self.journal.append(results).await?;
        } else {
            self.journal.stage(results).await?;
        }
        for fp in fingerprints {
            if let Some(outcome) = self.count_repeat(repeats, fp).await? {
                return Ok(Some(outcome));
            }
        }
        Ok(None)
    }
}
