//! Running a checked graph: ready tasks start in the order they are written,
//! at most `max_parallel` at once; a failed attempt is retried after a
//! doubling wait; an attempt over its time limit is told to stop and
//! counted failed; a cancellation reaches every running task; a task's
//! final failure skips its dependents or fails the graph, as the graph
//! says.
//!
//! What a task *is* (a conversation, a sub-process, a function) is the
//! [`TaskRunner`]'s business: the scheduler only hands it a resolved brief
//! and a cancellation token, and takes back named outputs or an error.
//!
//! Not here: checking the graph (`graph`), storing its progress (the
//! [`Progress`] observer is where a store listens).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rein_wire::{AgentError, error::codes};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::graph::{FailurePolicy, Graph, MAX_BACKOFF, TaskSpec};

/// A task's outputs, by name.
pub type Outputs = BTreeMap<String, String>;

/// One attempt of one task, as the runner gets it.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The task as written.
    pub task: TaskSpec,
    /// Its brief with the outputs it references filled in.
    pub brief: String,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// Cancelled when the graph is cancelled, fails, or this attempt runs
    /// out of time: the runner should stop soon after.
    pub cancel: CancellationToken,
}

/// What runs a task. Outputs come back by name; every output the task
/// declares must be there.
pub trait TaskRunner: Send + Sync + 'static {
    /// Run one attempt.
    fn run(&self, attempt: Attempt) -> BoxFuture<'static, Result<Outputs, AgentError>>;
}

/// Where a task is.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskState {
    /// Waiting for its dependencies (or for a place to run).
    Pending,
    /// An attempt is running (or waiting to retry).
    Running {
        /// The attempt's number.
        attempt: u32,
    },
    /// It finished with its outputs.
    Succeeded {
        /// Its outputs.
        outputs: Outputs,
        /// Attempts it took (0: kept from an earlier run).
        attempts: u32,
    },
    /// Its last attempt failed.
    Failed {
        /// The last attempt's error.
        error: AgentError,
        /// Attempts made.
        attempts: u32,
    },
    /// It never ran: a task it depends on failed (or the graph failed).
    Skipped {
        /// The failed task.
        because: String,
    },
    /// The graph was cancelled before it finished.
    Cancelled,
}

impl TaskState {
    /// Whether it ended (any way).
    pub fn is_final(&self) -> bool {
        !matches!(self, TaskState::Pending | TaskState::Running { .. })
    }
}

/// What happened, as it happens: for progress lines and the store.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// An attempt started.
    Started {
        /// The task.
        task: String,
        /// The attempt's number.
        attempt: u32,
    },
    /// An attempt failed; another follows after `wait`.
    Retrying {
        /// The task.
        task: String,
        /// The failed attempt's number.
        attempt: u32,
        /// Why it failed.
        error: AgentError,
        /// The wait before the next.
        wait: Duration,
    },
    /// A task ended (its state says how).
    Ended {
        /// The task.
        task: String,
        /// How.
        state: TaskState,
    },
}

pub use rein_wire::GraphOutcome;

/// Every task's final state, in the graph's order.
#[derive(Debug, Clone)]
pub struct Report {
    /// How it ended.
    pub outcome: GraphOutcome,
    /// (task id, final state).
    pub tasks: Vec<(String, TaskState)>,
}

impl Report {
    /// The state of task `id`.
    pub fn state(&self, id: &str) -> Option<&TaskState> {
        self.tasks.iter().find(|(t, _)| t == id).map(|(_, s)| s)
    }
}

type Observer = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Where a run starts: each task's state, the outputs kept, the
/// dependencies each task waits for, the tasks ready.
type Kept = (
    Vec<TaskState>,
    HashMap<usize, Outputs>,
    Vec<usize>,
    VecDeque<usize>,
);

/// Runs one graph once.
pub struct Scheduler {
    graph: Arc<Graph>,
    runner: Arc<dyn TaskRunner>,
    observer: Option<Observer>,
    cancel: CancellationToken,
    grace: Duration,
    done: HashMap<String, Outputs>,
}

