//! A case that runs a task graph instead of turns: the graph's TOML (as
//! `rein run` takes it) on the case's store, model and tool backend, each
//! task a conversation; a task's approval answered from the case's script
//! by a simulated person through the task's inbox, as a person at any
//! surface would. The checks read every task's session.

use std::sync::Arc;

use rein_orchestrator::{GraphOutcome, GraphSpec, Scheduler, TaskState};
use rein_runner::{Agent, ConversationTasks};
use rein_sessions::Store;
use rein_wire::AgentError;

use crate::concluded::conclude;
use crate::person::{Answers, decide_scripted};
use crate::result::CaseResult;
use crate::suite::Case;

/// Run `case`'s graph (`text`); fill in `result` and check it.
pub(crate) async fn execute(
    case: &Case,
    text: &str,
    store: Arc<dyn Store>,
    agent: Agent,
    project: &crate::project::Project,
    result: &mut CaseResult,
) -> Result<(), AgentError> {
    let graph = GraphSpec::from_toml(text)?.check()?;
    let leaves: Vec<String> = graph
        .tasks()
        .iter()
        .filter(|t| !graph.tasks().iter().any(|o| o.depends_on.contains(&t.id)))
        .map(|t| t.id.clone())
        .collect();
    let mut tasks = ConversationTasks::of(store.clone(), agent);
    let mut asked = tasks.approvals();
    let answers: Answers = Arc::new(std::sync::Mutex::new(crate::suite::answers_of(case)));
    let script = answers.clone();
    let at_surface = store.clone();
    let person = tokio::spawn(async move {
        while let Some(waiting) = asked.recv().await {
            decide_scripted(
                at_surface.as_ref(),
                &script,
                &waiting.session,
                &waiting.request.approval_id,
            )
            .await;
        }
    });
    let report = Scheduler::new(graph, Arc::new(tasks)).run().await;
    person.abort();
    let unasked = answers.lock().map_or(0, |a| a.len());
    if unasked > 0 {
        result.failures.push(format!(
            "{unasked} scripted approval answer(s) were never asked for"
        ));
    }
    result.outcome = match report.outcome {
        GraphOutcome::Succeeded => "succeeded",
        GraphOutcome::Failed => "failed",
        GraphOutcome::Cancelled => "cancelled",
    }
    .to_owned();
    result.answer = report
        .tasks
        .iter()
        .filter(|(task, _)| leaves.contains(task))
        .filter_map(|(task, state)| match state {
            TaskState::Succeeded { outputs, .. } => {
                outputs.get("answer").map(|a| format!("## {task}\n{a}"))
            }
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n\n");
    // Every session in the case's store is one of the graph's tasks.
    let mut events = Vec::new();
    let mut totals = rein_trace::Totals::default();
    for session in store.list_sessions(10_000).await? {
        let log = rein_sessions::read_all(store.as_ref(), &session.id).await?;
        totals.merge(&rein_trace::report(&session.id, &log).totals);
        events.extend(log);
    }
    conclude(case, result, &totals, &events, &events, project).await;
    Ok(())
}
