//! A task graph's record in the store: the graph is a session of its own
//! whose log holds the graph as written (`graph.created`), each attempt's
//! start and each task's end with its outputs (`task.started`,
//! `task.finished`), every blackboard write (`blackboard.written`) and the
//! run's end (`graph.finished`). Each task's conversation is an ordinary
//! session beside it, its metadata naming the graph and the task.
//!
//! So a graph cut short — a crash, Ctrl-C, a failed task fixed since —
//! resumes from its record: tasks that succeeded are kept with their
//! outputs, the blackboard is as it was, everything else runs again. The
//! record holds the graph session's lease while it runs, so two processes
//! never drive one graph (`session_locked` for the second).
//!
//! Progress arrives synchronously from the scheduler and is written in
//! order by a task of its own, in batches; a surface that shows progress
//! hears each step only once it is on disk ([`GraphRecord::observer`]'s
//! `then`), so a task shown done is kept on resume. A task's end that a
//! crash kept from the disk means only that the task runs again.
//!
//! Not here: the schedule (`rein-orchestrator`), the tasks
//! (`tasks.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use rein_orchestrator::{Entry, GraphOutcome, GraphSpec, Outputs, Progress, TaskState, Write};
use rein_sessions::{Event, NewEvent, SessionLock, Store};
use rein_wire::{AgentError, TaskEnding, error::codes};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How long the record's hold on the graph session lasts unrenewed.
const LEASE_TTL: Duration = Duration::from_secs(120);

/// Who holds a graph session's lease.
const HOLDER: &str = "graph";

/// What a resumed graph starts from.
#[derive(Debug, Clone, Default)]
pub struct Resumed {
    /// The graph as written.
    pub spec: GraphSpec,
    /// Tasks that succeeded, with their outputs.
    pub done: HashMap<String, Outputs>,
    /// The blackboard as it was.
    pub blackboard: BTreeMap<String, Entry>,
}

/// What is told once a step of progress is on disk.
type Then = Arc<dyn Fn(&Progress) + Send + Sync>;

/// One thing for the writer: an event, and whom to tell once it is written.
type Item = (Option<Event>, Option<(Progress, Then)>);

/// A graph's record, open for writing.
pub struct GraphRecord {
    session: String,
    events: mpsc::UnboundedSender<Item>,
    writer: JoinHandle<Result<(), AgentError>>,
}

impl std::fmt::Debug for GraphRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphRecord")
            .field("session", &self.session)
            .finish()
    }
}

fn state_name(state: &TaskState) -> TaskEnding {
    match state {
        TaskState::Succeeded { .. } => TaskEnding::Succeeded,
        TaskState::Failed { .. } => TaskEnding::Failed,
        TaskState::Skipped { .. } => TaskEnding::Skipped,
        TaskState::Cancelled => TaskEnding::Cancelled,
        TaskState::Pending | TaskState::Running { .. } => TaskEnding::Running,
    }
}

/// The event for one step of progress.
fn event_of(progress: &Progress) -> Option<Event> {
    match progress {
        Progress::Started { task, attempt } => Some(Event::TaskStarted {
            task: task.clone(),
            attempt: *attempt,
        }),
        Progress::Retrying { .. } => None,
        Progress::Ended { task, state } => {
            let (attempts, outputs, detail) = match state {
                TaskState::Succeeded { outputs, attempts } => (*attempts, outputs.clone(), None),
                TaskState::Failed { error, attempts } => {
                    (*attempts, BTreeMap::new(), Some(error.to_problem()))
                }
                TaskState::Skipped { because } => {
                    (0, BTreeMap::new(), Some(json!({"because": because})))
                }
                _ => (0, BTreeMap::new(), None),
            };
            Some(Event::TaskFinished {
                task: task.clone(),
                state: state_name(state),
                attempts,
                outputs,
                detail,
            })
        }
    }
}

impl GraphRecord {
    /// A new graph session recording `spec`.
    pub async fn create(store: Arc<dyn Store>, spec: &GraphSpec) -> Result<Self, AgentError> {
        let value = serde_json::to_value(spec).map_err(|err| {
            AgentError::new(codes::INTERNAL, format!("cannot record the graph: {err}"))
        })?;
        let info = store.create_session(json!({"graph": true})).await?;
        let lease = store.acquire(&info.id, HOLDER, LEASE_TTL).await?;
        store
            .append(
                &lease,
                vec![NewEvent::main(Event::GraphCreated { spec: value })],
            )
            .await?;
        Ok(Self::start(store, info.id, lease))
    }