/// How long a cancelled or timed-out attempt is given to stop by itself
/// before it is dropped.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

impl Scheduler {
    /// A scheduler for `graph` whose tasks `runner` runs.
    pub fn new(graph: Graph, runner: Arc<dyn TaskRunner>) -> Self {
        Scheduler {
            graph: Arc::new(graph),
            runner,
            observer: None,
            cancel: CancellationToken::new(),
            grace: DEFAULT_GRACE,
            done: HashMap::new(),
        }
    }

    /// Call `observer` with every step of progress.
    pub fn observe(mut self, observer: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// Tasks that already succeeded (a resumed graph): kept, not run again.
    pub fn with_done(mut self, done: HashMap<String, Outputs>) -> Self {
        self.done = done;
        self
    }

    /// How long a stopped attempt may take to wind down.
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Cancelling this token cancels the graph: no task starts after it
    /// and every running one is told to stop.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    fn tell(&self, progress: Progress) {
        if let Some(observer) = &self.observer {
            observer(&progress);
        }
    }

    /// Run the graph to its end.
    pub async fn run(self) -> Report {
        let graph = self.graph.clone();
        let settings = graph.settings.clone();
        let (mut state, mut outputs, mut waiting, mut ready) = self.kept(&graph);

        // The graph's own stop (fail_graph), apart from a caller's cancel.
        let failing = CancellationToken::new();
        let mut running: JoinSet<Attempted> = JoinSet::new();
        // Which task and attempt each spawned future is, for one that panics.
        let mut attempts: HashMap<tokio::task::Id, (usize, u32)> = HashMap::new();
        loop {
            let stopped = self.cancel.is_cancelled() || failing.is_cancelled();
            while !stopped && running.len() < settings.max_parallel {
                let Some(i) = ready.pop_front() else { break };
                let brief = graph.brief_of(i, &outputs);
                state[i] = TaskState::Running { attempt: 1 };
                self.tell(Progress::Started {
                    task: graph.tasks[i].id.clone(),
                    attempt: 1,
                });
                let id = self.spawn(&mut running, &failing, i, brief, 1, Duration::ZERO);
                attempts.insert(id, (i, 1));
            }
            let Some(joined) = running.join_next_with_id().await else {
                break;
            };
            let Some((i, attempt, result)) = attempt_of(&graph, &mut attempts, joined) else {
                continue;
            };
            let task = &graph.tasks[i];
            let result = result.and_then(|out| with_outputs(task, out));
            let cancelled = self.cancel.is_cancelled() || failing.is_cancelled();
            let ended = match result {
                Ok(out) => {
                    for &d in &graph.dependents[i] {
                        waiting[d] -= 1;
                        if waiting[d] == 0 && state[d] == TaskState::Pending {
                            ready.push_back(d);
                        }
                    }
                    outputs.insert(i, out.clone());
                    TaskState::Succeeded {
                        outputs: out,
                        attempts: attempt,
                    }
                }
                Err(_) if cancelled => TaskState::Cancelled,
                Err(error) if error.code == codes::CANCELLED => TaskState::Cancelled,
                Err(error) if attempt <= task.retries.unwrap_or(settings.retries) => {
                    let wait = backoff(settings.backoff, attempt);
                    self.tell(Progress::Retrying {
                        task: task.id.clone(),
                        attempt,
                        error,
                        wait,
                    });
                    state[i] = TaskState::Running {
                        attempt: attempt + 1,
                    };
                    self.tell(Progress::Started {
                        task: task.id.clone(),
                        attempt: attempt + 1,
                    });
                    let brief = graph.brief_of(i, &outputs);
                    let id = self.spawn(&mut running, &failing, i, brief, attempt + 1, wait);
                    attempts.insert(id, (i, attempt + 1));
                    continue;
                }
                Err(error) => {
                    self.failed(&graph, i, &mut state, &mut ready, &failing);
                    TaskState::Failed {
                        error,
                        attempts: attempt,
                    }
                }
            };
            state[i] = ended;
            self.tell(Progress::Ended {
                task: task.id.clone(),
                state: state[i].clone(),
            });
        }
        self.cancel_unstarted(&graph, &mut state);
        let outcome = self.outcome(&state, &failing);
        Report {
            outcome,
            tasks: graph
                .tasks
                .iter()
                .map(|t| t.id.clone())
                .zip(state)
                .collect(),
        }
    }

