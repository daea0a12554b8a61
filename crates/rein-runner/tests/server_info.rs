//! `server_info`: rein's own facts, offered only when the definition asks
//! — the version, the model, the policy, the tools, and what is left of
//! the turn's budgets counted as the turn spends them — with no secret in
//! what it says.

use std::sync::Arc;

use rein_runner::{Agent, TurnOutcome};
use rein_sessions::Event;
use rein_testing::FakeProvider;
use serde_json::{Value, json};

use crate::common::{call, calls, profile, says, setup};

/// The result the call of `server_info` recorded.
async fn answered(store: &dyn rein_sessions::Store, session: &str) -> Value {
    let log = rein_sessions::read_all(store, session).await.unwrap();
    log.iter()
        .find_map(|e| match &e.event {
            Event::ToolResult {
                call_id, content, ..
            } if call_id == "info" => Some(content.clone()),
            _ => None,
        })
        .expect("the call has a result")
}

#[tokio::test]
async fn the_model_reads_the_harness_facts_and_the_budget_left() {
    let s = setup().await;
    let model = Arc::new(FakeProvider::from_messages(&[
        calls(vec![call("r", "read_file", json!({"path": "a.rs"}))]),
        calls(vec![call("info", "server_info", json!({}))]),
        says("I have 48 steps left."),
    ]));
    let mut agent = Agent::new(model.clone(), s.backend.clone(), profile()).with_server_info();
    agent.budgets.max_steps = 50;
    agent.guards.secrets = vec!["sk-very-secret-value".into()];
    let mut chat = agent.open(s.store.clone()).await.unwrap();
    let outcome = chat.turn("how much budget is left?").await.unwrap();
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(offered.contains(&"server_info".to_owned()), "{offered:?}");

    let info = answered(s.store.as_ref(), chat.session_id()).await;
    assert_eq!(info["harness"], "rein");
    assert_eq!(info["model"], "fake-model");
    assert_eq!(info["budgets"]["steps"]["limit"], 50);
    assert_eq!(
        info["budgets"]["steps"]["used"], 2,
        "two model calls before it: {info}"
    );
    assert_eq!(info["budgets"]["steps"]["left"], 48);
    let tools = info["tools"]["names"].as_array().unwrap();
    assert!(tools.contains(&json!("read_file")), "{info}");
    assert_eq!(info["policy"]["writes_allowed"], true);
    assert!(!info.to_string().contains("sk-very-secret"), "{info}");
}

#[tokio::test]
async fn unasked_it_is_not_offered_and_a_call_of_it_is_unknown() {
    let s = setup().await;
    let model = Arc::new(FakeProvider::from_messages(&[
        calls(vec![call("info", "server_info", json!({}))]),
        says("No such tool."),
    ]));
    let agent = Agent::new(model.clone(), s.backend.clone(), profile());
    let mut chat = agent.open(s.store.clone()).await.unwrap();
    chat.turn("what are you?").await.unwrap();
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(!offered.contains(&"server_info".to_owned()), "{offered:?}");
    let info = answered(s.store.as_ref(), chat.session_id()).await;
    assert!(info.to_string().contains("tool_not_found"), "{info}");
    assert!(!info.to_string().contains("version"), "{info}");
}
