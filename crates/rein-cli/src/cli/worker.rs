//! `rein worker --store postgres://…`: a process that runs graphs' work
//! from a shared PostgreSQL store, beside any number of others on any
//! machine.
//!
//! A worker does two jobs. It *drives* a submitted graph no live process
//! drives (one at a time): the same scheduler `rein run` uses, from the
//! graph's record — so a driver that died is replaced and what finished is
//! kept — except that each task attempt is offered to the workers through
//! the queue ([`QueueTasks`]) instead of run in place. And it *runs* task
//! attempts any driver offered, up to `--tasks` at once, each the
//! conversation `rein run` makes of a task, renewing its claim while it
//! works. A worker that dies loses its claims when they lapse and the
//! next worker takes them; a result is taken only from a claim's current
//! holder, once, so no task completes twice.
//!
//! On a worker, a task sees the blackboard as it was when its attempt was
//! offered; its writes are applied when it finishes, each against the
//! revision it read — one that another task changed meanwhile fails the
//! attempt with `blackboard_conflict` (retried as the task's `retries`
//! say), as the write itself would have.
//!
//! Not here: the queue's rows and claims (`rein::sessions::WorkQueue`),
//! the scheduler (`rein-orchestrator`), a task's conversation
//! (`rein::runner::ConversationTasks`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rein::orchestrator::{Attempt, Blackboard, Entry, Outputs, Scheduler, TaskRunner, TaskSpec};
use rein::runner::{ConversationTasks, GraphRecord};
use rein::sessions::{Claim, ClaimedTask, PgStore, Store, TaskResult, WorkQueue};
use rein::wire::{AgentError, error::codes};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::chat::ProviderArgs;

/// How often an idle worker asks for work, and a driver for results.
const POLL: Duration = Duration::from_millis(200);

/// `rein worker`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkerOptions {
    /// The model provider.
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// The folder the file tools work in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// The agent tasks run unless they name another.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Task attempts run at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub tasks: u16,
    /// How long a claim lasts unrenewed (it is renewed every third of it):
    /// a dead worker's work is taken over this long after it died.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub claim_secs: u64,
    /// Where rein's config lives (set by `rein` from `--home`).
    #[arg(skip)]
    pub home: Option<PathBuf>,
}

/// A task attempt as offered to the workers.
#[derive(Debug, Serialize, Deserialize)]
struct Offered {
    task: TaskSpec,
    brief: String,
    attempt: u32,
    board: BTreeMap<String, Entry>,
}

/// A task attempt's result as its worker gives it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Finished {
    Succeeded {
        outputs: Outputs,
        writes: Vec<rein::orchestrator::Write>,
    },
    Failed {
        error: AgentError,
    },
}

fn say(info: &Mutex<Box<dyn Write + Send>>, line: &str) {
    let mut info = info.lock().unwrap_or_else(|p| p.into_inner());
    let _ = writeln!(info, "{line}");
}