    /// Whatever did not start: cancelled, and said so.
    fn cancel_unstarted(&self, graph: &Graph, state: &mut [TaskState]) {
        for (i, s) in state.iter_mut().enumerate() {
            if !s.is_final() {
                *s = TaskState::Cancelled;
                self.tell(Progress::Ended {
                    task: graph.tasks[i].id.clone(),
                    state: s.clone(),
                });
            }
        }
    }

    /// Where the run starts: tasks kept from before succeeded (with their
    /// outputs), the dependencies each task still waits for, the tasks
    /// ready now.
    fn kept(&self, graph: &Graph) -> Kept {
        let n = graph.tasks.len();
        let mut state: Vec<TaskState> = vec![TaskState::Pending; n];
        let mut outputs: HashMap<usize, Outputs> = HashMap::new();
        let mut waiting: Vec<usize> = graph.deps.iter().map(Vec::len).collect();
        let mut ready: VecDeque<usize> = VecDeque::new();
        for (i, task) in graph.tasks.iter().enumerate() {
            if let Some(kept) = self.done.get(&task.id) {
                state[i] = TaskState::Succeeded {
                    outputs: kept.clone(),
                    attempts: 0,
                };
                outputs.insert(i, kept.clone());
            }
        }
        for (i, s) in state.iter().enumerate() {
            if let TaskState::Succeeded { .. } = s {
                for &d in &graph.dependents[i] {
                    waiting[d] -= 1;
                }
            }
        }
        ready.extend((0..n).filter(|&i| waiting[i] == 0 && state[i] == TaskState::Pending));
        (state, outputs, waiting, ready)
    }

    /// Task `i` failed for good: its dependents are skipped, or the whole
    /// graph stops (`failing`), as the failure policy says.
    fn failed(
        &self,
        graph: &Graph,
        i: usize,
        state: &mut [TaskState],
        ready: &mut VecDeque<usize>,
        failing: &CancellationToken,
    ) {
        let task = &graph.tasks[i];
        match graph.settings.on_failure {
            FailurePolicy::SkipDependents => {
                for d in descendants(graph, i) {
                    if state[d] == TaskState::Pending {
                        state[d] = TaskState::Skipped {
                            because: task.id.clone(),
                        };
                        ready.retain(|&r| r != d);
                        self.tell(Progress::Ended {
                            task: graph.tasks[d].id.clone(),
                            state: state[d].clone(),
                        });
                    }
                }
            }
            FailurePolicy::FailGraph => {
                failing.cancel();
                for (d, s) in state.iter_mut().enumerate() {
                    if *s == TaskState::Pending {
                        *s = TaskState::Skipped {
                            because: task.id.clone(),
                        };
                        self.tell(Progress::Ended {
                            task: graph.tasks[d].id.clone(),
                            state: s.clone(),
                        });
                    }
                }
                ready.clear();
            }
        }
    }

    /// How the run ended, from its tasks' states.
    fn outcome(&self, state: &[TaskState], failing: &CancellationToken) -> GraphOutcome {
        if state
            .iter()
            .all(|s| matches!(s, TaskState::Succeeded { .. }))
        {
            GraphOutcome::Succeeded
        } else if self.cancel.is_cancelled() && !failing.is_cancelled() {
            GraphOutcome::Cancelled
        } else if state
            .iter()
            .any(|s| matches!(s, TaskState::Failed { .. } | TaskState::Skipped { .. }))
        {
            GraphOutcome::Failed
        } else {
            GraphOutcome::Cancelled
        }
    }

