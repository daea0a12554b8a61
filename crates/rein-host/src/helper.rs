//! A hosted agent as a helper a rein conversation delegates to
//! ([`rein_runner::ExternalAgent`]): `delegate {agent: NAME, task}` runs the
//! configured Claude Code or Codex entry on the task, in the parent's root,
//! recorded as the child session the parent named; its final text is the
//! call's answer, its failure the call's error. A Claude Code entry that
//! asks rein's person ([`AgentEntry::asks_rein`]) asks the parent's: each
//! question is announced to the parent's watchers
//! ([`ExternalTask::awaiting`]) and decided in the child session from any
//! person's surface — the parent's terminal, `rein approve`, the page. A
//! Codex entry that speaks its app server ([`AgentEntry::speaks_app_server`])
//! asks the parent's person the same way, through its approval requests.
//!
//! Not here: when a hosted helper may be used (`rein_runner`'s helpers:
//! never under hooks or a policy without writes), the config entry
//! (`config`).

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use rein_runner::{ApprovalRequest, ExternalAgent, ExternalAnswer, ExternalTask};
use rein_wire::{AgentError, error::codes};
use serde_json::json;

use crate::acp::AcpAsk;
use crate::child::Ended;
use crate::claude::permission::asking;
use crate::cli::{Joined, drive};
use crate::codex_app::drive_codex_app;
use crate::config::{AgentEntry, AgentKind};
use crate::person::{Answer, Person, Question};
use crate::record::Recorder;
use crate::reducer::Reducer;

/// A configured `claude` or `codex` entry, run in `cwd`.
pub struct HostedHelper {
    entry: AgentEntry,
    cwd: PathBuf,
}

impl HostedHelper {
    /// `entry` as a helper working in `cwd`; only `claude` and `codex`
    /// entries (an ACP agent asks its own questions, a TUI has no answer).
    pub fn new(entry: AgentEntry, cwd: PathBuf) -> Result<HostedHelper, AgentError> {
        match entry.kind {
            AgentKind::Claude | AgentKind::Codex => Ok(HostedHelper { entry, cwd }),
            other => Err(AgentError::new(
                codes::AGENT_CONFIG_INVALID,
                format!(
                    "a `{}` agent cannot be delegated to: only claude and codex entries",
                    other.as_str()
                ),
            )),
        }
    }
}

impl ExternalAgent for HostedHelper {
    fn run(&self, task: ExternalTask) -> BoxFuture<'static, Result<ExternalAnswer, AgentError>> {
        let entry = self.entry.clone();
        let cwd = self.cwd.clone();
        Box::pin(async move {
            let task = Arc::new(task);
            let app_server = entry.speaks_app_server();
            // Its request on its stdin when it hears words: the child
            // session's `rein say` reaches it mid-run. Codex's app server
            // is asked in its protocol.
            let prompt = Some(task.task.as_str()).filter(|_| !app_server);
            let (mut spec, hears) = entry.run_spec(&cwd, prompt, &[]);
            let program = entry.program();
            let cwd_text = cwd.display().to_string();
            let person: Arc<dyn Person> = Arc::new(ParentPerson(task.clone()));
            // Claude's questions go to the parent's person, for the run's
            // length, through the permission server.
            let (asks, _server) = if entry.asks_rein() {
                let prompt_last = hears.is_none();
                let (asks, server) =
                    asking(person.clone(), &cwd_text, &mut spec.argv, prompt_last).await?;
                (Some(asks), Some(server))
            } else {
                (None, None)
            };
            let mut recorder = Recorder::start_in(
                task.store.clone(),
                &task.session,
                entry.kind.as_str(),
                &program,
                &task.task,
            )
            .await?;
            let driven = if app_server {
                // Its approval requests go to the parent's person.
                let ask = AcpAsk {
                    prompt: task.task.clone(),
                    person,
                    view: None,
                    // A helper answers its one task.
                    stays: None,
                };
                let mut stream = crate::CodexStream::new(&cwd_text);
                let stop = task.cancel.clone();
                drive_codex_app(
                    &spec,
                    ask,
                    &mut stream,
                    Some(&mut recorder),
                    &mut |_| {},
                    stop,
                )
                .await
            } else {
                let mut reducer: Box<dyn Reducer> = match entry.kind {
                    AgentKind::Codex => Box::new(crate::CodexStream::new(&cwd_text)),
                    _ => Box::new(crate::ClaudeStream::new(&cwd_text)),
                };
                let joined = Joined {
                    view: None,
                    asks,
                    hears,
                    stays: None,
                };
                let stop = task.cancel.clone();
                drive(
                    &spec,
                    reducer.as_mut(),
                    Some(&mut recorder),
                    &mut |_| {},
                    stop,
                    joined,
                )
                .await
            };
            let driven = match driven {
                Ok(driven) => driven,
                Err(err) => {
                    recorder.abandon(&err.message).await?;
                    return Err(err);
                }
            };
            match (driven.ended, driven.outcome.text) {
                (Ended::Finished, Some(text)) => Ok(ExternalAnswer {
                    text,
                    cost_micro_usd: driven.outcome.cost_micro_usd,
                }),
                (ended, _) => Err(AgentError::new(
                    codes::HOSTED_AGENT_FAILED,
                    driven.outcome.failure.unwrap_or_else(|| {
                        format!("the hosted agent's run ended {}", ended.as_str())
                    }),
                )),
            }
        })
    }
}

/// The parent conversation's person: a question is announced to the
/// parent's watchers and answered in the child session's inbox by whoever
/// decides it (so this never answers itself).
struct ParentPerson(Arc<ExternalTask>);

impl Person for ParentPerson {
    fn ask(&self, question: Question) -> BoxFuture<'static, Option<Answer>> {
        let preview = question.preview();
        self.0.awaiting(ApprovalRequest {
            approval_id: question.approval_id,
            call_id: question.call_id,
            arguments: json!({"detail": question.detail}),
            tool: question.tool,
            permission: rein_wire::permission::PermissionClass::Destructive,
            purpose: Some("a hosted agent's call".into()),
            preview: Some(preview),
            agent_path: self.0.agent_path.as_str().into(),
        });
        Box::pin(std::future::pending())
    }
}
