//! The scheduler's rules, on a runner that is a plain function: fan-out
//! and fan-in under the parallel limit, outputs flowing into briefs,
//! retries with a doubling wait, each failure policy, a time limit, a
//! cancellation that reaches running tasks, and a resumed graph that keeps
//! what finished. Time is tokio's paused clock, so waits cost nothing and
//! the order is exact.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test's answer"
)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_orchestrator::{
    Attempt, FailurePolicy, GraphOutcome, GraphSpec, Outputs, Progress, Scheduler, TaskRunner,
    TaskSpec, TaskState,
};
use rein_wire::{AgentError, error::codes};

type Behaviour = dyn Fn(Attempt) -> BoxFuture<'static, Result<Outputs, AgentError>> + Send + Sync;

/// A runner that is a function, counting what runs at once.
struct FnRunner {
    behaviour: Box<Behaviour>,
    now: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    briefs: Arc<Mutex<HashMap<String, String>>>,
}

impl FnRunner {
    fn new(
        behaviour: impl Fn(Attempt) -> BoxFuture<'static, Result<Outputs, AgentError>>
        + Send
        + Sync
        + 'static,
    ) -> Arc<Self> {
        Arc::new(FnRunner {
            behaviour: Box::new(behaviour),
            now: Arc::default(),
            most: Arc::default(),
            briefs: Arc::default(),
        })
    }
}

impl TaskRunner for FnRunner {
    fn run(&self, attempt: Attempt) -> BoxFuture<'static, Result<Outputs, AgentError>> {
        self.briefs
            .lock()
            .unwrap()
            .insert(attempt.task.id.clone(), attempt.brief.clone());
        let now = self.now.clone();
        let running = now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(running, Ordering::SeqCst);
        let work = (self.behaviour)(attempt);
        async move {
            let result = work.await;
            now.fetch_sub(1, Ordering::SeqCst);
            result
        }
        .boxed()
    }
}

/// A runner whose tasks run until told to stop, counting each stop.
fn stops_when_told(told: Arc<AtomicUsize>) -> Arc<FnRunner> {
    FnRunner::new(move |attempt| {
        let told = told.clone();
        async move {
            attempt.cancel.cancelled().await;
            told.fetch_add(1, Ordering::SeqCst);
            Err(AgentError::new(codes::CANCELLED, "stopped"))
        }
        .boxed()
    })
}

