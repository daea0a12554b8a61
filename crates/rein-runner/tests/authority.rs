//! The run's authority: recorded at its start, checked on resume. A run
//! paused at an approval and resumed by a process offering another tool,
//! another model or another sandbox is refused until a person accepts the
//! change; the acceptance names them.

use std::sync::Arc;

use rein_approvals::{Answer, LeaseScope, Surface};
use rein_runner::{Conversation, Profile, TurnOutcome};
use rein_sessions::{Event, MemoryStore, Store};
use rein_testing::{FakeProvider, ScriptedCall, ScriptedMessage};
use rein_tools::{Outcome, PermissionClass, Registry, tool_fn};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Put {
    /// What to store.
    value: String,
}

fn tools(extra: bool) -> Arc<Registry> {
    let registry = Registry::new()
        .with(tool_fn(
            "put",
            "Store a value.",
            PermissionClass::Write,
            |input: Put| async move { Outcome::ok(json!({"stored": input.value})) },
        ))
        .expect("put");
    Arc::new(if extra {
        registry
            .with(tool_fn(
                "wipe",
                "Wipe everything.",
                PermissionClass::Destructive,
                |_: Put| async { Outcome::ok(json!("wiped")) },
            ))
            .expect("wipe")
    } else {
        registry
    })
}

fn provider() -> Arc<FakeProvider> {
    Arc::new(FakeProvider::from_messages(&[
        ScriptedMessage::text(&[])
            .with_call(ScriptedCall::to("put", json!({"value": "x"})).id("c1")),
        ScriptedMessage::text(&["Stored."]),
    ]))
}

async fn open(
    store: &Arc<MemoryStore>,
    session: Option<&str>,
    extra_tool: bool,
    sandbox: &str,
    provider: Arc<FakeProvider>,
) -> Conversation {
    let mut conversation = Conversation::open(
        store.clone(),
        provider,
        tools(extra_tool),
        Profile::new("t", "fake-model"),
        session,
    )
    .await
    .expect("open");
    conversation.agent.guards.authority = json!({"root": "/project", "sandbox": sandbox});
    conversation
}

#[tokio::test]
async fn a_resume_under_changed_authority_waits_for_a_person() {
    let store = Arc::new(MemoryStore::new());
    let mut first = open(&store, None, false, "linux: landlock", provider()).await;
    let TurnOutcome::AwaitingApproval(asked) = first.turn("store x").await.expect("turn") else {
        panic!("put asks");
    };
    let session = first.session_id().to_owned();
    first
        .decide(
            &asked.approval_id,
            Answer::Approve(LeaseScope::Once),
            &Surface::terminal(),
        )
        .await
        .expect("decided");
    first.close().await.expect("closed");

    // Another process offers one more tool and runs commands unisolated.
    let later = provider();
    let mut second = open(
        &store,
        Some(&session),
        true,
        "host: NOT ISOLATED",
        later.clone(),
    )
    .await;
    let refused = second.resume().await.expect_err("refused");
    assert_eq!(refused.code.as_str(), "authority_changed");
    assert!(
        refused.message.contains("product") && refused.message.contains("tool wipe added"),
        "{}",
        refused.message
    );
    assert!(
        later.requests().is_empty(),
        "nothing ran under the new authority"
    );

    second
        .accept_authority(&Surface::terminal())
        .await
        .expect("accepted");
    let done = second.resume().await.expect("resumed");
    assert!(matches!(done, TurnOutcome::Finished { .. }), "{done:?}");
    let log: Vec<Event> = rein_sessions::read_all(store.as_ref() as &dyn Store, &session)
        .await
        .expect("log")
        .into_iter()
        .map(|e| e.event)
        .collect();
    let accepted: Vec<(String, Value)> = log
        .iter()
        .filter_map(|e| match e {
            Event::AuthorityAccepted { by, to, .. } => {
                Some((by.clone(), to["product"]["sandbox"].clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        accepted,
        [("terminal".to_owned(), json!("host: NOT ISOLATED"))]
    );
}

#[tokio::test]
async fn the_same_authority_resumes_without_asking() {
    let store = Arc::new(MemoryStore::new());
    let mut first = open(&store, None, false, "linux", provider()).await;
    let TurnOutcome::AwaitingApproval(asked) = first.turn("store x").await.expect("turn") else {
        panic!("put asks");
    };
    let session = first.session_id().to_owned();
    first
        .decide(
            &asked.approval_id,
            Answer::Approve(LeaseScope::Once),
            &Surface::terminal(),
        )
        .await
        .expect("decided");
    first.close().await.expect("closed");
    let mut second = open(&store, Some(&session), false, "linux", provider()).await;
    let done = second.resume().await.expect("same authority");
    assert!(matches!(done, TurnOutcome::Finished { .. }), "{done:?}");
}

/// The product's own context, handed to its tools.
struct Tenant(&'static str);

/// Stores a name; normalises it once (trimmed, lower case) and reads the
/// tenant from the product's context.
struct Rename {
    seen: Arc<std::sync::Mutex<Vec<String>>>,
}

impl rein_tools::Tool for Rename {
    type Input = Put;

    fn name(&self) -> &str {
        "rename"
    }

    fn description(&self) -> &str {
        "Rename the project."
    }

    fn permission(&self, _input: &Put) -> PermissionClass {
        PermissionClass::Write
    }

    fn prepare(&self, mut args: Value) -> Result<Value, rein_wire::AgentError> {
        if let Some(value) = args.get("value").and_then(Value::as_str) {
            args["value"] = json!(value.trim().to_lowercase());
        }
        Ok(args)
    }

    async fn invoke(&self, input: Put, ctx: &rein_tools::ToolContext) -> Outcome {
        let tenant = ctx.app.get::<Tenant>().map_or("none", |t| t.0);
        self.seen
            .lock()
            .expect("lock")
            .push(format!("{tenant}:{}", input.value));
        Outcome::ok(json!("renamed"))
    }
}

#[tokio::test]
async fn arguments_are_prepared_once_and_tools_read_the_products_context() {
    let seen: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let tools = Registry::new()
        .with(Rename { seen: seen.clone() })
        .expect("rename");
    let provider = Arc::new(FakeProvider::from_messages(&[
        ScriptedMessage::text(&[])
            .with_call(ScriptedCall::to("rename", json!({"value": "  Shop  "})).id("c1")),
        ScriptedMessage::text(&["Renamed."]),
    ]));
    let mut conversation = Conversation::open(
        Arc::new(MemoryStore::new()),
        provider,
        Arc::new(tools),
        Profile::new("t", "fake-model"),
        None,
    )
    .await
    .expect("open");
    conversation.agent.guards.app_context = rein_tools::AppContext::new(Tenant("acme"));
    let TurnOutcome::AwaitingApproval(asked) = conversation.turn("rename").await.expect("turn")
    else {
        panic!("a write asks");
    };
    assert_eq!(
        asked.arguments,
        json!({"value": "shop"}),
        "the person sees the prepared input"
    );
    conversation
        .decide_and_resume(
            &asked.approval_id,
            Answer::Approve(LeaseScope::Once),
            &Surface::terminal(),
        )
        .await
        .expect("resumed");
    assert_eq!(
        *seen.lock().expect("lock"),
        ["acme:shop"],
        "the tool ran on what the person saw"
    );
}
