//! `/api/graphs`: a task graph posted to the server and run here — each task
//! a conversation of its own with this server's agents — followed as it
//! runs, its tasks' questions shown for a person to decide, cancelled.
//!
//! A graph is recorded in a session of its own (`GraphRecord`), so what the
//! API says of one — its tasks, each one's state, outputs and why it failed,
//! how the graph ended — is read from that record, whether it runs here,
//! ran before a restart or runs on a worker; its events stream like a
//! conversation's. A task's question is decided as any other, through its
//! session's approvals (`POST /api/conversations/{session}/approvals/{id}`),
//! by a person: nothing here decides, and a posted graph runs under the
//! agents' own policy, like a conversation started here. Only a graph
//! running in this process can be cancelled here; at most
//! [`MAX_RUNNING`] run at once.
//!
//! Not here: scheduling (`rein-orchestrator`), a task's conversation
//! (`rein-runner`), the stream (`events`).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Sse};
use rein_orchestrator::{Blackboard, GraphSpec, Scheduler};
use rein_runner::{ConversationTasks, GraphRecord};
use rein_sessions::{Event, Store};
use rein_wire::{AgentError, error::codes};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::Server;
use crate::problem::{Answered, Problem, body};

/// Graphs running in one server at once, at most.
pub const MAX_RUNNING: usize = 16;

/// Task sessions of one graph read for their questions, at most.
const MAX_TASK_SESSIONS: usize = 256;

/// Graphs posted here that the list names, newest first, at most.
const LISTED: usize = 20;

/// The graphs posted to this server: those running, each with its cancel,
/// and the latest posted.
#[derive(Default)]
pub(crate) struct Running {
    graphs: Mutex<Posted>,
}

#[derive(Default)]
struct Posted {
    running: HashMap<String, CancellationToken>,
    latest: VecDeque<String>,
}

impl Running {
    fn lock(&self) -> std::sync::MutexGuard<'_, Posted> {
        self.graphs.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn is_running(&self, graph: &str) -> bool {
        self.lock().running.contains_key(graph)
    }

    /// `too_many_clients` when as many graphs run as the limit.
    fn room(posted: &Posted) -> Result<(), AgentError> {
        if posted.running.len() >= MAX_RUNNING {
            return Err(AgentError::new(
                codes::TOO_MANY_CLIENTS,
                format!("{MAX_RUNNING} graphs run here already; cancel one or wait"),
            ));
        }
        Ok(())
    }

    /// `graph` running with `cancel`, if there is room.
    fn start(&self, graph: &str, cancel: CancellationToken) -> Result<(), AgentError> {
        let mut posted = self.lock();
        Running::room(&posted)?;
        posted.running.insert(graph.to_owned(), cancel);
        posted.latest.push_front(graph.to_owned());
        posted.latest.truncate(LISTED);
        Ok(())
    }

    fn ended(&self, graph: &str) {
        self.lock().running.remove(graph);
    }

    fn cancel(&self, graph: &str) -> Option<CancellationToken> {
        self.lock().running.get(graph).cloned()
    }

    fn latest(&self) -> Vec<String> {
        self.lock().latest.iter().cloned().collect()
    }
}

/// Run a task graph here (the body: the graph as JSON, the same fields
/// as a graph file's TOML). It is checked first: a cycle, an unknown
/// dependency or an agent this server lacks is refused before anything is
/// recorded.
#[utoipa::path(post, path = "/api/graphs", request_body(content = Object, description = "A task graph: `graph` settings and `task` list, as in a graph file"),
    responses((status = 201, description = "Recorded and running: its id"), (status = 400, description = "Not a valid graph"), (status = 503, description = "As many graphs run as the limit")))]
