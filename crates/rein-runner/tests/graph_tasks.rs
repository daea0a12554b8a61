//! Graph tasks as conversations, on a real SQLite file with the scripted
//! model: outputs flow from one task's answer into the next one's brief,
//! each task is an ordinary session, a task's write waits for a person
//! deciding from another surface (and only that task waits), and a
//! cancelled graph stops a task paused at an approval without running it.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test's answer"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::orders::{order_registry, sqlite_store, worker};
use rein_approvals::LeaseScope;
use rein_approvals::{Answer, Surface};
use rein_orchestrator::{GraphOutcome, GraphSpec, Scheduler, TaskSpec, TaskState};
use rein_runner::ConversationTasks;
use rein_testing::{Rule, ScriptedBrain};
use serde_json::json;

#[tokio::test]
async fn outputs_flow_through_conversations_each_in_its_own_session() {
    let (_dir, store) = sqlite_store().await;
    let brain = Arc::new(ScriptedBrain::new(vec![
        Rule::reply(
            "research the topic",
            r#"{"notes": "tides follow the moon"}"#,
        ),
        Rule::reply(
            "summarise for children",
            r#"{"text": "the moon pulls the sea"}"#,
        ),
        Rule::reply(
            "summarise for sailors",
            r#"{"text": "mind the spring tides"}"#,
        ),
        Rule::reply("put together", "Both versions, joined."),
    ]));
    let tasks = ConversationTasks::new(
        store.clone(),
        brain,
        Arc::new(order_registry(Arc::default())),
        worker(),
    );
    let graph = GraphSpec {
        tasks: vec![
            TaskSpec::new("research", "Research the topic of tides.").yields(&["notes"]),
            TaskSpec::new("kids", "Summarise for children: {{research.notes}}")
                .after(&["research"])
                .yields(&["text"]),
            TaskSpec::new("sailors", "Summarise for sailors: {{research.notes}}")
                .after(&["research"])
                .yields(&["text"]),
            TaskSpec::new("join", "Put together: {{kids.text}} / {{sailors.text}}")
                .after(&["kids", "sailors"]),
        ],
        ..GraphSpec::default()
    }
    .check()
    .unwrap();
    let report = Scheduler::new(graph, Arc::new(tasks)).run().await;
    assert_eq!(
        report.outcome,
        GraphOutcome::Succeeded,
        "{:?}",
        report.tasks
    );
    match report.state("kids").unwrap() {
        TaskState::Succeeded { outputs, .. } => {
            assert_eq!(outputs["text"], "the moon pulls the sea");
        }
        other => panic!("{other:?}"),
    }
    // Every task is an ordinary session, its brief (filled in) the prompt.
    let sessions = store.list_sessions(10).await.unwrap();
    assert_eq!(sessions.len(), 4);
    let mut prompts = Vec::new();
    for session in &sessions {
        let turns = store.turns(&session.id).await.unwrap();
        prompts.push(turns[0].prompt.clone());
    }
    assert!(
        prompts
            .iter()
            .any(|p| p.starts_with("Put together: the moon pulls the sea / mind the spring tides")),
        "{prompts:?}"
    );
}

fn ordering_graph() -> rein_orchestrator::Graph {
    GraphSpec {
        tasks: vec![
            TaskSpec::new("buy", "Order paper for the office."),
            TaskSpec::new("note", "Research the topic of paper."),
        ],
        ..GraphSpec::default()
    }
    .check()
    .unwrap()
}

fn ordering_brain() -> Arc<ScriptedBrain> {
    Arc::new(ScriptedBrain::new(vec![
        Rule::reply("order paper", "Ordering.").and_call("place_order", json!({"item": "paper"})),
        Rule::reply("research the topic", "Paper is made of wood."),
    ]))
}

/// The person says yes to `paused`, from another surface (as `rein
/// approve` does).
async fn approve(
    store: &Arc<dyn rein_sessions::Store>,
    paused: &rein_runner::TaskApproval,
) -> Result<rein_approvals::Delivery, rein_wire::AgentError> {
    rein_approvals::decide(
        store.as_ref(),
        &paused.session,
        &paused.request.approval_id,
        Answer::Approve(LeaseScope::Once),
        &Surface::command("approve"),
    )
    .await
}