/// Work until SIGTERM or Ctrl-C.
pub async fn run(
    options: WorkerOptions,
    pg: Arc<PgStore>,
    info: Box<dyn Write + Send>,
) -> Result<(), AgentError> {
    let store: Arc<dyn Store> = pg.clone();
    let root = super::session_root::absolute(options.root.as_deref())?;
    let mut setup = Vec::new();
    let surface = rein::compose::for_surface(
        rein::compose::SurfaceWanted {
            home: options.home.clone(),
            root: &root,
            name: options.agent.as_deref(),
            flags: options.provider.spec(),
            verb: "worker",
            default_instructions: "You carry out one task of a larger piece of work, in the person's project folder. Use the tools to look at files. Answer concisely.",
        },
        &store,
        &mut setup,
    )
    .await?;
    let info = Arc::new(Mutex::new(info));
    say(&info, String::from_utf8_lossy(&setup).trim_end());
    let me = format!("worker {} on {}", std::process::id(), host());
    say(&info, &format!("{me}: waiting for work"));
    let worker = Arc::new(Worker {
        store,
        queue: pg.queue(),
        agent: surface.agent,
        named: surface.named,
        me,
        ttl: Duration::from_secs(options.claim_secs),
        info,
    });
    let _servers = surface.mcp;
    let running = Arc::new(tokio::sync::Semaphore::new(usize::from(options.tasks)));
    let mut driving: Option<tokio::task::JoinHandle<()>> = None;
    loop {
        let mut idle = true;
        if driving
            .as_ref()
            .is_none_or(tokio::task::JoinHandle::is_finished)
            && let Some(claim) = worker.queue.claim_graph(&worker.me, worker.ttl).await?
        {
            idle = false;
            driving = Some(tokio::spawn(worker.clone().drive(claim)));
        }
        // Every free place is filled in one claim (one statement, one
        // commit), not one claim a place.
        let free = running.available_permits();
        if free > 0 {
            let tasks = worker
                .queue
                .claim_tasks(&worker.me, worker.ttl, free)
                .await?;
            for task in tasks {
                idle = false;
                // Only this loop takes places: each claimed task has one.
                let place = running.clone().try_acquire_owned().ok();
                let worker = worker.clone();
                tokio::spawn(async move {
                    worker.work(task).await;
                    drop(place);
                });
            }
        }
        if idle {
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                _ = tokio::signal::ctrl_c() => return Ok(()),
            }
        }
    }
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "this host".into())
}

/// What a worker's jobs share.
struct Worker {
    store: Arc<dyn Store>,
    queue: WorkQueue,
    agent: rein::runner::Agent,
    named: BTreeMap<String, rein::runner::Agent>,
    me: String,
    ttl: Duration,
    info: Arc<Mutex<Box<dyn Write + Send>>>,
}

impl Worker {
    /// Renew `claim` every third of the lease until `done` is cancelled;
    /// cancel `lost` when the claim is lost.
    fn keep(
        self: &Arc<Self>,
        claim: Claim,
        graph: bool,
        done: CancellationToken,
        lost: CancellationToken,
    ) {
        let worker = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = done.cancelled() => return,
                    () = tokio::time::sleep(worker.ttl / 3) => {}
                }
                let kept = if graph {
                    worker.queue.renew_graph(&claim, worker.ttl).await
                } else {
                    worker.queue.renew_task(&claim, worker.ttl).await
                };
                if !kept.unwrap_or(false) {
                    lost.cancel();
                    return;
                }
            }
        });
    }

    /// Drive the graph of `claim` to its end from its record.
    async fn drive(self: Arc<Self>, claim: Claim) {
        let graph = claim.graph.clone();
        say(&self.info, &format!("{}: driving graph {graph}", self.me));
        match self.drive_graph(claim).await {
            Ok(outcome) => say(
                &self.info,
                &format!("{}: graph {graph} {outcome:?}", self.me),
            ),
            Err(err) => say(
                &self.info,
                &format!("{}: gave graph {graph} up: {err}", self.me),
            ),
        }
    }

    async fn drive_graph(
        self: &Arc<Self>,
        claim: Claim,
    ) -> Result<rein::orchestrator::GraphOutcome, AgentError> {
        let (record, resumed) = GraphRecord::resume(self.store.clone(), &claim.graph).await?;
        let graph = resumed.spec.check()?;
        let board = Blackboard::restored(resumed.blackboard, record.recorder());
        let tasks = QueueTasks {
            queue: self.queue.clone(),
            graph: claim.graph.clone(),
            board,
        };
        let scheduler = Scheduler::new(graph, Arc::new(tasks))
            .with_done(resumed.done)
            .observe(record.observer(|_| {}));
        let (done, lost) = (CancellationToken::new(), scheduler.cancel_token());
        self.keep(claim.clone(), true, done.clone(), lost);
        let report = scheduler.run().await;
        done.cancel();
        record.finish(report.outcome).await?;
        self.queue.finish_graph(&claim).await?;
        Ok(report.outcome)
    }

    /// Run one claimed task attempt and give its result.
    async fn work(self: Arc<Self>, claimed: ClaimedTask) {
        let claim = claimed.claim.clone();
        let name = format!("task {} (attempt {})", claim.task, claim.attempt);
        say(
            &self.info,
            &format!("{}: running {name} of graph {}", self.me, claim.graph),
        );
        let finished = match serde_json::from_str::<Offered>(&claimed.payload) {
            Ok(offered) => self.attempt(&claim, offered).await,
            Err(err) => Finished::Failed {
                error: AgentError::new(
                    codes::INVALID_INPUT,
                    format!("the task's offer cannot be read: {err}"),
                ),
            },
        };
        let ok = matches!(finished, Finished::Succeeded { .. });
        let text = serde_json::to_string(&finished).unwrap_or_default();
        let line = match self.queue.complete(&claim, ok, &text).await {
            Ok(true) if ok => format!("{name}: done"),
            Ok(true) => format!("{name}: failed"),
            Ok(false) => format!("{name}: another worker has it now; this result is dropped"),
            Err(err) => format!("{name}: its result could not be given: {err}"),
        };
        say(&self.info, &format!("{}: {line}", self.me));
    }

    async fn attempt(self: &Arc<Self>, claim: &Claim, offered: Offered) -> Finished {
        let writes = Arc::new(Mutex::new(Vec::new()));
        let kept = writes.clone();
        let board = Blackboard::restored(offered.board, move |write| {
            kept.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(write.clone());
        });
        let mut tasks = ConversationTasks::of(self.store.clone(), self.agent.clone())
            .in_graph(&claim.graph)
            .with_blackboard(board);
        for (name, agent) in &self.named {
            tasks = tasks.with_agent(name, agent.clone());
        }
        let (done, lost) = (CancellationToken::new(), CancellationToken::new());
        self.keep(claim.clone(), false, done.clone(), lost.clone());
        let result = tasks
            .run(Attempt {
                task: offered.task,
                brief: offered.brief,
                attempt: offered.attempt,
                cancel: lost,
            })
            .await;
        done.cancel();
        match result {
            Ok(outputs) => Finished::Succeeded {
                outputs,
                writes: std::mem::take(&mut *writes.lock().unwrap_or_else(|p| p.into_inner())),
            },
            Err(error) => Finished::Failed { error },
        }
    }
}