pub(crate) async fn post_graph(
    State(server): State<Server>,
    payload: Result<Json<Value>, axum::extract::rejection::JsonRejection>,
) -> Answered {
    let spec: GraphSpec = serde_json::from_value(body(payload)?)
        .map_err(|err| AgentError::new(codes::GRAPH_INVALID, format!("not a task graph: {err}")))?;
    let graph = spec.clone().check()?;
    for task in graph.tasks() {
        if let Some(name) = task.agent.as_deref()
            && name != server.inner.agent.profile.name
        {
            server.inner.agent(Some(name))?;
        }
    }
    // Asked before anything is recorded (and again as it starts).
    Running::room(&server.inner.graphs.lock())?;
    let store = server.inner.store.clone();
    let record = GraphRecord::create(store.clone(), &spec).await?;
    let id = record.session_id().to_owned();
    let tasks = tasks_of(&server, store, &record);
    let scheduler = Scheduler::new(graph, Arc::new(tasks)).observe(record.observer(|_| {}));
    if let Err(full) = server.inner.graphs.start(&id, scheduler.cancel_token()) {
        // Filled meanwhile: the record says it never ran.
        drop(scheduler);
        record.finish(rein_wire::GraphOutcome::Cancelled).await?;
        return Err(Problem(full));
    }
    let inner = server.inner.clone();
    let running = id.clone();
    tokio::spawn(async move {
        let report = scheduler.run().await;
        if let Err(err) = record.finish(report.outcome).await {
            tracing::warn!(graph = %running, %err, "a graph's end was not recorded");
        }
        inner.graphs.ended(&running);
    });
    Ok((StatusCode::CREATED, Json(json!({"graph": id}))).into_response())
}

/// The tasks of a graph posted here: this server's agent and its named
/// ones, each with the server's budgets when it has them, sharing a
/// blackboard kept in the graph's record.
fn tasks_of(server: &Server, store: Arc<dyn Store>, record: &GraphRecord) -> ConversationTasks {
    let budgeted = |agent: &rein_runner::Agent| {
        let mut agent = agent.clone();
        if let Some(budgets) = server.budgets {
            agent.budgets = budgets;
        }
        agent
    };
    let board = Blackboard::restored(BTreeMap::new(), record.recorder());
    let mut tasks = ConversationTasks::of(store, budgeted(&server.inner.agent))
        .in_graph(record.session_id())
        .with_blackboard(board);
    for (name, agent) in &server.inner.agents {
        tasks = tasks.with_agent(name, budgeted(agent));
    }
    tasks
}

/// A graph as its record says: its tasks, each one's state (`pending`,
/// `running`, then how it ended), outputs and failure, the sessions its
/// attempts ran in with what waits there for a person; how it ended, and
/// whether it runs here.
#[utoipa::path(get, path = "/api/graphs/{id}", params(("id" = String, Path)),
    responses((status = 200, description = "The graph and its tasks"), (status = 404, description = "No such graph")))]
pub(crate) async fn get_graph(State(server): State<Server>, Path(id): Path<String>) -> Answered {
    Ok(Json(view(&server, &id).await?).into_response())
}

/// The graphs posted to this server since it started, newest first (at
/// most 20), each as `GET /api/graphs/{id}` shows it. A graph from before
/// a restart or a worker's is reached by its id.
#[utoipa::path(get, path = "/api/graphs",
    responses((status = 200, description = "The graphs posted here, newest first")))]
pub(crate) async fn list_graphs(State(server): State<Server>) -> Answered {
    let mut graphs = Vec::new();
    for id in server.inner.graphs.latest() {
        graphs.push(view(&server, &id).await?);
    }
    Ok(Json(json!({"graphs": graphs})).into_response())
}

/// One graph as the API shows it.
async fn view(server: &Server, id: &str) -> Result<Value, AgentError> {
    let store = server.inner.store.as_ref();
    let log = graph_log(store, id).await?;
    let mut shown = fold(&log);
    let sessions = store.sessions_where("graph", id, MAX_TASK_SESSIONS).await?;
    // Oldest first: a task's latest attempt is its last session.
    for info in sessions.iter().rev() {
        let Some(task) = info.metadata.get("graph_task").and_then(Value::as_str) else {
            continue;
        };
        let waiting = crate::waiting::waiting_json(server, &info.id).await?;
        if let Some(Value::Object(entry)) = shown.tasks.get_mut(task) {
            entry.insert("session".into(), json!(info.id));
            entry.insert("approvals".into(), waiting);
        }
    }
    let tasks: Vec<Value> = shown
        .order
        .iter()
        .filter_map(|task| shown.tasks.remove(task))
        .collect();
    Ok(json!({
        "graph": id,
        "running": server.inner.graphs.is_running(id),
        "outcome": shown.outcome,
        "tasks": tasks,
    }))
}