fn outputs(pairs: &[(&str, &str)]) -> Outputs {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn spec(tasks: Vec<TaskSpec>, settings: impl FnOnce(&mut GraphSpec)) -> rein_orchestrator::Graph {
    let mut spec = GraphSpec {
        tasks,
        ..GraphSpec::default()
    };
    settings(&mut spec);
    spec.check().unwrap()
}

/// Everything the observer heard.
fn heard(scheduler: Scheduler) -> (Scheduler, Arc<Mutex<Vec<Progress>>>) {
    let log: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let into = log.clone();
    (
        scheduler.observe(move |p| into.lock().unwrap().push(p.clone())),
        log,
    )
}

#[tokio::test(start_paused = true)]
async fn fan_out_and_in_under_the_limit_with_outputs_in_the_briefs() {
    // plan -> five parallel parts -> join.
    let mut tasks = vec![TaskSpec::new("plan", "make a plan").yields(&["plan"])];
    for i in 0..5 {
        tasks.push(
            TaskSpec::new(
                format!("part{i}"),
                format!("do part {i} of {{{{plan.plan}}}}"),
            )
            .after(&["plan"])
            .yields(&["text"]),
        );
    }
    let parts: Vec<String> = (0..5).map(|i| format!("part{i}")).collect();
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    let join_brief: String = parts
        .iter()
        .map(|p| format!("[{{{{{p}.text}}}}]"))
        .collect();
    tasks.push(
        TaskSpec::new("join", join_brief)
            .after(&refs)
            .yields(&["all"]),
    );
    let graph = spec(tasks, |g| g.graph.max_parallel = 2);

    let runner = FnRunner::new(|attempt| {
        async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let id = attempt.task.id.clone();
            Ok(match id.as_str() {
                // An output that looks like a reference stays as it is.
                "plan" => outputs(&[("plan", "P {{part0.text}}")]),
                "join" => outputs(&[("all", &attempt.brief)]),
                _ => outputs(&[("text", &id)]),
            })
        }
        .boxed()
    });
    let report = Scheduler::new(graph, runner.clone()).run().await;
    assert_eq!(report.outcome, GraphOutcome::Succeeded);
    assert_eq!(runner.most.load(Ordering::SeqCst), 2, "the parallel limit");
    let briefs = runner.briefs.lock().unwrap().clone();
    assert_eq!(briefs["part3"], "do part 3 of P {{part0.text}}");
    assert_eq!(briefs["join"], "[part0][part1][part2][part3][part4]");
    match report.state("join").unwrap() {
        TaskState::Succeeded { outputs, attempts } => {
            assert_eq!(outputs["all"], "[part0][part1][part2][part3][part4]");
            assert_eq!(*attempts, 1);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_failing_task_is_retried_with_a_doubling_wait_then_succeeds() {
    let graph = spec(vec![TaskSpec::new("flaky", "try")], |g| {
        g.graph.retries = 3;
        g.graph.backoff = Duration::from_secs(1);
    });
    let tries = Arc::new(AtomicUsize::new(0));
    let counted = tries.clone();
    let runner = FnRunner::new(move |_| {
        let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            if n < 3 {
                Err(AgentError::new(
                    codes::PROVIDER_UNAVAILABLE,
                    format!("try {n} failed"),
                ))
            } else {
                Ok(Outputs::new())
            }
        }
        .boxed()
    });
    let started = tokio::time::Instant::now();
    let (scheduler, log) = heard(Scheduler::new(graph, runner));
    let report = scheduler.run().await;
    assert_eq!(report.outcome, GraphOutcome::Succeeded);
    assert_eq!(tries.load(Ordering::SeqCst), 3);
    let waits: Vec<Duration> = log
        .lock()
        .unwrap()
        .iter()
        .filter_map(|p| match p {
            Progress::Retrying { wait, .. } => Some(*wait),
            _ => None,
        })
        .collect();
    assert_eq!(waits, [Duration::from_secs(1), Duration::from_secs(2)]);
    assert!(started.elapsed() >= Duration::from_secs(3));
    assert!(matches!(
        report.state("flaky"),
        Some(TaskState::Succeeded { attempts: 3, .. })
    ));
}

fn failing_graph(policy: FailurePolicy) -> rein_orchestrator::Graph {
    // bad fails for good; after_bad depends on it (and then_more on that);
    // slow is independent and takes a while; later runs after slow.
    spec(
        vec![
            TaskSpec::new("bad", "fail"),
            TaskSpec::new("after_bad", "x").after(&["bad"]),
            TaskSpec::new("then_more", "x").after(&["after_bad"]),
            TaskSpec::new("slow", "x"),
            TaskSpec::new("later", "x").after(&["slow"]),
        ],
        |g| {
            g.graph.on_failure = policy;
            g.graph.retries = 1;
            g.graph.max_parallel = 4;
        },
    )
}

fn failing_runner() -> Arc<FnRunner> {
    FnRunner::new(|attempt| {
        async move {
            match attempt.task.id.as_str() {
                "bad" => Err(AgentError::new(codes::AGENT_UNFINISHED, "no answer")),
                "slow" => {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(60)) => Ok(Outputs::new()),
                        () = attempt.cancel.cancelled() => Err(AgentError::new(codes::CANCELLED, "told to stop")),
                    }
                }
                _ => Ok(Outputs::new()),
            }
        }
        .boxed()
    })
}

#[tokio::test(start_paused = true)]
async fn skip_dependents_skips_only_what_depends_on_the_failure() {
    let report = Scheduler::new(
        failing_graph(FailurePolicy::SkipDependents),
        failing_runner(),
    )
    .run()
    .await;
    assert_eq!(report.outcome, GraphOutcome::Failed);
    assert!(matches!(
        report.state("bad"),
        Some(TaskState::Failed { attempts: 2, error }) if error.code == codes::AGENT_UNFINISHED
    ));
    for skipped in ["after_bad", "then_more"] {
        assert_eq!(
            report.state(skipped),
            Some(&TaskState::Skipped {
                because: "bad".into()
            }),
            "{skipped}"
        );
    }
    for ran in ["slow", "later"] {
        assert!(
            matches!(report.state(ran), Some(TaskState::Succeeded { .. })),
            "{ran}: {:?}",
            report.state(ran)
        );
    }
}