    /// Start attempt `attempt` of task `i` after `wait`, under its time
    /// limit, stopped by the graph's cancel or `failing`.
    fn spawn(
        &self,
        running: &mut JoinSet<Attempted>,
        failing: &CancellationToken,
        i: usize,
        brief: String,
        attempt: u32,
        wait: Duration,
    ) -> tokio::task::Id {
        let task = self.graph.tasks[i].clone();
        let limit = task.timeout.unwrap_or(self.graph.settings.timeout);
        let token = self.cancel.child_token();
        let graph_stop = (self.cancel.clone(), failing.clone());
        let runner = self.runner.clone();
        let grace = self.grace;
        running
            .spawn(async move {
                let stop = async {
                    tokio::select! {
                        () = graph_stop.0.cancelled() => {}
                        () = graph_stop.1.cancelled() => {}
                    }
                };
                tokio::pin!(stop);
                if !wait.is_zero() {
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = &mut stop => return (i, attempt, Err(cancelled(&task.id))),
                    }
                }
                let id = task.id.clone();
                let run = runner.run(Attempt {
                    task,
                    brief,
                    attempt,
                    cancel: token.clone(),
                });
                tokio::pin!(run);
                let result = tokio::select! {
                    result = &mut run => result,
                    () = tokio::time::sleep(limit) => {
                        token.cancel();
                        let _ = tokio::time::timeout(grace, &mut run).await;
                        Err(AgentError::new(
                            codes::TASK_TIMED_OUT,
                            format!(
                                "task `{id}` took longer than {} (attempt {attempt})",
                                humantime::format_duration(limit)
                            ),
                        ))
                    }
                    () = &mut stop => {
                        token.cancel();
                        match tokio::time::timeout(grace, &mut run).await {
                            // Work that finished as it was stopped is kept.
                            Ok(Ok(outputs)) => Ok(outputs),
                            _ => Err(cancelled(&id)),
                        }
                    }
                };
                (i, attempt, result)
            })
            .id()
    }
}

fn cancelled(task: &str) -> AgentError {
    AgentError::new(codes::CANCELLED, format!("task `{task}` was cancelled"))
}

/// The wait before attempt `attempt + 1`: `base`, doubled per attempt,
/// at most [`MAX_BACKOFF`].
fn backoff(base: Duration, attempt: u32) -> Duration {
    base.saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)))
        .min(MAX_BACKOFF)
}

/// Every task that depends on `task`, directly or not.
fn descendants(graph: &Graph, task: usize) -> Vec<usize> {
    let mut seen = vec![false; graph.tasks.len()];
    let mut stack = graph.dependents[task].clone();
    let mut out = Vec::new();
    while let Some(d) = stack.pop() {
        if !std::mem::replace(&mut seen[d], true) {
            out.push(d);
            stack.extend(graph.dependents[d].iter().copied());
        }
    }
    out.sort_unstable();
    out
}
/// What one attempt's future gives back: its task, its attempt, its result.
type Attempted = (usize, u32, Result<Outputs, AgentError>);

/// Which task and attempt a joined future was, and its result — a panic
/// is that attempt's `internal` failure; `None` for a future this run does
/// not know.
fn attempt_of(
    graph: &Graph,
    attempts: &mut HashMap<tokio::task::Id, (usize, u32)>,
    joined: Result<(tokio::task::Id, Attempted), tokio::task::JoinError>,
) -> Option<Attempted> {
    match joined {
        Ok((id, done)) => {
            attempts.remove(&id);
            Some(done)
        }
        Err(err) => {
            let (i, attempt) = attempts.remove(&err.id())?;
            tracing::error!(error = %err, task = %graph.tasks[i].id, "a task's attempt panicked");
            let error = AgentError::new(
                codes::INTERNAL,
                format!("task `{}`'s runner panicked", graph.tasks[i].id),
            );
            Some((i, attempt, Err(error)))
        }
    }
}

/// `out` when it has every output `task` names; else the missing one's
/// `task_output_missing`.
fn with_outputs(task: &TaskSpec, out: Outputs) -> Result<Outputs, AgentError> {
    match task.outputs.iter().find(|name| !out.contains_key(*name)) {
        Some(missing) => Err(AgentError::new(
            codes::TASK_OUTPUT_MISSING,
            format!("task `{}` finished without its output `{missing}`", task.id),
        )),
        None => Ok(out),
    }
}