    /// Open the record of graph session `session` to run it again: what
    /// succeeded before, and the blackboard.
    pub async fn resume(
        store: Arc<dyn Store>,
        session: &str,
    ) -> Result<(Self, Resumed), AgentError> {
        let lease = store.acquire(session, HOLDER, LEASE_TTL).await?;
        let read = async {
            let mut resumed = Resumed::default();
            let mut spec = None;
            let mut from = 1;
            loop {
                let page = store.read(session, from, 1_000).await?;
                let Some(last) = page.last() else { break };
                from = last.seq + 1;
                for stored in &page {
                    match &stored.event {
                        Event::GraphCreated { spec: value } => {
                            spec =
                                Some(serde_json::from_value::<GraphSpec>(value.clone()).map_err(
                                    |err| {
                                        AgentError::new(
                                            codes::GRAPH_INVALID,
                                            format!("the recorded graph cannot be read: {err}"),
                                        )
                                    },
                                )?);
                        }
                        Event::TaskFinished {
                            task,
                            state,
                            outputs,
                            ..
                        } => {
                            if *state == TaskEnding::Succeeded {
                                resumed.done.insert(task.clone(), outputs.clone());
                            } else {
                                resumed.done.remove(task);
                            }
                        }
                        Event::BlackboardWritten {
                            key,
                            value,
                            revision,
                            ..
                        } => {
                            resumed.blackboard.insert(
                                key.clone(),
                                Entry {
                                    value: value.clone(),
                                    revision: *revision,
                                },
                            );
                        }
                        _ => {}
                    }
                }
            }
            resumed.spec = spec.ok_or_else(|| {
                AgentError::new(
                    codes::INVALID_INPUT,
                    format!("session `{session}` is not a task graph's record"),
                )
            })?;
            Ok::<_, AgentError>(resumed)
        }
        .await;
        match read {
            Ok(resumed) => Ok((Self::start(store, session.to_owned(), lease), resumed)),
            Err(err) => {
                let _ = store.release(&lease).await;
                Err(err)
            }
        }
    }

    fn start(store: Arc<dyn Store>, session: String, lease: SessionLock) -> Self {
        let (events, mut queue) = mpsc::unbounded_channel::<Item>();
        let writer = tokio::spawn(async move {
            let mut lease = lease;
            let mut renew = tokio::time::interval(LEASE_TTL / 3);
            renew.tick().await;
            let result = loop {
                tokio::select! {
                    next = queue.recv() => {
                        let Some(first) = next else { break Ok(()) };
                        let mut items = vec![first];
                        while let Ok(more) = queue.try_recv() {
                            items.push(more);
                        }
                        let batch: Vec<NewEvent> = items
                            .iter_mut()
                            .filter_map(|(event, _)| event.take().map(NewEvent::main))
                            .collect();
                        if !batch.is_empty()
                            && let Err(err) = store.append(&lease, batch).await
                        {
                            break Err(err);
                        }
                        for (progress, then) in items.into_iter().filter_map(|(_, told)| told) {
                            then(&progress);
                        }
                    }
                    _ = renew.tick() => match store.renew(&lease, LEASE_TTL).await {
                        Ok(renewed) => lease = renewed,
                        Err(err) => break Err(err),
                    },
                }
            };
            let released = store.release(&lease).await;
            result.and(released)
        });
        GraphRecord {
            session,
            events,
            writer,
        }
    }

    /// The graph's session id (`rein run --resume` takes it).
    pub fn session_id(&self) -> &str {
        &self.session
    }

    /// What records the scheduler's progress (give it to
    /// `Scheduler::observe`), telling `then` of each step once it is on
    /// disk.
    pub fn observer(
        &self,
        then: impl Fn(&Progress) + Send + Sync + 'static,
    ) -> impl Fn(&Progress) + Send + Sync + 'static {
        let events = self.events.clone();
        let then: Then = Arc::new(then);
        move |progress| {
            let _ = events.send((event_of(progress), Some((progress.clone(), then.clone()))));
        }
    }

    /// What records the blackboard's writes (give it to
    /// `Blackboard::restored`).
    pub fn recorder(&self) -> impl Fn(&Write) + Send + Sync + 'static {
        let events = self.events.clone();
        move |write| {
            let event = Event::BlackboardWritten {
                key: write.key.clone(),
                value: write.value.clone(),
                revision: write.revision,
                by: write.by.clone(),
            };
            let _ = events.send((Some(event), None));
        }
    }

    /// Record the run's end, write what is queued and give the session
    /// back.
    pub async fn finish(self, outcome: GraphOutcome) -> Result<(), AgentError> {
        let finished = Event::GraphFinished { outcome };
        let _ = self.events.send((Some(finished), None));
        self.close().await
    }

    /// Write what is queued and give the session back with no end
    /// recorded: the graph is left for another process to run (`rein run
    /// --detach` hands it to the workers).
    pub async fn close(self) -> Result<(), AgentError> {
        let GraphRecord { events, writer, .. } = self;
        // The writer ends once every sender is gone (observers the
        // scheduler held are dropped with it).
        drop(events);
        writer.await.map_err(|err| {
            AgentError::new(codes::INTERNAL, format!("the graph's record failed: {err}"))
        })?
    }
}