/// A graph's record, read whole.
async fn graph_log(store: &dyn Store, id: &str) -> Result<Vec<Event>, AgentError> {
    graph_log_exists(store, id).await?;
    Ok(rein_sessions::read_all(store, id)
        .await?
        .into_iter()
        .map(|e| e.event)
        .collect())
}

/// What a graph's record says, task by task.
struct Shown {
    order: Vec<String>,
    tasks: HashMap<String, Value>,
    outcome: Option<rein_wire::GraphOutcome>,
}

fn fold(log: &[Event]) -> Shown {
    let mut shown = Shown {
        order: Vec::new(),
        tasks: HashMap::new(),
        outcome: None,
    };
    for event in log {
        match event {
            Event::GraphCreated { spec } => {
                let spec: GraphSpec = serde_json::from_value(spec.clone()).unwrap_or_default();
                for task in spec.tasks {
                    shown.order.push(task.id.clone());
                    let entry = json!({
                        "id": task.id,
                        "brief": task.brief,
                        "agent": task.agent,
                        "depends_on": task.depends_on,
                        "state": "pending",
                        "attempts": 0,
                        "approvals": [],
                    });
                    shown.tasks.insert(task.id, entry);
                }
            }
            Event::TaskStarted { task, attempt } => {
                if let Some(entry) = shown.tasks.get_mut(task) {
                    entry["state"] = json!("running");
                    entry["attempts"] = json!(attempt);
                }
            }
            Event::TaskFinished {
                task,
                state,
                attempts,
                outputs,
                detail,
            } => {
                if let Some(entry) = shown.tasks.get_mut(task) {
                    entry["state"] = json!(state);
                    entry["attempts"] = json!(attempts);
                    entry["outputs"] = json!(outputs);
                    entry["detail"] = json!(detail);
                }
            }
            Event::GraphFinished { outcome } => shown.outcome = Some(*outcome),
            _ => {}
        }
    }
    shown
}

/// A graph's events (SSE), as a conversation's: its record as it grows —
/// each task's start and end, blackboard writes, the graph's end.
#[utoipa::path(get, path = "/api/graphs/{id}/events", params(("id" = String, Path), crate::events::After),
    responses((status = 200, description = "text/event-stream"), (status = 404, description = "No such graph")))]
pub(crate) async fn graph_events(
    State(server): State<Server>,
    Path(id): Path<String>,
    Query(after): Query<crate::events::After>,
    headers: HeaderMap,
) -> Answered {
    graph_log_exists(server.inner.store.as_ref(), &id).await?;
    let from = crate::events::resume_point(&headers, after.after)?;
    let watchers = server.limits.watchers_per_conversation;
    let (stream, keep) = crate::events::stream(server.inner.clone(), id, from, watchers).await?;
    Ok(Sse::new(stream).keep_alive(keep).into_response())
}

/// `session_not_found` unless `id` is a graph's record.
async fn graph_log_exists(store: &dyn Store, id: &str) -> Result<(), AgentError> {
    let info = store.session(id).await?;
    if info.metadata.get("graph") == Some(&Value::Bool(true)) {
        Ok(())
    } else {
        Err(AgentError::new(
            codes::SESSION_NOT_FOUND,
            format!("`{id}` is not a task graph"),
        ))
    }
}

/// Cancel a graph running here: running tasks stop at their next step,
/// the rest do not start; its record says it was cancelled.
#[utoipa::path(post, path = "/api/graphs/{id}/cancel", params(("id" = String, Path)),
    responses((status = 202, description = "Cancelling"), (status = 409, description = "Not running here")))]
pub(crate) async fn cancel_graph(State(server): State<Server>, Path(id): Path<String>) -> Answered {
    graph_log_exists(server.inner.store.as_ref(), &id).await?;
    let Some(cancel) = server.inner.graphs.cancel(&id) else {
        return Err(Problem(AgentError::new(
            codes::CONFLICT,
            format!("graph `{id}` is not running in this server"),
        )));
    };
    cancel.cancel();
    Ok((StatusCode::ACCEPTED, Json(json!({"cancelling": id}))).into_response())
}
