//! A product opens and reopens from one [`Agent`]: nothing passed twice,
//! prices travel with it (a reopened session's calls have a cost), and a
//! conversation dropped without `close()` does not leave its session
//! locked.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::sync::Arc;
use std::time::Duration;

use rein_runner::{Agent, Profile, ToolLoading};
use rein_sessions::{MemoryStore, Store};
use rein_testing::{FakeToolBackend, Rule, ScriptedBrain};
use rein_wire::{ModelPrice, PriceTable};

fn agent() -> Agent {
    let profile = Profile {
        tools: ToolLoading::Native,
        ..Profile::new("shop", "house-model")
    };
    Agent::new(
        Arc::new(ScriptedBrain::new(vec![Rule::reply("hello", "Hi.")])),
        Arc::new(FakeToolBackend::new(&[]).unwrap()),
        profile,
    )
    .with_prices(
        PriceTable::builtin().with("rein-scripted", ModelPrice::usd_per_mtok(1000.0, 2000.0)),
    )
}

#[tokio::test]
async fn one_value_opens_and_reopens_and_prices_travel_with_it() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let agent = agent();
    let mut first = agent.open(store.clone()).await.unwrap();
    first.turn("hello").await.unwrap();
    let id = first.session_id().to_owned();
    first.close().await.unwrap();
    // Another process, the same value.
    let mut again = agent.reopen(store.clone(), &id).await.unwrap();
    again.turn("hello").await.unwrap();
    let report = again.report().await.unwrap();
    again.close().await.unwrap();
    assert!(report.totals.cost_micro_usd > 0, "{report:?}");
    assert_eq!(report.totals.calls_without_cost, 0, "{report:?}");
}

#[tokio::test]
async fn a_dropped_conversation_gives_its_session_back() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let agent = agent();
    let conversation = agent.open(store.clone()).await.unwrap();
    let id = conversation.session_id().to_owned();
    drop(conversation);
    // Not two minutes: at once (the release runs on this runtime).
    let mut reopened = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        if let Ok(c) = agent.reopen(store.clone(), &id).await {
            reopened = Some(c);
            break;
        }
    }
    reopened
        .expect("the session is free again")
        .close()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_yes_under_changed_authority_is_refused_before_it_is_recorded_and_a_no_is_not() {
    use rein_approvals::{Answer, LeaseScope, Surface};
    use rein_runner::TurnOutcome;
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let writer = Agent::new(
        Arc::new(ScriptedBrain::new(vec![
            Rule::reply("write ", "Writing.")
                .and_call("write_file", serde_json::json!({"content": "x\n"}))
                .word_into("path"),
        ])),
        Arc::new(FakeToolBackend::new(&[]).unwrap()),
        Profile {
            tools: ToolLoading::Native,
            ..Profile::new("shop", "m")
        },
    );
    let mut first = writer.open(store.clone()).await.unwrap();
    let TurnOutcome::AwaitingApproval(asked) = first.turn("write notes.md").await.unwrap() else {
        panic!("asked")
    };
    let id = first.session_id().to_owned();
    first.close().await.unwrap();
    // Reopened under another definition: its authority changed.
    let mut other = writer.clone();
    other.profile.model = "another-model".into();
    let mut again = other.reopen(store.clone(), &id).await.unwrap();
    let refused = again
        .decide(
            &asked.approval_id,
            Answer::Approve(LeaseScope::Once),
            &Surface::terminal(),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, rein_wire::error::codes::AUTHORITY_CHANGED);
    let log = again.log_events().await.unwrap();
    assert!(
        !log.iter()
            .any(|e| matches!(e.event, rein_sessions::Event::ApprovalDecided { .. })),
        "nothing was recorded"
    );
    again
        .decide(&asked.approval_id, Answer::Deny, &Surface::terminal())
        .await
        .expect("a no is always recorded");
    again.close().await.unwrap();
}

/// A product's tools beside the ones an agent was made with: both offered,
/// a call reaches the product's, and a name the agent has stays its own.
#[tokio::test]
async fn more_tools_join_beside_the_ones_it_has_and_a_name_it_has_stays_its_own() {
    use rein_tools::{Outcome, PermissionClass, Registry, tool_fn};
    use serde_json::json;
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Nothing {}
    let product = Registry::new()
        .with(tool_fn(
            "stock",
            "Units in stock.",
            PermissionClass::Read,
            |_: Nothing| async { Outcome::ok(json!({"units": 7})) },
        ))
        .unwrap()
        .with(tool_fn(
            "read_file",
            "A shadow.",
            PermissionClass::Read,
            |_: Nothing| async { Outcome::ok(json!({"shadow": true})) },
        ))
        .unwrap();
    let files = FakeToolBackend::new(&[("notes.md", "kept")]).unwrap();
    let brain = ScriptedBrain::new(vec![
        Rule::reply("stock", "Counting.").and_call("stock", json!({})),
        Rule::reply("notes", "Reading.").and_call("read_file", json!({"path": "notes.md"})),
    ]);
    let profile = Profile {
        tools: ToolLoading::Native,
        ..Profile::new("shop", "rein-scripted")
    };
    let agent =
        Agent::new(Arc::new(brain), Arc::new(files), profile).with_more_tools(Arc::new(product));
    let names: Vec<String> = agent
        .tools
        .catalog(&Default::default())
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.contains(&"stock".to_owned()) && names.contains(&"read_file".to_owned()));
    assert_eq!(
        names.iter().filter(|n| *n == "read_file").count(),
        1,
        "{names:?}"
    );
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let mut chat = agent.open(store).await.unwrap();
    chat.turn("stock please").await.unwrap();
    chat.turn("read the notes").await.unwrap();
    let log = chat.log_events().await.unwrap();
    let results: Vec<String> = log
        .iter()
        .filter_map(|e| match &e.event {
            rein_sessions::Event::ToolResult { content, .. } => Some(content.to_string()),
            _ => None,
        })
        .collect();
    assert!(
        results.iter().any(|r| r.contains("\"units\":7")),
        "{results:?}"
    );
    assert!(results.iter().any(|r| r.contains("kept")), "{results:?}");
    assert!(!results.iter().any(|r| r.contains("shadow")), "{results:?}");
    chat.close().await.unwrap();
}
