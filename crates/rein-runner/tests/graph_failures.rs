//! Graph tasks as conversations when things go wrong, with the scripted
//! model on a SQLite file: an answer without its declared output is a
//! failed attempt, retried in a fresh session; each failure policy; and a
//! task over its time limit — here one waiting for a person — is stopped
//! without its write running.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test's answer"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::orders::{order_registry, sqlite_store, worker};
use rein_orchestrator::{FailurePolicy, GraphOutcome, GraphSpec, Scheduler, TaskSpec, TaskState};
use rein_runner::ConversationTasks;
use rein_sessions::Store;
use rein_testing::{Rule, ScriptedBrain};
use rein_wire::error::codes;
use serde_json::json;

fn tasks(store: Arc<dyn Store>, runs: Arc<AtomicUsize>) -> ConversationTasks {
    let brain = Arc::new(ScriptedBrain::new(vec![
        // Asked for JSON with `summary`, it answers prose: the output is missing.
        Rule::reply(
            "summarise",
            "Here is a summary in prose, not the JSON asked for.",
        ),
        Rule::reply("count", r#"{"n": "3"}"#),
        Rule::reply("order paper", "Ordering.").and_call("place_order", json!({"item": "paper"})),
    ]));
    ConversationTasks::new(store, brain, Arc::new(order_registry(runs)), worker())
}

fn graph(policy: FailurePolicy) -> rein_orchestrator::Graph {
    let mut spec = GraphSpec {
        tasks: vec![
            TaskSpec::new("summary", "Summarise the notes.").yields(&["summary"]),
            TaskSpec::new("publish", "Count words of {{summary.summary}}.")
                .after(&["summary"])
                .yields(&["n"]),
            TaskSpec::new("tally", "Count the pages.").yields(&["n"]),
        ],
        ..GraphSpec::default()
    };
    spec.graph.on_failure = policy;
    spec.graph.retries = 1;
    spec.graph.backoff = Duration::from_millis(10);
    spec.graph.max_parallel = 1;
    spec.check().unwrap()
}

#[tokio::test]
async fn a_missing_output_is_retried_in_a_fresh_session_then_skips_its_dependents() {
    let (_dir, store) = sqlite_store().await;
    let report = Scheduler::new(
        graph(FailurePolicy::SkipDependents),
        Arc::new(tasks(store.clone(), Arc::default())),
    )
    .run()
    .await;
    assert_eq!(report.outcome, GraphOutcome::Failed);
    match report.state("summary").unwrap() {
        TaskState::Failed { error, attempts } => {
            assert_eq!(error.code, codes::TASK_OUTPUT_MISSING);
            assert_eq!(*attempts, 2);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        report.state("publish"),
        Some(&TaskState::Skipped {
            because: "summary".into()
        })
    );
    assert!(matches!(
        report.state("tally"),
        Some(TaskState::Succeeded { .. })
    ));
    // Two attempts of summary (a session each) and tally's one.
    assert_eq!(store.list_sessions(10).await.unwrap().len(), 3);
}

#[tokio::test]
async fn fail_graph_skips_everything_not_yet_run() {
    let (_dir, store) = sqlite_store().await;
    let report = Scheduler::new(
        graph(FailurePolicy::FailGraph),
        Arc::new(tasks(store.clone(), Arc::default())),
    )
    .run()
    .await;
    assert_eq!(report.outcome, GraphOutcome::Failed);
    for skipped in ["publish", "tally"] {
        assert_eq!(
            report.state(skipped),
            Some(&TaskState::Skipped {
                because: "summary".into()
            }),
            "{skipped}"
        );
    }
    assert_eq!(
        store.list_sessions(10).await.unwrap().len(),
        2,
        "only summary ran"
    );
}

#[tokio::test]
async fn a_task_over_its_time_limit_while_waiting_for_a_person_is_stopped_unrun() {
    let (_dir, store) = sqlite_store().await;
    let runs = Arc::new(AtomicUsize::new(0));
    let mut spec = GraphSpec {
        tasks: vec![TaskSpec {
            timeout: Some(Duration::from_millis(600)),
            ..TaskSpec::new("buy", "Order paper.")
        }],
        ..GraphSpec::default()
    };
    spec.graph.retries = 0;
    let report = Scheduler::new(
        spec.check().unwrap(),
        Arc::new(tasks(store.clone(), runs.clone())),
    )
    .run()
    .await;
    match report.state("buy").unwrap() {
        TaskState::Failed { error, .. } => assert_eq!(error.code, codes::TASK_TIMED_OUT),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "nobody decided: the write never ran"
    );
    // Its session was given back: a person can still see and decide it.
    let session = store.list_sessions(1).await.unwrap().remove(0);
    assert_eq!(store.control(&session.id).await.unwrap().pending.len(), 1);
    let lease = store
        .acquire(&session.id, "person", Duration::from_secs(5))
        .await
        .unwrap();
    store.release(&lease).await.unwrap();
}
