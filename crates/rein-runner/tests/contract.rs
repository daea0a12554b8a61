//! A turn with its own contract (`turn_with`): its check must pass (the
//! exit it names) for the turn to finish, its budgets and tools hold for
//! that turn only, a paused turn goes on only under the same contract, and
//! every result carries the turn's and the run's ids.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;

use crate::common::{call, calls, open, says, setup};
use rein_approvals::{Answer, LeaseScope, Surface};
use rein_runner::{Budgets, TurnContract, TurnOutcome, Verification};
use rein_sessions::Event;
use rein_testing::FakeProvider;
use rein_tools::{Outcome, PermissionClass, Registry, tool_fn};
use serde_json::json;

fn check(script: &str, expected: i32) -> Verification {
    let mut check = Verification::new(&["sh", "-c", script]);
    check.expected = expected;
    check.attempts = 1;
    check
}

#[tokio::test]
async fn a_failing_turn_check_keeps_the_turn_from_finishing_and_holds_for_that_turn_only() {
    let s = setup().await;
    let provider = Arc::new(FakeProvider::from_messages(&[
        says("done?"),
        says("done now?"),
        says("done, with exit 7"),
        says("a plain answer"),
    ]));
    let mut conv = open(&s, provider, None).await;
    // A check that never gives its exit: the turn does not finish.
    let failed = conv
        .turn_with("do it", TurnContract::checked(check("exit 1", 0)))
        .await
        .unwrap();
    let TurnOutcome::Error { error } = &failed.outcome else {
        panic!("{failed:?}")
    };
    assert_eq!(error.code, rein_wire::error::codes::VERIFICATION_FAILED);
    // One whose exit is the one named passes.
    let passed = conv
        .turn_with("again", TurnContract::checked(check("exit 7", 7)))
        .await
        .unwrap();
    assert_eq!(
        passed.outcome,
        TurnOutcome::Finished {
            reply: "done, with exit 7".into()
        }
    );
    // The ids are the log's.
    let log = s.store.read(conv.session_id(), 1, 1000).await.unwrap();
    let started: Vec<(String, String)> = log
        .iter()
        .filter_map(|e| match &e.event {
            Event::RunStarted {
                run_id, turn_id, ..
            } => Some((turn_id.clone(), run_id.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        vec![
            (failed.turn_id.clone(), failed.run_id.clone()),
            (passed.turn_id.clone(), passed.run_id.clone())
        ]
    );
    assert_ne!(failed.turn_id, passed.turn_id);
    // The next turn runs as the definition says: no check.
    assert!(conv.agent.verification.is_none());
    let plain = conv
        .turn_with("plain", TurnContract::default())
        .await
        .unwrap();
    assert!(matches!(plain.outcome, TurnOutcome::Finished { .. }));
    let log = s.store.read(conv.session_id(), 1, 1000).await.unwrap();
    let receipts = log
        .iter()
        .filter(|e| matches!(e.event, Event::CheckRan { .. }))
        .count();
    assert_eq!(
        receipts, 3,
        "two failed and one passed; none for the plain turn"
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Sku {
    /// The item.
    sku: String,
}

#[tokio::test]
async fn a_contracts_tools_and_budgets_are_this_turns_alone() {
    let s = setup().await;
    let provider = Arc::new(FakeProvider::from_messages(&[
        calls(vec![call("p1", "price_of", json!({"sku": "tea"}))]),
        says("tea is 450"),
        calls(vec![call("p2", "price_of", json!({"sku": "tea"}))]),
        says("unreachable"),
    ]));
    let mut conv = open(&s, provider.clone(), None).await;
    let prices = Registry::new()
        .with(tool_fn(
            "price_of",
            "The price of an item, in cents.",
            PermissionClass::Read,
            |item: Sku| async move { Outcome::ok(json!({"sku": item.sku, "cents": 450})) },
        ))
        .unwrap();
    let contract = TurnContract {
        tools: Some(Arc::new(prices)),
        ..TurnContract::default()
    };
    let priced = conv.turn_with("price tea", contract).await.unwrap();
    assert!(matches!(priced.outcome, TurnOutcome::Finished { .. }));
    let offered = |i: usize| {
        provider.requests()[i]
            .tools
            .iter()
            .any(|t| t.name == "price_of")
    };
    assert!(offered(0) && offered(1));
    // The next turn: the tool is gone, and a one-step budget holds.
    let budgets = Budgets {
        max_steps: 1,
        ..Budgets::default()
    };
    let contract = TurnContract {
        budgets: Some(budgets),
        ..TurnContract::default()
    };
    let after = conv.turn_with("price tea again", contract).await.unwrap();
    assert!(!offered(2));
    assert!(
        matches!(after.outcome, TurnOutcome::Budget { .. }),
        "{after:?}"
    );
    // The definition's budgets are back.
    assert_ne!(conv.agent.budgets.max_steps, 1);
}

#[tokio::test]
async fn a_paused_turn_goes_on_only_under_its_contract() {
    let s = setup().await;
    let provider = Arc::new(FakeProvider::from_messages(&[
        calls(vec![call("r", "read_file", json!({"path": "a.rs"}))]),
        calls(vec![call(
            "w",
            "write_file",
            json!({"path": "a.rs", "content": "fn a() { 2 }"}),
        )]),
    ]));
    let mut conv = open(&s, provider, None).await;
    let contract = TurnContract::checked(check("exit 0", 0));
    let paused = conv
        .turn_with("rewrite a.rs", contract.clone())
        .await
        .unwrap();
    let TurnOutcome::AwaitingApproval(asked) = &paused.outcome else {
        panic!("{paused:?}")
    };
    // Paused, the contract is still in force in this process.
    assert!(conv.agent.verification.is_some());
    conv.decide(
        &asked.approval_id,
        Answer::Approve(LeaseScope::Once),
        &Surface::terminal(),
    )
    .await
    .unwrap();
    let id = conv.session_id().to_owned();
    conv.close().await.unwrap();

    // Another process takes the turn up: without its contract the run
    // would finish unchecked, so it is refused.
    let provider = Arc::new(FakeProvider::from_messages(&[says("rewritten")]));
    let mut conv = open(&s, provider, Some(&id)).await;
    let err = conv.resume().await.unwrap_err();
    assert_eq!(err.code, rein_wire::error::codes::AUTHORITY_CHANGED);
    assert!(err.message.contains("check"), "{}", err.message);
    // With it, it goes on and is checked, and the result is that turn's.
    let done = conv.resume_with(contract).await.unwrap();
    assert_eq!(
        done.outcome,
        TurnOutcome::Finished {
            reply: "rewritten".into()
        }
    );
    assert_eq!((done.turn_id, done.run_id), (paused.turn_id, paused.run_id));
    let log = s.store.read(&id, 1, 1000).await.unwrap();
    assert!(
        log.iter()
            .any(|e| matches!(e.event, Event::CheckRan { passed: true, .. }))
    );
    assert!(conv.agent.verification.is_none(), "the definition is back");
}
