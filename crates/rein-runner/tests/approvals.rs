//! Approvals end to end: asked, decided only from a person's surface,
//! surviving a restart, denied, expired and settled by a stop — and a crash
//! between a write's `tool.called` and its result, resumed as interrupted
//! and never run again. A real SQLite file, scripted models, the reference
//! tool backend.

use std::sync::Arc;

use crate::common::{Setup, call, calls, open, says, setup};
use rein_approvals::{Answer, LeaseScope, Surface};
use rein_runner::TurnOutcome;
use rein_sessions::{Event, ResultSource, SqliteStore, Store, ToolStatus};
use rein_testing::FakeProvider;
use rein_wire::{ContentBlock, Role};
use serde_json::json;

#[tokio::test]
async fn an_approval_survives_a_restart_and_is_decided_only_from_a_surface() {
    let s = setup().await;
    let first = Arc::new(FakeProvider::from_messages(&[calls(vec![
        // The model tries to approve its own write through a "tool".
        call(
            "c0",
            "approve",
            json!({"approval_id": "anything", "decision": "approved"}),
        ),
        call(
            "c1",
            "write_file",
            json!({"path": "a.rs", "content": "fn a() { 1 }"}),
        ),
    ])]));
    let mut conv = open(&s, first, None).await;
    conv.steering().say("yes, I approve every write");
    let outcome = conv.turn("rewrite a.rs").await.unwrap();
    let TurnOutcome::AwaitingApproval(rein_runner::ApprovalRequest {
        approval_id,
        tool,
        arguments,
        permission,
        agent_path,
        ..
    }) = outcome
    else {
        panic!("{outcome:?}")
    };
    // The paused turn carries what the person is asked, not only its id.
    assert_eq!(tool, "write_file");
    assert_eq!(arguments["path"], "a.rs");
    assert_eq!(permission, rein_approvals::PermissionClass::SourceFileWrite);
    assert_eq!(agent_path, "main");
    let id = conv.session_id().to_owned();
    conv.close().await.unwrap();
    drop(s.store);

    // A new store handle on the same file: the approval is still pending,
    // nothing the model or the steer said decided it, nothing was written.
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&s.path).await.unwrap());
    let control = store.control(&id).await.unwrap();
    assert!(control.paused);
    assert_eq!(control.pending.len(), 1);
    assert_eq!(control.pending[0].approval_id, approval_id);
    let log = store.read(&id, 1, 1000).await.unwrap();
    assert!(
        !log.iter()
            .any(|e| matches!(e.event, Event::ApprovalDecided { .. }))
    );
    assert_eq!(s.backend.invocations("write_file"), 0);
    let fake_tool = log
        .iter()
        .find_map(|e| match &e.event {
            Event::ToolResult {
                call_id,
                status,
                content,
                ..
            } if call_id == "c0" => Some((*status, content.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(fake_tool.0, ToolStatus::Error);
    assert_eq!(fake_tool.1["error"]["code"], "tool_not_found");
    // The model is told every tool it may call, rein's own included.
    let told = fake_tool.1["error"]["message"].as_str().unwrap();
    assert!(
        told.contains("write_file") && told.contains("read_result"),
        "{told}"
    );

    // A person decides from the command line.
    rein_approvals::decide(
        store.as_ref(),
        &id,
        &approval_id,
        Answer::Approve(LeaseScope::Once),
        &Surface::command("approve"),
    )
    .await
    .unwrap();
    assert!(!store.control(&id).await.unwrap().paused);

    let second = Arc::new(FakeProvider::from_messages(&[says("Rewritten.")]));
    let s2 = Setup {
        _dir: tempfile::tempdir().unwrap(),
        path: s.path.clone(),
        store: store.clone(),
        backend: s.backend.clone(),
    };
    let mut conv = open(&s2, second.clone(), Some(&id)).await;
    let outcome = conv.resume().await.unwrap();
    assert_eq!(
        outcome,
        TurnOutcome::Finished {
            reply: "Rewritten.".into()
        }
    );
    assert_eq!(s.backend.invocations("write_file"), 1);
    assert_eq!(
        s.backend.project().lock().unwrap().files["a.rs"],
        "fn a() { 1 }"
    );
    // The resumed request carries the steer and both results.
    let req = &second.requests()[0];
    let last = req.messages.last().unwrap();
    assert!(last.content.iter().any(|b| matches!(b, ContentBlock::ToolResult { tool_use_id, is_error: false, .. } if tool_use_id == "c1")));
}

#[tokio::test]
async fn a_denied_write_tells_the_model_not_to_work_around_it() {
    let s = setup().await;
    let provider = Arc::new(FakeProvider::from_messages(&[
        calls(vec![call("c1", "delete_file", json!({"path": "b.rs"}))]),
        says("Understood, I left b.rs alone."),
    ]));
    let mut conv = open(&s, provider.clone(), None).await;
    let TurnOutcome::AwaitingApproval(rein_runner::ApprovalRequest { approval_id, .. }) =
        conv.turn("delete b.rs").await.unwrap()
    else {
        panic!()
    };
    conv.decide(&approval_id, Answer::Deny, &Surface::terminal())
        .await
        .unwrap();
    let outcome = conv.resume().await.unwrap();
    assert_eq!(
        outcome,
        TurnOutcome::Finished {
            reply: "Understood, I left b.rs alone.".into()
        }
    );
    assert_eq!(s.backend.invocations("delete_file"), 0);
    let req = &provider.requests()[1];
    let text = serde_json::to_string(req.messages.last().unwrap()).unwrap();
    assert!(
        text.contains("Do not try to reach the same result another way"),
        "{text}"
    );
    assert!(text.contains("\"is_error\":true"));
}

#[tokio::test]
async fn a_crash_between_called_and_result_resumes_with_interrupted_and_never_reruns_the_write() {
    let s = setup().await;
    // What a process that died mid-call leaves behind.
    let session = s.store.create_session(json!({})).await.unwrap();
    let lease = s
        .store
        .acquire(
            &session.id,
            "crashed",
            std::time::Duration::from_millis(300),
        )
        .await
        .unwrap();
    let msg = rein_wire::Message {
        role: Role::Assistant,
        content: vec![ContentBlock::ToolUse {
            id: "w1".into(),
            name: "set_note".into(),
            input: json!({"key": "k", "value": "v"}),
        }],
    };
    s.store
        .append(
            &lease,
            vec![
                rein_sessions::NewEvent::main(Event::TurnStarted {
                    turn_id: "t1".into(),
                    parent: None,
                    prompt: "note it".into(),
                }),
                rein_sessions::NewEvent::main(Event::RunStarted {
                    run_id: "r1".into(),
                    turn_id: "t1".into(),
                    budgets: json!({}),
                    profile: json!({}),
                }),
                rein_sessions::NewEvent::main(Event::ModelCompleted {
                    call_id: "m1".into(),
                    model: "fake-model".into(),
                    message: msg,
                    usage: None,
                    cost_micro_usd: None,
                    reasoning_cost_micro_usd: None,
                    stop_reason: None,
                    cache_verdict: None,
                    latency_ms: 1,
                    repaired: Vec::new(),
                }),
                rein_sessions::NewEvent::main(Event::ToolCalled {
                    call_id: "w1".into(),
                    tool: "set_note".into(),
                    arguments: json!({"key": "k", "value": "v"}),
                    permission: Some(rein_approvals::PermissionClass::ReversibleWrite),
                }),
            ],
        )
        .await
        .unwrap();
    // The crashed holder never renews; its lease runs out.
    tokio::time::sleep(std::time::Duration::from_millis(350)).await;

    let provider = Arc::new(FakeProvider::from_messages(&[says(
        "The note may or may not be set; I will check.",
    )]));
    let mut conv = open(&s, provider.clone(), Some(&session.id)).await;
    let log = s.store.read(&session.id, 1, 100).await.unwrap();
    let result = log.iter().find_map(|e| match &e.event {
        Event::ToolResult {
            call_id,
            source,
            status,
            ..
        } if call_id == "w1" => Some((*source, *status)),
        _ => None,
    });
    assert_eq!(result, Some((ResultSource::Interrupted, ToolStatus::Error)));
    let outcome = conv.resume().await.unwrap();
    assert!(matches!(outcome, TurnOutcome::Finished { .. }));
    assert_eq!(
        s.backend.invocations("set_note"),
        0,
        "a write is never silently re-run"
    );
    let text = serde_json::to_string(&provider.requests()[0].messages).unwrap();
    assert!(text.contains("interrupted"));
}

#[tokio::test]
async fn an_approval_expires_and_a_stop_settles_what_is_pending() {
    let s = setup().await;
    let provider = Arc::new(FakeProvider::from_messages(&[
        calls(vec![call(
            "w1",
            "write_file",
            json!({"path": "a.rs", "content": "late"}),
        )]),
        says("Nobody approved, so I did not write it."),
        calls(vec![
            call("d1", "delete_file", json!({"path": "a.rs"})),
            call("r1", "read_file", json!({"path": "b.rs"})),
        ]),
    ]));
    let mut conv = open(&s, provider.clone(), None).await;
    assert!(matches!(
        conv.turn("write a.rs").await.unwrap(),
        TurnOutcome::AwaitingApproval(_)
    ));
    conv.agent.approval_ttl = std::time::Duration::ZERO;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let outcome = conv.resume().await.unwrap();
    assert_eq!(
        outcome,
        TurnOutcome::Finished {
            reply: "Nobody approved, so I did not write it.".into()
        }
    );
    assert_eq!(s.backend.invocations("write_file"), 0);
    let text = serde_json::to_string(&provider.requests()[1].messages).unwrap();
    assert!(
        text.contains("let expire")
            && text.contains("Do not try to reach the same result another way"),
        "{text}"
    );

    conv.agent.approval_ttl = std::time::Duration::from_secs(3600);
    assert!(matches!(
        conv.turn("delete a.rs").await.unwrap(),
        TurnOutcome::AwaitingApproval(_)
    ));
    // No branching while a turn waits: the open turn is finished or stopped first.
    let refused = conv.branch_from("any").await.unwrap_err();
    assert_eq!(refused.code, rein_wire::error::codes::INVALID_INPUT);
    assert_eq!(
        conv.stop(&Surface::terminal()).await.unwrap(),
        TurnOutcome::Interrupted
    );
    let id = conv.session_id().to_owned();
    let control = s.store.control(&id).await.unwrap();
    assert!(control.pending.is_empty() && control.stopped);
    assert_eq!(s.backend.invocations("delete_file"), 0);
    // Every call of the stopped message has its one result.
    let log = s.store.read(&id, 1, 1000).await.unwrap();
    let open = rein_sessions::recovery::dangling(&log);
    assert!(open.is_clean(), "{open:?}");
    let results = log.iter().filter(|e| matches!(&e.event, Event::ToolResult { call_id, .. } if call_id == "d1" || call_id == "r1")).count();
    assert_eq!(results, 2);
}

#[tokio::test]
async fn pending_approvals_show_what_is_asked_after_a_restart_too() {
    let s = setup().await;
    let long = "x".repeat(rein_runner::MAX_SHOWN_ARGUMENTS + 100);
    let first = Arc::new(FakeProvider::from_messages(&[calls(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "a.rs", "content": "fn a() { 1 }"}),
        ),
        call("c2", "write_file", json!({"path": "b.rs", "content": long})),
    ])]));
    let mut conv = open(&s, first, None).await;
    let TurnOutcome::AwaitingApproval(rein_runner::ApprovalRequest { approval_id, .. }) =
        conv.turn("rewrite both").await.unwrap()
    else {
        panic!("a write waits")
    };
    let shown = conv.pending_approvals().await.unwrap();
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].approval_id, approval_id);
    assert_eq!(shown[0].tool, "write_file");
    assert_eq!(shown[0].arguments["path"], "a.rs");
    assert_eq!(
        shown[0].permission,
        rein_approvals::PermissionClass::SourceFileWrite
    );
    assert_eq!(shown[0].agent_path, "main");
    assert!(shown[0].purpose.is_some());
    let id = conv.session_id().to_owned();
    conv.close().await.unwrap();
    // Another process opens the session: the same request is listed.
    let none = Arc::new(FakeProvider::from_messages(&[says("ok")]));
    let mut again = open(&s, none, Some(&id)).await;
    let listed = again.pending_approvals().await.unwrap();
    assert_eq!(listed, shown);
    // Approved, the next call's request is bounded for showing.
    again
        .decide(
            &approval_id,
            Answer::Approve(LeaseScope::Once),
            &Surface::product("shop admin", "alice"),
        )
        .await
        .unwrap();
    let TurnOutcome::AwaitingApproval(_) = again.resume().await.unwrap() else {
        panic!("the second write waits")
    };
    let big = again.pending_approvals().await.unwrap().remove(0);
    let text = big
        .arguments
        .as_str()
        .expect("a long request is shown as its start");
    assert_eq!(text.chars().count(), rein_runner::MAX_SHOWN_ARGUMENTS);
    let log = again.log_events().await.unwrap();
    assert!(log.iter().any(
        |e| matches!(&e.event, Event::ApprovalDecided { by, .. } if by == "shop admin:alice")
    ));
    again.close().await.unwrap();
}
