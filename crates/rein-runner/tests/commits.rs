//! Where a step's durable points are: a tool runs only once its
//! `tool.called` (and the model's answer that asked for it) is in the
//! store, and a step of reads costs one commit — the answer with its calls
//! (and the previous step's read results) — not one per event.

use std::sync::{Arc, Mutex};

use crate::common::kinds;
use rein_runner::{Conversation, Profile, TurnOutcome};
use rein_sessions::{Event, MemoryStore, Store};
use rein_testing::{Rule, ScriptedBrain};
use rein_tools::{Outcome, Registry, tool_fn};
use rein_wire::permission::PermissionClass;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// What the tool is asked for.
#[derive(Deserialize, JsonSchema)]
struct Topic {
    /// The topic.
    name: String,
}

#[tokio::test]
async fn a_tool_runs_after_its_call_is_durable_and_a_read_step_is_one_commit() {
    let store = Arc::new(MemoryStore::new());
    // What the store held when the tool ran: (model.completed there,
    // tool.called there).
    let seen: Arc<Mutex<Vec<(bool, bool)>>> = Arc::default();
    let look = {
        let (store, seen) = (store.clone(), seen.clone());
        tool_fn(
            "look",
            "Look a topic up.",
            PermissionClass::Read,
            move |topic: Topic| {
                let (store, seen) = (store.clone(), seen.clone());
                async move {
                    let session = store.list_sessions(1).await.unwrap().remove(0);
                    let log = store.read(&session.id, 1, 1000).await.unwrap();
                    let answered = log
                        .iter()
                        .any(|e| matches!(e.event, Event::ModelCompleted { .. }));
                    let called = log.iter().any(
                        |e| matches!(&e.event, Event::ToolCalled { tool, .. } if tool == "look"),
                    );
                    seen.lock().unwrap().push((answered, called));
                    Outcome::ok(json!({"topic": topic.name, "found": true}))
                }
            },
        )
    };
    let brain = ScriptedBrain::new(vec![
        Rule::reply("look up", "Looking.")
            .and_call("look", json!({}))
            .word_into("name"),
    ]);
    let mut chat = Conversation::open(
        store.clone(),
        Arc::new(brain),
        Arc::new(Registry::new().with(look).unwrap()),
        Profile::new("desk", "rein-scripted"),
        None,
    )
    .await
    .unwrap();
    let before = store.commits();
    let outcome = chat.turn("look up rust").await.unwrap();
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    assert_eq!(*seen.lock().unwrap(), [(true, true)]);
    // The turn's start; the read step's answer with its call; the result
    // with the last step's answer and the turn's end.
    assert_eq!(store.commits() - before, 3);
    assert_eq!(
        kinds(store.as_ref(), chat.session_id()).await,
        [
            "session.created",
            "turn.started",
            "run.started",
            "model.requested",
            "model.completed",
            "tool.called",
            "tool.result",
            "model.requested",
            "model.completed",
            "turn.finished",
            "run.finished"
        ]
    );
    chat.close().await.unwrap();
}
