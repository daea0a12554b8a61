//! Hooks at a turn's fixed points: a deny, an edit (checked again, so an
//! invalid one is refused), an annotation the model reads, a command hook
//! speaking JSON, one that times out (fail closed), a model call denied,
//! and a hook never asked twice about one call across an approval.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rein_approvals::{Answer, LeaseScope, Surface};
use rein_runner::hooks::{CommandHook, Hook, HookEffect, HookFuture, HookInput, HookPoint};
use rein_runner::{Conversation, Profile, TurnOutcome};
use rein_sessions::{Event, MemoryStore};
use rein_testing::{FakeProvider, ScriptedCall, ScriptedMessage};
use rein_tools::{Outcome, PermissionClass, Registry, tool_fn};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Put {
    /// What to store.
    value: String,
}

/// A registry with `put` (asks a person) and `get` (a read); what `put`
/// stored is kept.
fn tools(stored: Arc<Mutex<Vec<String>>>) -> Registry {
    Registry::new()
        .with(tool_fn(
            "put",
            "Store a value.",
            PermissionClass::Write,
            move |input: Put| {
                let stored = stored.clone();
                async move {
                    stored.lock().expect("lock").push(input.value.clone());
                    Outcome::ok(json!({"stored": input.value}))
                }
            },
        ))
        .expect("put")
        .with(tool_fn(
            "get",
            "Read.",
            PermissionClass::Read,
            |_: serde_json::Map<String, Value>| async { Outcome::ok(json!("the value")) },
        ))
        .expect("get")
}

/// How a scripted hook answers.
type Answerer = Box<dyn Fn(&HookInput) -> Result<HookEffect, String> + Send + Sync>;

/// A hook answering from a closure, counting its questions.
struct Scripted {
    point: HookPoint,
    asked: AtomicUsize,
    answer: Answerer,
}

impl Hook for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn hears(&self, point: HookPoint) -> bool {
        point == self.point
    }
    fn run<'a>(&'a self, input: &'a HookInput) -> HookFuture<'a> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let answer = (self.answer)(input);
        Box::pin(async move { answer })
    }
}

fn hook(
    point: HookPoint,
    answer: impl Fn(&HookInput) -> Result<HookEffect, String> + Send + Sync + 'static,
) -> Arc<Scripted> {
    Arc::new(Scripted {
        point,
        asked: AtomicUsize::new(0),
        answer: Box::new(answer),
    })
}

fn call(id: &str, tool: &str, args: Value) -> ScriptedMessage {
    ScriptedMessage::text(&[]).with_call(ScriptedCall::to(tool, args).id(id))
}

struct Setup {
    conversation: Conversation,
    provider: Arc<FakeProvider>,
    store: Arc<MemoryStore>,
    stored: Arc<Mutex<Vec<String>>>,
}

async fn setup(messages: &[ScriptedMessage], hooks: Vec<Arc<dyn Hook>>) -> Setup {
    let stored: Arc<Mutex<Vec<String>>> = Arc::default();
    let provider = Arc::new(FakeProvider::from_messages(messages));
    let store = Arc::new(MemoryStore::new());
    let mut conversation = Conversation::open(
        store.clone(),
        provider.clone(),
        Arc::new(tools(stored.clone())),
        Profile::new("t", "fake-model"),
        None,
    )
    .await
    .expect("open");
    conversation.agent.guards.hooks = hooks;
    Setup {
        conversation,
        provider,
        store,
        stored,
    }
}

async fn hook_events(setup: &Setup) -> Vec<(String, String)> {
    rein_sessions::read_all(setup.store.as_ref(), setup.conversation.session_id())
        .await
        .expect("log")
        .into_iter()
        .filter_map(|e| match e.event {
            Event::HookRan { point, effect, .. } => Some((point.to_string(), effect.to_string())),
            _ => None,
        })
        .collect()
}