#[tokio::test(start_paused = true)]
async fn fail_graph_cancels_running_tasks_and_skips_the_rest() {
    let runner = failing_runner();
    let report = Scheduler::new(failing_graph(FailurePolicy::FailGraph), runner.clone())
        .run()
        .await;
    assert_eq!(report.outcome, GraphOutcome::Failed);
    assert!(matches!(
        report.state("bad"),
        Some(TaskState::Failed { .. })
    ));
    // slow was running: told to stop, it ended cancelled.
    assert_eq!(report.state("slow"), Some(&TaskState::Cancelled));
    for skipped in ["after_bad", "then_more", "later"] {
        assert_eq!(
            report.state(skipped),
            Some(&TaskState::Skipped {
                because: "bad".into()
            }),
            "{skipped}"
        );
    }
    assert_eq!(
        runner.now.load(Ordering::SeqCst),
        0,
        "nothing is left running"
    );
}

#[tokio::test(start_paused = true)]
async fn an_attempt_over_its_time_limit_is_stopped_and_counted_failed() {
    let graph = spec(
        vec![TaskSpec {
            timeout: Some(Duration::from_secs(10)),
            ..TaskSpec::new("stuck", "x")
        }],
        |g| g.graph.retries = 1,
    );
    let stopped = Arc::new(AtomicUsize::new(0));
    let runner = stops_when_told(stopped.clone());
    let started = tokio::time::Instant::now();
    let report = Scheduler::new(graph, runner).run().await;
    assert_eq!(report.outcome, GraphOutcome::Failed);
    match report.state("stuck").unwrap() {
        TaskState::Failed { error, attempts } => {
            assert_eq!(error.code, codes::TASK_TIMED_OUT);
            assert_eq!(*attempts, 2);
        }
        other => panic!("{other:?}"),
    }
    // Each attempt was told to stop (its token), not just dropped.
    assert_eq!(stopped.load(Ordering::SeqCst), 2);
    assert!(started.elapsed() >= Duration::from_secs(20));
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_graph_reaches_every_running_task() {
    let graph = spec(
        (0..6)
            .map(|i| TaskSpec::new(format!("t{i}"), "x"))
            .collect(),
        |g| g.graph.max_parallel = 3,
    );
    let told = Arc::new(AtomicUsize::new(0));
    let runner = stops_when_told(told.clone());
    let scheduler = Scheduler::new(graph, runner.clone());
    let cancel = scheduler.cancel_token();
    let run = tokio::spawn(scheduler.run());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(runner.now.load(Ordering::SeqCst), 3);
    cancel.cancel();
    let report = run.await.unwrap();
    assert_eq!(report.outcome, GraphOutcome::Cancelled);
    assert_eq!(
        told.load(Ordering::SeqCst),
        3,
        "the three running were told"
    );
    assert!(report.tasks.iter().all(|(_, s)| *s == TaskState::Cancelled));
    assert_eq!(runner.now.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_missing_output_or_a_panic_is_a_failed_attempt() {
    let graph = spec(
        vec![
            TaskSpec::new("quiet", "x").yields(&["report"]),
            TaskSpec::new("boom", "x"),
        ],
        |g| g.graph.retries = 0,
    );
    let runner = FnRunner::new(|attempt| {
        async move {
            if attempt.task.id == "boom" {
                panic!("a runner's bug");
            }
            Ok(Outputs::new())
        }
        .boxed()
    });
    let report = Scheduler::new(graph, runner).run().await;
    assert!(matches!(
        report.state("quiet"),
        Some(TaskState::Failed { error, .. }) if error.code == codes::TASK_OUTPUT_MISSING
    ));
    assert!(matches!(
        report.state("boom"),
        Some(TaskState::Failed { error, .. }) if error.code == codes::INTERNAL
    ));
}

#[tokio::test(start_paused = true)]
async fn a_resumed_graph_keeps_finished_tasks_and_runs_the_rest() {
    let graph = spec(
        vec![
            TaskSpec::new("a", "x").yields(&["out"]),
            TaskSpec::new("b", "from {{a.out}}").after(&["a"]),
        ],
        |_| {},
    );
    let runner = FnRunner::new(|attempt| {
        async move {
            assert_ne!(
                attempt.task.id, "a",
                "a finished before and is not run again"
            );
            Ok(Outputs::new())
        }
        .boxed()
    });
    let done = HashMap::from([("a".to_owned(), outputs(&[("out", "kept")]))]);
    let report = Scheduler::new(graph, runner.clone())
        .with_done(done)
        .run()
        .await;
    assert_eq!(report.outcome, GraphOutcome::Succeeded);
    assert_eq!(runner.briefs.lock().unwrap()["b"], "from kept");
    assert!(matches!(
        report.state("a"),
        Some(TaskState::Succeeded { attempts: 0, .. })
    ));
}
