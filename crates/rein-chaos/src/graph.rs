//! The trial's conversation as a task graph, driven as `rein run` drives
//! one: each scripted turn a task of its own (each after the one before,
//! so the files they share change in the script's order), run by
//! `ConversationTasks` under a `GraphRecord`, the person deciding each
//! approval as it is announced, from another surface (as `rein approve`
//! does). The next process after a kill resumes the record: tasks that
//! succeeded are kept, a task cut short carries on in its own session, and
//! one that answered before its end was recorded is that answer.
//!
//! Graph tasks are separate conversations, so the compaction between the
//! second and third turns is the other surfaces' alone.
//!
//! Not here: the scripted turns (`model`), checking (`check`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use rein_orchestrator::{GraphOutcome, GraphSpec, Outputs, Scheduler, TaskSpec};
use rein_runner::{Agent, ConversationTasks, Delegation, GraphRecord};
use rein_sessions::{Event, Store, StoredEvent};
use rein_wire::TaskEnding;

use crate::check::{Logs, closed, read_whole};
use crate::child::{parts, person, profile};
use crate::model::{Script, TURNS};

/// Drive the trial in `dir` as a graph to its end.
pub async fn run(dir: &Path, helper: &Path) -> anyhow::Result<()> {
    let (store, backend) = parts(dir, helper).await?;
    let mut agent = Agent::new(Arc::new(Script), backend, profile());
    agent.delegation = Some(Delegation::default());
    let (record, done) = open_record(store.clone()).await?;
    let mut tasks = ConversationTasks::of(store.clone(), agent).in_graph(record.session_id());
    let mut asked = tasks.approvals();
    let decider = store.clone();
    let the_person = tokio::spawn(async move {
        while let Some(paused) = asked.recv().await {
            // A question asked again after a decision made by a killed
            // process is already answered: the store refuses a second.
            let _ = rein_approvals::decide(
                decider.as_ref(),
                &paused.session,
                &paused.request.approval_id,
                person(&paused.request.tool),
                &rein_approvals::Surface::command("approve"),
            )
            .await;
        }
    });
    let graph = spec().check().context("the trial's graph")?;
    let report = Scheduler::new(graph, Arc::new(tasks))
        .with_done(done)
        .observe(record.observer(|_| {}))
        .run()
        .await;
    the_person.abort();
    record.finish(report.outcome).await?;
    if report.outcome != GraphOutcome::Succeeded {
        bail!("the graph ended {:?}: {:?}", report.outcome, report.tasks);
    }
    Ok(())
}

/// The graph: one task per scripted turn, its words the brief, each after
/// the one before.
pub fn spec() -> GraphSpec {
    GraphSpec {
        tasks: TURNS
            .iter()
            .enumerate()
            .map(|(i, turn)| {
                let task = TaskSpec::new(task_id(i), turn.says);
                match i.checked_sub(1) {
                    Some(before) => task.after(&[&task_id(before)]),
                    None => task,
                }
            })
            .collect(),
        ..GraphSpec::default()
    }
}

/// The id of the task for turn `i` (from 0).
pub fn task_id(i: usize) -> String {
    format!("turn{}", i + 1)
}

/// The graph's record, resumed when a killed process made it, with what
/// it kept; else a new one.
async fn open_record(
    store: Arc<dyn Store>,
) -> anyhow::Result<(GraphRecord, HashMap<String, Outputs>)> {
    match record_session(store.as_ref()).await? {
        Some(id) => {
            let (record, resumed) = GraphRecord::resume(store, &id).await?;
            Ok((record, resumed.done))
        }
        None => Ok((GraphRecord::create(store, &spec()).await?, HashMap::new())),
    }
}

/// The graph's record, if made: the session marked as one whose log holds
/// the graph. A process killed between making that session and writing
/// the graph into it leaves one with neither the graph nor anything else
/// (`rein run --resume` refuses it as no graph's record); the next process
/// makes a record of its own.
pub async fn record_session(store: &dyn Store) -> anyhow::Result<Option<String>> {
    for session in store.list_sessions(100).await? {
        if session.metadata["graph"] != serde_json::Value::Bool(true) {
            continue;
        }
        let first = store.read(&session.id, 2, 1).await?;
        if first
            .iter()
            .any(|e| matches!(e.event, Event::GraphCreated { .. }))
        {
            return Ok(Some(session.id));
        }
    }
    Ok(None)
}

/// A graph trial's sessions: the record, one session per task (a task
/// that ran in two would have left a stale one beside it), and the
/// sub-agents' sessions under the tasks'.
pub(crate) async fn read_logs(store: &dyn Store) -> Result<Logs, String> {
    let record = record_session(store)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the store holds no graph's record")?;
    let sessions = store
        .list_sessions(100)
        .await
        .map_err(|e| format!("the sessions do not list: {e}"))?;
    let mut tasks: Vec<Option<String>> = vec![None; TURNS.len()];
    let mut helpers = Vec::new();
    // Tasks first: a sub-agent's session names its task's.
    for session in &sessions {
        if session.metadata["graph"].as_str() != Some(record.as_str()) {
            continue;
        }
        let named = session.metadata["graph_task"].as_str().unwrap_or_default();
        let Some(i) = (0..TURNS.len()).find(|i| task_id(*i) == named) else {
            return Err(format!("a session of no task of the graph: {}", session.id));
        };
        if let Some(other) = tasks[i].replace(session.id.clone()) {
            return Err(format!(
                "task {named} ran in two sessions: {other} and {}",
                session.id
            ));
        }
    }
    let is_task = |id: &str| tasks.iter().flatten().any(|t| t == id);
    for session in &sessions {
        let id = session.id.as_str();
        if id == record || session.metadata["graph"].as_str() == Some(record.as_str()) {
            continue;
        }
        if session.metadata["parent_session"]
            .as_str()
            .is_some_and(is_task)
        {
            helpers.push(read_whole(store, id).await?);
        } else if session.metadata["graph"] == serde_json::Value::Bool(true)
            && session.head_seq == 1
        {
            // A record a killed process made but never wrote the graph into.
        } else {
            return Err(format!("a session of no known parent: {id}"));
        }
    }
    let mut own = Vec::new();
    for (i, task) in tasks.iter().enumerate() {
        let id = task
            .as_deref()
            .ok_or_else(|| format!("task {} has no session", task_id(i)))?;
        own.push(read_whole(store, id).await?);
    }
    Ok(Logs {
        own,
        helpers,
        record: Some(read_whole(store, &record).await?),
    })
}

/// The record: the graph finished and succeeded, each task's success
/// recorded once as run (a resume records the kept ones again, as run 0
/// times).
pub(crate) fn record_whole(record: &[StoredEvent], broken: &mut Vec<String>) {
    closed(record, "the graph record's ", broken);
    let mut succeeded: HashMap<&str, usize> = HashMap::new();
    let mut finished = Vec::new();
    for e in record {
        match &e.event {
            Event::TaskFinished {
                task,
                state,
                attempts,
                ..
            } if *state == TaskEnding::Succeeded && *attempts > 0 => {
                *succeeded.entry(task.as_str()).or_default() += 1;
            }
            Event::GraphFinished { outcome } => finished.push(*outcome),
            _ => {}
        }
    }
    if finished.last() != Some(&GraphOutcome::Succeeded) {
        broken.push(format!("the graph's record ends {finished:?}"));
    }
    for i in 0..TURNS.len() {
        let n = succeeded.get(task_id(i).as_str()).copied().unwrap_or(0);
        if n != 1 {
            broken.push(format!(
                "task {} recorded as succeeded {n} times",
                task_id(i)
            ));
        }
    }
}
