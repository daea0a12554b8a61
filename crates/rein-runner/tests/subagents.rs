//! Sub-agents: a `delegate` call runs a child conversation in its own
//! session, linked to the parent, read-only and bounded.

use std::sync::Arc;

use rein_runner::{Conversation, Delegation, Profile, ToolLoading, TurnOutcome};
use rein_sessions::{Event, SqliteStore, Store};
use rein_testing::{FakeToolBackend, Rule, ScriptedBrain};
use serde_json::json;

fn profile() -> Profile {
    Profile {
        max_output_tokens: 256,
        tools: ToolLoading::Native,
        ..Profile::new("Helper", "m").with_system("Be brief.")
    }
}

#[tokio::test]
async fn a_delegated_task_runs_in_a_linked_child_session() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let brain = Arc::new(ScriptedBrain::new(vec![
        Rule::reply("ask a helper", "Delegating.")
            .and_call("delegate", json!({"task": "read a.rs"})),
        Rule::reply("read ", "Reading.")
            .and_call("read_file", json!({}))
            .word_into("path"),
        Rule::reply("write ", "Writing.")
            .and_call("write_file", json!({"content": "x"}))
            .word_into("path"),
    ]));
    let backend = Arc::new(FakeToolBackend::new(&[("a.rs", "fn alpha() {}")]).unwrap());

    // Without delegation the tool is not offered, so the rule cannot fire.
    let mut plain = Conversation::open(
        store.clone(),
        brain.clone(),
        backend.clone(),
        profile(),
        None,
    )
    .await
    .unwrap();
    let request = plain.next_request().await.unwrap();
    assert!(!request.tools.iter().any(|t| t.name == "delegate"));
    plain.close().await.unwrap();

    let mut conv = Conversation::open(store.clone(), brain, backend.clone(), profile(), None)
        .await
        .unwrap();
    conv.agent.delegation = Some(Delegation::default());
    let outcome = conv.turn("ask a helper about a.rs").await.unwrap();
    let TurnOutcome::Finished { reply } = outcome else {
        panic!("{outcome:?}");
    };
    assert!(reply.contains("alpha"), "{reply}");
    assert_eq!(backend.invocations("read_file"), 1);

    let parent = conv.log_events().await.unwrap();
    let started: Vec<&str> = parent
        .iter()
        .filter_map(|e| match &e.event {
            Event::AgentStarted {
                agent_path, task, ..
            } => {
                assert_eq!(task, "read a.rs");
                Some(agent_path.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(started, ["main/agent-1"]);
    assert!(parent.iter().any(|e| matches!(&e.event,
        Event::AgentFinished { agent_path, outcome } if agent_path == "main/agent-1" && outcome == "finished")));
    // The parent's own events stay on the main path.
    assert!(parent.iter().all(|e| e.agent_path == "main"));

    // The child is a session of its own, linked to the parent, on its path.
    let sessions = store.list_sessions(10).await.unwrap();
    let child = sessions
        .iter()
        .find(|s| s.metadata["parent_session"] == json!(conv.session_id()))
        .expect("a child session");
    assert_eq!(child.metadata["agent_path"], json!("main/agent-1"));
    let child_log = store.read(&child.id, 0, 1000).await.unwrap();
    // The store writes `session.created` itself; everything the child did
    // carries its path.
    assert!(matches!(child_log[0].event, Event::SessionCreated { .. }));
    assert!(
        child_log[1..]
            .iter()
            .all(|e| e.agent_path == "main/agent-1")
    );
    assert!(
        child_log
            .iter()
            .any(|e| matches!(&e.event, Event::ToolCalled { tool, .. } if tool == "read_file"))
    );
    conv.close().await.unwrap();
}
