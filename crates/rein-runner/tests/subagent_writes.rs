//! Sub-agents that write: a child's write waits for the same person as
//! the parent's, found from the parent's session; only that child pauses;
//! a no, a stop and an interrupt reach it; its budget is a share of the
//! parent's that its use draws down; it gets only the tools named, and
//! nesting stops at the depth limit.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] fns: a failure is the test failing"
)]

use std::sync::Arc;
use std::time::Duration;

use rein_approvals::{Answer, Decision, LeaseScope, Surface};
use rein_runner::{Conversation, Delegation, Profile, ToolLoading, TurnOutcome, UiEvent, UiKind};
use rein_sessions::{Event, SqliteStore, Store, StoredEvent};
use rein_testing::{FakeToolBackend, Rule, ScriptedBrain};
use serde_json::{Value, json};
use tokio::sync::broadcast;

fn profile() -> Profile {
    Profile {
        max_output_tokens: 256,
        tools: ToolLoading::Native,
        ..Profile::new("Helper", "m").with_system("Be brief.")
    }
}

fn rules() -> Vec<Rule> {
    vec![
        Rule::reply("ask two helpers", "Delegating both.")
            .and_call("delegate", json!({"task": "read a.rs"}))
            .and_call("delegate", json!({"task": "write notes.md"})),
        Rule::reply("narrow helper", "Delegating with reads only.").and_call(
            "delegate",
            json!({"task": "write notes.md", "tools": ["read_file"]}),
        ),
        Rule::reply("helper with a made-up tool", "Delegating.").and_call(
            "delegate",
            json!({"task": "read a.rs", "tools": ["format_disk"]}),
        ),
        Rule::reply("ask a helper", "Delegating.")
            .and_call("delegate", json!({"task": "write notes.md"})),
        Rule::reply("read ", "Reading.")
            .and_call("read_file", json!({}))
            .word_into("path"),
        Rule::reply("write ", "Writing.")
            .and_call("write_file", json!({"content": "x\n"}))
            .word_into("path"),
    ]
}

struct Setup {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    backend: Arc<FakeToolBackend>,
    conv: Conversation,
    ui: broadcast::Receiver<UiEvent>,
}

async fn setup(rules: Vec<Rule>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let backend = Arc::new(FakeToolBackend::new(&[("a.rs", "fn alpha() {}")]).unwrap());
    let mut conv = Conversation::open(
        store.clone(),
        Arc::new(ScriptedBrain::new(rules)),
        backend.clone(),
        profile(),
        None,
    )
    .await
    .unwrap();
    conv.agent.delegation = Some(Delegation::default());
    let ui = conv.subscribe();
    Setup {
        _dir: dir,
        store,
        backend,
        conv,
        ui,
    }
}

/// The next sub-agent pause the parent's watchers hear of.
async fn awaiting(
    ui: &mut broadcast::Receiver<UiEvent>,
) -> (rein_runner::AgentPath, String, rein_runner::ApprovalRequest) {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let UiEvent {
                agent,
                kind: UiKind::AgentAwaiting { session, request },
            } = ui.recv().await.unwrap()
            {
                return (agent, session, request);
            }
        }
    })
    .await
    .expect("a sub-agent asks within 30 s")
}

/// Run the turn on its own task, so the test can act as the person.
fn start(
    mut conv: Conversation,
    prompt: &'static str,
) -> tokio::task::JoinHandle<(Conversation, TurnOutcome)> {
    tokio::spawn(async move {
        let outcome = conv.turn(prompt).await.unwrap();
        (conv, outcome)
    })
}

fn agents(log: &[StoredEvent]) -> Vec<(String, String)> {
    log.iter()
        .filter_map(|e| match &e.event {
            Event::AgentStarted {
                agent_path,
                session: Some(session),
                call_id: Some(_),
                ..
            } => Some((agent_path.clone(), session.clone())),
            _ => None,
        })
        .collect()
}

fn finished(log: &[StoredEvent]) -> Vec<(String, String)> {
    log.iter()
        .filter_map(|e| match &e.event {
            Event::AgentFinished {
                agent_path,
                outcome,
            } => Some((agent_path.clone(), outcome.as_str().to_owned())),
            _ => None,
        })
        .collect()
}

