//! Running a 1,000-task graph: the scheduler alone (a runner that answers
//! at once) and every task a conversation (the scripted model, answering at
//! once, on the in-memory store) — the orchestrator's overhead per task,
//! with nothing of a model's time in it.
//!
//! Run with `cargo xtask bench graph`.

#![expect(
    clippy::unwrap_used,
    reason = "a benchmark harness: a failed set-up should stop it loudly"
)]

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_orchestrator::{
    Attempt, Graph, GraphOutcome, GraphSpec, Outputs, Scheduler, TaskRunner, TaskSpec,
};
use rein_runner::{ConversationTasks, Profile, ToolLoading};
use rein_sessions::{MemoryStore, Store};
use rein_testing::{FakeToolBackend, Rule, ScriptedBrain};
use rein_wire::AgentError;

const TASKS: usize = 1_000;

/// One planning task, 998 parts after it, one join after all of them.
fn graph() -> Graph {
    let mut tasks = vec![TaskSpec::new("plan", "Plan the work.").yields(&["answer"])];
    let mut parts = Vec::new();
    for i in 0..TASKS - 2 {
        let id = format!("part{i}");
        tasks.push(
            TaskSpec::new(&id, format!("Do part {i} of {{{{plan.answer}}}}")).after(&["plan"]),
        );
        parts.push(id);
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    tasks.push(TaskSpec::new("join", "Join the parts.").after(&refs));
    let mut spec = GraphSpec {
        tasks,
        ..GraphSpec::default()
    };
    spec.graph.max_parallel = 16;
    spec.check().unwrap()
}

/// A runner that answers at once.
struct Instant;

impl TaskRunner for Instant {
    fn run(&self, attempt: Attempt) -> BoxFuture<'static, Result<Outputs, AgentError>> {
        async move { Ok([("answer".to_owned(), attempt.brief)].into()) }.boxed()
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("graph");
    group.sample_size(10);
    group.throughput(Throughput::Elements(TASKS as u64));
    group.bench_function("scheduler_only/1000_tasks", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let report = Scheduler::new(graph(), Arc::new(Instant)).run().await;
                assert_eq!(report.outcome, GraphOutcome::Succeeded);
            })
        })
    });
    group.bench_function("conversations/1000_tasks", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
                let brain = Arc::new(ScriptedBrain::new(vec![Rule::reply("plan", "A plan.")]));
                let profile = Profile {
                    tools: ToolLoading::Native,
                    ..Profile::new("worker", "m")
                };
                let tasks = ConversationTasks::new(
                    store,
                    brain,
                    Arc::new(FakeToolBackend::new(&[]).unwrap()),
                    profile,
                );
                let report = Scheduler::new(graph(), Arc::new(tasks)).run().await;
                assert_eq!(report.outcome, GraphOutcome::Succeeded);
            })
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