async fn results(setup: &Setup) -> Vec<String> {
    rein_sessions::read_all(setup.store.as_ref(), setup.conversation.session_id())
        .await
        .expect("log")
        .into_iter()
        .filter_map(|e| match e.event {
            Event::ToolResult { content, .. } => Some(content.to_string()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_deny_refuses_the_call_before_anyone_is_asked() {
    let deny = hook(HookPoint::BeforeCall, |input| {
        Ok(if input.tool.as_deref() == Some("put") {
            HookEffect::Deny("no writes today".into())
        } else {
            HookEffect::Continue
        })
    });
    let mut s = setup(
        &[
            call("c1", "put", json!({"value": "x"})),
            ScriptedMessage::text(&["ok"]),
        ],
        vec![deny],
    )
    .await;
    let outcome = s.conversation.turn("store x").await.expect("turn");
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    assert!(s.stored.lock().expect("lock").is_empty());
    let results = results(&s).await;
    assert!(
        results[0].contains("hook_denied") && results[0].contains("no writes today"),
        "{results:?}"
    );
    assert_eq!(
        hook_events(&s).await,
        [("before_call".to_owned(), "deny".to_owned())]
    );
}

#[tokio::test]
async fn an_edit_is_checked_again_and_an_invalid_one_is_refused() {
    let edit = hook(HookPoint::BeforeCall, |_| {
        Ok(HookEffect::Edit(json!({"wrong": 1})))
    });
    let mut s = setup(
        &[
            call("c1", "get", json!({})),
            call("c2", "put", json!({"value": "x"})),
            ScriptedMessage::text(&["ok"]),
        ],
        vec![edit],
    )
    .await;
    let outcome = s.conversation.turn("go").await.expect("turn");
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    let results = results(&s).await;
    assert!(
        results[1].contains("tool_arguments_invalid"),
        "the edited arguments were validated: {results:?}"
    );
    assert!(s.stored.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn an_edit_survives_the_approval_and_the_hook_is_asked_once() {
    let edit = hook(HookPoint::BeforeCall, |_| {
        Ok(HookEffect::Edit(json!({"value": "edited"})))
    });
    let counter = edit.clone();
    let mut s = setup(
        &[
            call("c1", "put", json!({"value": "original"})),
            ScriptedMessage::text(&["ok"]),
        ],
        vec![edit],
    )
    .await;
    let TurnOutcome::AwaitingApproval(asked) = s.conversation.turn("store").await.expect("turn")
    else {
        panic!("put asks a person");
    };
    assert_eq!(
        asked.arguments,
        json!({"value": "edited"}),
        "the person is asked about what will run"
    );
    let done = s
        .conversation
        .decide_and_resume(
            &asked.approval_id,
            Answer::Approve(LeaseScope::Once),
            &Surface::terminal(),
        )
        .await
        .expect("resume");
    assert!(matches!(done, TurnOutcome::Finished { .. }), "{done:?}");
    assert_eq!(*s.stored.lock().expect("lock"), ["edited"]);
    assert_eq!(
        counter.asked.load(Ordering::SeqCst),
        1,
        "read back on resume, not asked again"
    );
}

#[tokio::test]
async fn an_annotation_reaches_the_model() {
    let note = hook(HookPoint::AfterCall, |_| {
        Ok(HookEffect::Annotate("checked by the linter".into()))
    });
    let mut s = setup(
        &[call("c1", "get", json!({})), ScriptedMessage::text(&["ok"])],
        vec![note],
    )
    .await;
    s.conversation.turn("read").await.expect("turn");
    let second = serde_json::to_string(&s.provider.requests()[1].messages).expect("json");
    assert!(
        second.contains("[hook scripted] checked by the linter"),
        "{second}"
    );
    assert_eq!(
        hook_events(&s).await,
        [("after_call".to_owned(), "annotate".to_owned())]
    );
}

#[tokio::test]
async fn a_command_hook_speaks_json_and_one_that_times_out_fails_closed() {
    let denying = CommandHook {
        name: "policy-script".into(),
        command: vec![
            "sh".into(),
            "-c".into(),
            r#"cat > /dev/null; echo '{"effect":"deny","reason":"not on Fridays"}'"#.into(),
        ],
        points: vec![HookPoint::BeforeCall],
        timeout: Duration::from_secs(10),
        cwd: None,
    };
    let mut s = setup(
        &[call("c1", "get", json!({})), ScriptedMessage::text(&["ok"])],
        vec![Arc::new(denying)],
    )
    .await;
    s.conversation.turn("read").await.expect("turn");
    assert!(results(&s).await[0].contains("not on Fridays"));

    let slow = CommandHook {
        name: "slow".into(),
        command: vec!["sleep".into(), "5".into()],
        points: vec![HookPoint::BeforeCall],
        timeout: Duration::from_millis(200),
        cwd: None,
    };
    let mut s = setup(
        &[
            call("c1", "put", json!({"value": "x"})),
            ScriptedMessage::text(&["ok"]),
        ],
        vec![Arc::new(slow)],
    )
    .await;
    let outcome = s.conversation.turn("store").await.expect("turn");
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "refused, not waiting for a person: {outcome:?}"
    );
    let results = results(&s).await;
    assert!(
        results[0].contains("hook_denied") && results[0].contains("did not answer within 200 ms"),
        "{results:?}"
    );
    assert_eq!(
        hook_events(&s).await,
        [("before_call".to_owned(), "failed".to_owned())]
    );
    assert!(s.stored.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn a_model_call_can_be_denied() {
    let deny = hook(HookPoint::BeforeModelCall, |_| {
        Ok(HookEffect::Deny("over the daily quota".into()))
    });
    let mut s = setup(&[ScriptedMessage::text(&["never sent"])], vec![deny]).await;
    let TurnOutcome::Error { error } = s.conversation.turn("hi").await.expect("turn") else {
        panic!("denied");
    };
    assert_eq!(error.code.as_str(), "hook_denied");
    assert!(s.provider.requests().is_empty(), "no model call was made");
}