/// The content of the delegate call's result (its error code, for a failure).
fn delegate_results(log: &[StoredEvent]) -> Vec<Value> {
    log.iter()
        .filter_map(|e| match &e.event {
            Event::ToolResult { content, .. } if content.to_string().contains("main/agent-") => {
                Some(content.clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
#[expect(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
async fn a_childs_write_waits_for_the_person_while_its_sibling_finishes() {
    let Setup {
        _dir,
        store,
        backend,
        conv,
        mut ui,
    } = setup(rules()).await;
    let parent = conv.session_id().to_owned();
    let turn = start(conv, "ask two helpers about a.rs and notes");
    let (agent, child, request) = awaiting(&mut ui).await;
    assert_eq!(agent, "main/agent-2");
    assert_eq!(request.agent_path, "main/agent-2");
    assert_eq!(request.tool, "write_file");
    // Only that child pauses: its sibling reads and finishes meanwhile.
    for _ in 0..300 {
        if backend.invocations("read_file") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(backend.invocations("read_file"), 1);
    assert_eq!(backend.invocations("write_file"), 0);
    // Listed from the parent, with the path of the agent that asked.
    let waiting = rein_approvals::waiting(store.as_ref(), &parent)
        .await
        .unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].agent_path, "main/agent-2");
    assert_eq!(waiting[0].session, child);
    // Decided through the parent's session, as `rein approve PARENT …` does.
    rein_approvals::decide(
        store.as_ref(),
        &parent,
        &request.approval_id,
        Answer::Approve(LeaseScope::Once),
        &Surface::terminal(),
    )
    .await
    .unwrap();
    let (conv, outcome) = turn.await.unwrap();
    let TurnOutcome::Finished { reply } = outcome else {
        panic!("{outcome:?}")
    };
    assert!(reply.contains("alpha"), "{reply}");
    assert_eq!(backend.invocations("write_file"), 1);
    let project = backend.project();
    assert_eq!(project.lock().unwrap().files["notes.md"], "x\n");

    let log = store.read(&parent, 0, 10_000).await.unwrap();
    let started = agents(&log);
    assert_eq!(
        started.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
        ["main/agent-1", "main/agent-2"]
    );
    assert_eq!(started[1].1, child);
    assert_eq!(
        finished(&log),
        [
            ("main/agent-1".to_owned(), "finished".to_owned()),
            ("main/agent-2".to_owned(), "finished".to_owned())
        ]
    );
    // The child's log holds the question and the person's answer, on its path.
    let child_log = store.read(&child, 0, 10_000).await.unwrap();
    assert!(
        child_log
            .iter()
            .any(|e| matches!(&e.event, Event::ApprovalRequested { .. })
                && e.agent_path == "main/agent-2")
    );
    assert!(child_log.iter().any(|e| matches!(&e.event,
        Event::ApprovalDecided { decision: Decision::Approved, by, .. } if by == "terminal")));
    assert!(
        rein_approvals::waiting(store.as_ref(), &parent)
            .await
            .unwrap()
            .is_empty()
    );
    // A second decision, from the parent or the child, is a conflict.
    for session in [&parent, &child] {
        let again = rein_approvals::decide(
            store.as_ref(),
            session,
            &request.approval_id,
            Answer::Deny,
            &Surface::command("approve"),
        )
        .await
        .unwrap_err();
        assert_eq!(again.code, rein_wire::error::codes::CONFLICT, "{again:?}");
    }
    // The report rolls the children up, each under its path.
    let mut conv = conv;
    let report = conv.report().await.unwrap();
    let paths: Vec<&str> = report
        .agents
        .iter()
        .map(|a| a.agent_path.as_str())
        .collect();
    assert_eq!(paths, ["main/agent-1", "main/agent-2"]);
    assert_eq!(report.agents[1].session_id, child);
    assert_eq!(
        report.agents[1].outcome.map(|o| o.as_str()),
        Some("finished")
    );
    let all = report.all.as_ref().expect("totals with the children");
    let children: u64 = report.agents.iter().map(|a| a.totals.model_calls).sum();
    assert_eq!(children, 4, "two calls each");
    assert_eq!(all.model_calls, report.totals.model_calls + children);
    assert_eq!(all.tools.total, report.totals.tools.total + 2);
    assert!(report.render().contains("agent main/agent-2 (session"));
    conv.close().await.unwrap();
}

#[tokio::test]
async fn a_no_reaches_the_child_and_its_write_never_runs() {
    let Setup {
        _dir,
        store,
        backend,
        conv,
        mut ui,
    } = setup(rules()).await;
    let turn = start(conv, "ask a helper to write notes");
    let (_, child, request) = awaiting(&mut ui).await;
    rein_approvals::decide(
        store.as_ref(),
        &child,
        &request.approval_id,
        Answer::Deny,
        &Surface::command("approve"),
    )
    .await
    .unwrap();
    let (conv, outcome) = turn.await.unwrap();
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    assert_eq!(backend.invocations("write_file"), 0);
    assert!(
        !backend
            .project()
            .lock()
            .unwrap()
            .files
            .contains_key("notes.md")
    );
    let log = conv_log(&store, &conv).await;
    // The child answered; its answer says the write was not approved.
    assert!(
        delegate_results(&log)[0]
            .to_string()
            .contains("not_approved")
    );
    conv.close().await.unwrap();
}

async fn conv_log(store: &Arc<dyn Store>, conv: &Conversation) -> Vec<StoredEvent> {
    store.read(conv.session_id(), 0, 10_000).await.unwrap()
}

#[tokio::test]
async fn the_parents_stop_reaches_a_waiting_child() {
    let Setup {
        _dir,
        store,
        backend,
        conv,
        mut ui,
    } = setup(rules()).await;
    let parent = conv.session_id().to_owned();
    let turn = start(conv, "ask a helper to write notes");
    let (_, child, _) = awaiting(&mut ui).await;
    rein_approvals::stop(store.as_ref(), &parent, &Surface::command("stop"))
        .await
        .unwrap();
    let (conv, outcome) = tokio::time::timeout(Duration::from_secs(30), turn)
        .await
        .expect("the stop ends the turn")
        .unwrap();
    assert_eq!(outcome, TurnOutcome::Interrupted);
    assert_eq!(backend.invocations("write_file"), 0);
    let child_log = store.read(&child, 0, 10_000).await.unwrap();
    assert!(child_log.iter().any(|e| matches!(
        &e.event,
        Event::ApprovalDecided {
            decision: Decision::Stopped,
            ..
        }
    )));
    let log = conv_log(&store, &conv).await;
    assert_eq!(
        finished(&log),
        [("main/agent-1".to_owned(), "agent_stopped".to_owned())]
    );
    assert!(store.control(&child).await.unwrap().pending.is_empty());
    conv.close().await.unwrap();
}

#[tokio::test]
async fn the_parents_interrupt_reaches_a_waiting_child() {
    let Setup {
        _dir,
        store,
        backend,
        conv,
        mut ui,
    } = setup(rules()).await;
    let steering = conv.steering();
    let turn = start(conv, "ask a helper to write notes");
    let (_, child, _) = awaiting(&mut ui).await;
    steering.interrupt();
    let (conv, outcome) = tokio::time::timeout(Duration::from_secs(30), turn)
        .await
        .expect("the interrupt ends the turn")
        .unwrap();
    assert_eq!(outcome, TurnOutcome::Interrupted);
    assert_eq!(backend.invocations("write_file"), 0);
    assert!(store.control(&child).await.unwrap().pending.is_empty());
    let results = delegate_results(&conv_log(&store, &conv).await);
    assert!(
        results[0].to_string().contains("agent_stopped"),
        "{results:?}"
    );
    conv.close().await.unwrap();
}

#[tokio::test]
async fn a_child_spends_from_the_parents_budget_and_ends_typed_when_its_share_is_gone() {
    let mut looping = Rule::reply("ask a helper", "Delegating.")
        .and_call("delegate", json!({"task": "read forever"}));
    looping.steps = 1;
    let mut reader =
        Rule::reply("read ", "Reading.").and_call("read_file", json!({"path": "a.rs"}));
    reader.steps = 50;
    let Setup {
        _dir,
        store,
        conv: mut parent,
        ..
    } = setup(vec![looping, reader]).await;
    parent.agent.budgets.max_steps = 4;
    let outcome = parent.turn("ask a helper to read").await.unwrap();
    // The child had 3 of the 4 steps (the parent used one to delegate);
    // with them spent, the parent's own budget is gone too.
    assert_eq!(
        outcome,
        TurnOutcome::Budget {
            which: "steps".into()
        }
    );
    let log = conv_log(&store, &parent).await;
    assert_eq!(
        finished(&log),
        [("main/agent-1".to_owned(), "agent_over_budget".to_owned())]
    );
    let result = delegate_results(&log)[0].to_string();
    assert!(
        result.contains("\\\"steps\\\":3") || result.contains("\"steps\":3"),
        "{result}"
    );
    parent.close().await.unwrap();
}

#[tokio::test]
async fn a_child_gets_only_the_tools_named_and_never_one_the_parent_lacks() {
    let Setup {
        _dir,
        store,
        backend,
        conv: mut parent,
        ..
    } = setup(rules()).await;
    let outcome = parent.turn("narrow helper, please").await.unwrap();
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    // The write was not among its tools: no approval was ever asked.
    assert_eq!(backend.invocations("write_file"), 0);
    let (_, child) = agents(&conv_log(&store, &parent).await).remove(0);
    let child_log = store.read(&child, 0, 10_000).await.unwrap();
    assert!(
        !child_log
            .iter()
            .any(|e| matches!(e.event, Event::ApprovalRequested { .. }))
    );
    // It was never offered the write, so it never made one.
    assert!(
        !child_log
            .iter()
            .any(|e| matches!(&e.event, Event::ToolCalled { tool, .. } if tool == "write_file"))
    );

    let outcome = parent.turn("helper with a made-up tool").await.unwrap();
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    let log = conv_log(&store, &parent).await;
    assert_eq!(agents(&log).len(), 1, "no sub-agent starts for that call");
    assert!(log.iter().any(|e| matches!(&e.event,
        Event::ToolResult { content, .. } if content.to_string().contains("format_disk"))));
    parent.close().await.unwrap();
}

#[tokio::test]
async fn nesting_stops_at_the_depth_limit() {
    let rules = vec![
        Rule::reply("level one", "Down.").and_call("delegate", json!({"task": "level two"})),
        Rule::reply("level two", "Down.").and_call("delegate", json!({"task": "level three"})),
        Rule::reply("level three", "Down.").and_call("delegate", json!({"task": "level four"})),
    ];
    let Setup {
        _dir,
        store,
        conv: mut parent,
        ..
    } = setup(rules).await;
    let outcome = parent.turn("level one").await.unwrap();
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    let paths: Vec<String> = store
        .list_sessions(20)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|s| s.metadata["agent_path"].as_str().map(str::to_owned))
        .collect();
    assert!(paths.contains(&"main/agent-1".to_owned()), "{paths:?}");
    assert!(
        paths.contains(&"main/agent-1/agent-1".to_owned()),
        "{paths:?}"
    );
    // The grandchild is at depth 2: it is not offered `delegate`.
    assert_eq!(paths.len(), 2, "{paths:?}");
    parent.close().await.unwrap();
}

#[tokio::test]
async fn the_parents_interrupt_reaches_a_running_child() {
    let mut reader =
        Rule::reply("read ", "Reading.").and_call("read_file", json!({"path": "a{step}.rs"}));
    // Each step reads another path: no loop to detect, only work.
    reader.steps = 10_000;
    let rules = vec![
        Rule::reply("ask a helper", "Delegating.")
            .and_call("delegate", json!({"task": "read forever"})),
        reader,
    ];
    let Setup {
        _dir,
        store,
        mut conv,
        mut ui,
        ..
    } = setup(rules).await;
    conv.agent.budgets.max_steps = 100_000;
    conv.agent.delegation.as_mut().unwrap().max_steps = 100_000;
    let steering = conv.steering();
    let turn = start(conv, "ask a helper to read");
    // The child is working: its reads show under its path.
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let event = ui.recv().await.unwrap();
            if event.agent == "main/agent-1" && matches!(event.kind, UiKind::ToolResult { .. }) {
                return;
            }
        }
    })
    .await
    .expect("the child reads");
    steering.interrupt();
    let (conv, outcome) = tokio::time::timeout(Duration::from_secs(30), turn)
        .await
        .expect("the interrupt reaches the running child")
        .unwrap();
    assert_eq!(outcome, TurnOutcome::Interrupted);
    let log = conv_log(&store, &conv).await;
    assert_eq!(
        finished(&log),
        [("main/agent-1".to_owned(), "agent_stopped".to_owned())]
    );
    let (_, child) = agents(&log).remove(0);
    let child_log = store.read(&child, 0, 100_000).await.unwrap();
    assert!(child_log.iter().any(|e| matches!(&e.event,
        Event::TurnFinished { outcome, .. } if outcome == "interrupted")));
    conv.close().await.unwrap();
}