/// A graph's tasks offered to the workers: each attempt put in the queue
/// with the blackboard as it is, its result awaited there.
struct QueueTasks {
    queue: WorkQueue,
    graph: String,
    board: Blackboard,
}

impl TaskRunner for QueueTasks {
    fn run(&self, attempt: Attempt) -> BoxFuture<'static, Result<Outputs, AgentError>> {
        let (queue, graph, board) = (self.queue.clone(), self.graph.clone(), self.board.clone());
        Box::pin(async move {
            let task = attempt.task.id.clone();
            let number = i32::try_from(attempt.attempt).unwrap_or(i32::MAX);
            let offered = Offered {
                task: attempt.task,
                brief: attempt.brief,
                attempt: attempt.attempt,
                board: board.snapshot(),
            };
            let payload = serde_json::to_string(&offered).map_err(|err| {
                AgentError::new(codes::INTERNAL, format!("cannot offer the task: {err}"))
            })?;
            queue.enqueue(&graph, &task, number, &payload).await?;
            loop {
                tokio::select! {
                    () = attempt.cancel.cancelled() => {
                        return Err(AgentError::new(codes::CANCELLED, format!("task {task} was cancelled")));
                    }
                    () = tokio::time::sleep(POLL) => {}
                }
                let TaskResult::Done { result, .. } = queue.result(&graph, &task, number).await?
                else {
                    continue;
                };
                return match serde_json::from_str::<Finished>(&result) {
                    Ok(Finished::Succeeded { outputs, writes }) => {
                        for write in writes {
                            board.compare_and_set(
                                &write.key,
                                write.revision.saturating_sub(1),
                                write.value,
                                &write.by,
                            )?;
                        }
                        Ok(outputs)
                    }
                    Ok(Finished::Failed { error }) => Err(error),
                    Err(err) => Err(AgentError::new(
                        codes::INTERNAL,
                        format!("the result of task {task} cannot be read: {err}"),
                    )),
                };
            }
        })
    }
}