fn succeeded_with_one_write(report: &rein_orchestrator::Report, runs: &AtomicUsize) {
    assert_eq!(
        report.outcome,
        GraphOutcome::Succeeded,
        "{:?}",
        report.tasks
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the approved write ran once"
    );
}

#[tokio::test]
async fn a_tasks_write_waits_for_a_person_deciding_from_another_surface() {
    let (_dir, store) = sqlite_store().await;
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tasks = ConversationTasks::new(
        store.clone(),
        ordering_brain(),
        Arc::new(order_registry(runs.clone())),
        worker(),
    );
    let mut asked = tasks.approvals();
    let run = tokio::spawn(Scheduler::new(ordering_graph(), Arc::new(tasks)).run());
    let paused = tokio::time::timeout(Duration::from_secs(30), asked.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(paused.task, "buy");
    assert_eq!(paused.request.tool, "place_order");
    // Nothing decides for the person: the write has not run, and waits.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(!run.is_finished());
    // The person decides from another surface (as `rein approve` does).
    let delivery = approve(&store, &paused).await.unwrap();
    assert_eq!(delivery, rein_approvals::Delivery::Queued);
    let report = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .unwrap()
        .unwrap();
    succeeded_with_one_write(&report, &runs);
}

#[tokio::test]
async fn a_cancelled_graph_stops_a_task_waiting_for_approval_without_running_it() {
    let (_dir, store) = sqlite_store().await;
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tasks = ConversationTasks::new(
        store.clone(),
        ordering_brain(),
        Arc::new(order_registry(runs.clone())),
        worker(),
    );
    let mut asked = tasks.approvals();
    let scheduler = Scheduler::new(ordering_graph(), Arc::new(tasks));
    let cancel = scheduler.cancel_token();
    let run = tokio::spawn(scheduler.run());
    let paused = tokio::time::timeout(Duration::from_secs(30), asked.recv())
        .await
        .unwrap()
        .unwrap();
    cancel.cancel();
    let report = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(report.outcome, GraphOutcome::Cancelled);
    assert_eq!(report.state("buy"), Some(&TaskState::Cancelled));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the write never ran");
    // The approval is still the person's to see; nobody decided it.
    let control = store.control(&paused.session).await.unwrap();
    assert!(
        control
            .pending
            .iter()
            .any(|p| p.approval_id == paused.request.approval_id)
    );
}

#[tokio::test]
async fn a_task_left_waiting_is_carried_on_in_its_session_with_the_answer_given_meanwhile() {
    let (_dir, store) = sqlite_store().await;
    let runs = Arc::new(AtomicUsize::new(0));
    let tasks = |runs: &Arc<AtomicUsize>| {
        ConversationTasks::new(
            store.clone(),
            ordering_brain(),
            Arc::new(order_registry(runs.clone())),
            worker(),
        )
        .in_graph("graph-1")
    };
    let mut first = tasks(&runs);
    let mut asked = first.approvals();
    let scheduler = Scheduler::new(ordering_graph(), Arc::new(first));
    let cancel = scheduler.cancel_token();
    let run = tokio::spawn(scheduler.run());
    let paused = tokio::time::timeout(Duration::from_secs(30), asked.recv())
        .await
        .unwrap()
        .unwrap();
    cancel.cancel();
    run.await.unwrap();
    // Answered while nothing runs the graph; and someone else holds the
    // session for a moment (a worker that died, its lease not yet lapsed).
    approve(&store, &paused).await.unwrap();
    let held = store
        .acquire(&paused.session, "a dead worker", Duration::from_secs(2))
        .await
        .unwrap();

    let mut second = tasks(&runs);
    let mut asked = second.approvals();
    let report = tokio::time::timeout(
        Duration::from_secs(30),
        Scheduler::new(ordering_graph(), Arc::new(second)).run(),
    )
    .await
    .unwrap();
    succeeded_with_one_write(&report, &runs);
    assert!(asked.try_recv().is_err(), "nobody was asked again");
    let buys: Vec<_> = store
        .sessions_where("graph", "graph-1", 10)
        .await
        .unwrap()
        .into_iter()
        .filter(|s| s.metadata["graph_task"] == "buy")
        .collect();
    assert_eq!(buys.len(), 1, "carried on in its own session");
    assert_eq!(buys[0].id, paused.session);
    let err = store
        .renew(&held, Duration::from_secs(2))
        .await
        .unwrap_err();
    assert_eq!(
        err.code,
        rein_wire::error::codes::LOCK_LOST,
        "taken once it lapsed"
    );
}

#[tokio::test]
async fn a_task_whose_end_was_lost_is_its_answer_and_its_write_never_runs_twice() {
    let (_dir, store) = sqlite_store().await;
    let runs = Arc::new(AtomicUsize::new(0));
    // Both runs are the same graph; the second knows nothing the first
    // finished (as when rein died before the record held the tasks' ends).
    let run = || {
        let mut tasks = ConversationTasks::new(
            store.clone(),
            ordering_brain(),
            Arc::new(order_registry(runs.clone())),
            worker(),
        )
        .in_graph("graph-2");
        let mut asked = tasks.approvals();
        let store = store.clone();
        tokio::spawn(async move {
            while let Some(paused) = asked.recv().await {
                approve(&store, &paused).await.unwrap();
            }
        });
        Scheduler::new(ordering_graph(), Arc::new(tasks)).run()
    };
    let first = tokio::time::timeout(Duration::from_secs(30), run())
        .await
        .unwrap();
    assert_eq!(first.outcome, GraphOutcome::Succeeded, "{:?}", first.tasks);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let sessions = store.list_sessions(10).await.unwrap().len();

    let second = tokio::time::timeout(Duration::from_secs(30), run())
        .await
        .unwrap();
    assert_eq!(
        second.outcome,
        GraphOutcome::Succeeded,
        "{:?}",
        second.tasks
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the write never ran twice");
    assert_eq!(
        store.list_sessions(10).await.unwrap().len(),
        sessions,
        "nothing ran again"
    );
    match second.state("note").unwrap() {
        TaskState::Succeeded { outputs, .. } => {
            assert_eq!(outputs["answer"], "Paper is made of wood.");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_graphs_record_keeps_what_succeeded_and_the_blackboard_and_holds_the_graph() {
    use rein_orchestrator::{Blackboard, Progress};
    use rein_runner::GraphRecord;

    let (_dir, store) = sqlite_store().await;
    let spec = GraphSpec {
        tasks: vec![
            TaskSpec::new("a", "x").yields(&["out"]),
            TaskSpec::new("b", "y"),
        ],
        ..GraphSpec::default()
    };
    let record = GraphRecord::create(store.clone(), &spec).await.unwrap();
    let session = record.session_id().to_owned();
    let shown = Arc::new(AtomicUsize::new(0));
    let counted = shown.clone();
    let observe = record.observer(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
    });
    let board = Blackboard::restored(Default::default(), record.recorder());
    board.compare_and_set("plan", 0, json!("v1"), "a").unwrap();
    board.compare_and_set("plan", 1, json!("v2"), "a").unwrap();
    observe(&Progress::Ended {
        task: "a".into(),
        state: TaskState::Succeeded {
            outputs: [("out".to_owned(), "kept".to_owned())].into(),
            attempts: 1,
        },
    });
    observe(&Progress::Ended {
        task: "b".into(),
        state: TaskState::Cancelled,
    });
    // While it runs, nobody else drives the graph.
    let second = GraphRecord::resume(store.clone(), &session)
        .await
        .unwrap_err();
    assert_eq!(second.code, rein_wire::error::codes::SESSION_LOCKED);
    drop(observe);
    drop(board);
    record.finish(GraphOutcome::Cancelled).await.unwrap();
    assert_eq!(
        shown.load(Ordering::SeqCst),
        2,
        "each step told once written"
    );

    let (record, resumed) = GraphRecord::resume(store.clone(), &session).await.unwrap();
    assert_eq!(resumed.spec, spec);
    assert_eq!(resumed.done.len(), 1);
    assert_eq!(resumed.done["a"]["out"], "kept");
    assert_eq!(resumed.blackboard["plan"].value, json!("v2"));
    assert_eq!(resumed.blackboard["plan"].revision, 2);
    record.finish(GraphOutcome::Succeeded).await.unwrap();
    // A session that is no graph is refused, and left unlocked.
    let plain = store.create_session(json!({})).await.unwrap();
    let err = GraphRecord::resume(store.clone(), &plain.id)
        .await
        .unwrap_err();
    assert_eq!(err.code, rein_wire::error::codes::INVALID_INPUT);
    let lease = store
        .acquire(&plain.id, "someone", Duration::from_secs(5))
        .await
        .unwrap();
    store.release(&lease).await.unwrap();
}

#[tokio::test]
async fn tasks_share_the_blackboard_and_a_stale_write_gets_the_current_value() {
    use rein_orchestrator::Blackboard;
    use rein_sessions::{Event, ToolStatus};

    let (_dir, store) = sqlite_store().await;
    let brain = Arc::new(ScriptedBrain::new(vec![
        Rule::reply("claim first", "Claiming.").and_call(
            "blackboard_write",
            json!({"key": "owner", "value": "first", "revision": 0}),
        ),
        // The second writes as if nobody had: revision 0.
        Rule::reply("claim second", "Claiming.").and_call(
            "blackboard_write",
            json!({"key": "owner", "value": "second", "revision": 0}),
        ),
    ]));
    let board = Blackboard::new();
    let tasks = ConversationTasks::new(
        store.clone(),
        brain,
        Arc::new(order_registry(Arc::default())),
        worker(),
    )
    .with_blackboard(board.clone());
    let graph = GraphSpec {
        tasks: vec![
            TaskSpec::new("one", "Claim first."),
            TaskSpec::new("two", "Claim second.").after(&["one"]),
        ],
        ..GraphSpec::default()
    }
    .check()
    .unwrap();
    let report = Scheduler::new(graph, Arc::new(tasks)).run().await;
    assert_eq!(
        report.outcome,
        GraphOutcome::Succeeded,
        "{:?}",
        report.tasks
    );
    let entry = board.get("owner").unwrap();
    assert_eq!((entry.value, entry.revision), (json!("first"), 1));
    // The second task's model was told what is there now.
    let mut conflict = None;
    for session in store.list_sessions(10).await.unwrap() {
        for stored in store.read(&session.id, 1, 100).await.unwrap() {
            if let Event::ToolResult {
                status: ToolStatus::Error,
                content,
                ..
            } = stored.event
            {
                conflict = Some(content);
            }
        }
    }
    let conflict = conflict.expect("a conflict result");
    assert_eq!(
        conflict["error"]["code"], "blackboard_conflict",
        "{conflict}"
    );
    let text = conflict.to_string();
    assert!(
        text.contains("first") && text.contains("\"revision\":1"),
        "{text}"
    );
}

#[tokio::test]
async fn a_task_whose_lost_end_wrote_the_blackboard_runs_again() {
    use rein_orchestrator::Blackboard;

    let (_dir, store) = sqlite_store().await;
    let run = |board: Blackboard| {
        let brain = Arc::new(ScriptedBrain::new(vec![
            Rule::reply("claim first", "Claiming.").and_call(
                "blackboard_write",
                json!({"key": "owner", "value": "first", "revision": 0}),
            ),
        ]));
        let tasks = ConversationTasks::new(
            store.clone(),
            brain,
            Arc::new(order_registry(Arc::default())),
            worker(),
        )
        .in_graph("graph-3")
        .with_blackboard(board);
        let graph = GraphSpec {
            tasks: vec![TaskSpec::new("one", "Claim first.")],
            ..GraphSpec::default()
        }
        .check()
        .unwrap();
        Scheduler::new(graph, Arc::new(tasks)).run()
    };
    let first = run(Blackboard::new()).await;
    assert_eq!(first.outcome, GraphOutcome::Succeeded, "{:?}", first.tasks);
    // The second run's board never heard the first's write (a worker's
    // writes go back with its result, which was lost): the task runs
    // again, so the write is made again, in a session of its own.
    let board = Blackboard::new();
    let second = run(board.clone()).await;
    assert_eq!(
        second.outcome,
        GraphOutcome::Succeeded,
        "{:?}",
        second.tasks
    );
    assert_eq!(board.get("owner").unwrap().value, json!("first"));
    let sessions = store.sessions_where("graph", "graph-3", 10).await.unwrap();
    assert_eq!(sessions.len(), 2);
}

/// The model as `inner` answers, with each request's task id noted.
struct Noting {
    inner: Arc<ScriptedBrain>,
    seen: std::sync::Mutex<Vec<(String, Option<String>)>>,
}

impl rein_gateway::Provider for Noting {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn capabilities(&self) -> rein_gateway::Capabilities {
        self.inner.capabilities()
    }
    fn stream(&self, request: rein_wire::Request) -> rein_gateway::EventStream {
        let prompt = request
            .messages
            .iter()
            .find(|m| m.role == rein_wire::Role::User)
            .map(|m| rein_wire::text_of(&m.content))
            .unwrap_or_default();
        self.seen
            .lock()
            .unwrap()
            .push((prompt, request.metadata.task_id.clone()));
        self.inner.stream(request)
    }
}

/// Every model call a graph task makes says which task it serves (the
/// encoders send it where the API has a place); a plain conversation's
/// say none.
#[tokio::test]
async fn each_tasks_model_calls_carry_its_task_id() {
    let (_dir, store) = sqlite_store().await;
    let noting = Arc::new(Noting {
        inner: Arc::new(ScriptedBrain::new(vec![
            Rule::reply("delegate the check", "Asking a helper.")
                .and_call("delegate", json!({"task": "research the topic of ink"})),
            Rule::reply("research the topic", "It is made of something."),
        ])),
        seen: std::sync::Mutex::default(),
    });
    let agent = rein_runner::Agent::new(
        noting.clone(),
        Arc::new(order_registry(Arc::default())),
        worker(),
    )
    .with_delegation(rein_runner::Delegation::default());
    let tasks = ConversationTasks::of(store.clone(), agent);
    let graph = GraphSpec {
        tasks: vec![
            TaskSpec::new("research", "Research the topic of paper."),
            TaskSpec::new("again", "Research the topic of wood.").after(&["research"]),
            TaskSpec::new("checker", "Delegate the check of ink."),
        ],
        ..GraphSpec::default()
    }
    .check()
    .unwrap();
    let report = Scheduler::new(graph, Arc::new(tasks)).run().await;
    assert_eq!(
        report.outcome,
        GraphOutcome::Succeeded,
        "{:?}",
        report.tasks
    );
    let seen = noting.seen.lock().unwrap().clone();
    assert!(seen.len() >= 2, "{seen:?}");
    // The checker's sub-agent serves the checker's task.
    assert!(
        seen.iter()
            .any(|(prompt, _)| prompt.contains("research the topic of ink")),
        "{seen:?}"
    );
    for (prompt, task) in &seen {
        let expected = if prompt.contains("paper") {
            "research"
        } else if prompt.contains("wood") {
            "again"
        } else {
            "checker"
        };
        assert_eq!(task.as_deref(), Some(expected), "{prompt}");
    }

    let mut plain = rein_runner::Conversation::open(
        store,
        noting.clone(),
        Arc::new(order_registry(Arc::default())),
        worker(),
        None,
    )
    .await
    .unwrap();
    plain.turn("Research the topic of paper.").await.unwrap();
    let last = noting.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last.1, None, "{last:?}");
}
