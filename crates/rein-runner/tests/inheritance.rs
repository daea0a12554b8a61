//! The one inheritance rule, attacked: a model that delegates (or a graph
//! task that names another agent) must not get past a guard its parent
//! runs under. A parent's deny hook blocks the same call in a sub-agent
//! and in graph tasks (the graph's own and a named agent's); a parent's
//! policy that forbids writes holds there too, even when the named agent
//! asks for writes; the product's app context reaches a child's tool and
//! every hook; a product's child factory gives each sub-agent and graph
//! task its own context, authority and session record, and never a guard;
//! a named agent's tools only narrow the graph's.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] fns: a failure is the test failing"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rein_orchestrator::{GraphSpec, Scheduler, TaskSpec, TaskState};
use rein_runner::hooks::{Hook, HookEffect, HookFuture, HookInput, HookPoint};
use rein_runner::{Agent, ConversationTasks, Delegation, Profile, ToolLoading, TurnOutcome};
use rein_sessions::{Event, MemoryStore, Store};
use rein_testing::{Rule, ScriptedBrain};
use rein_tools::{AppContext, Outcome, PermissionClass, Registry, Tool, ToolContext};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// What the product puts in every tool call's context.
struct Shop {
    customer: &'static str,
}

#[derive(Deserialize, JsonSchema)]
struct Target {
    /// What to act on.
    path: String,
}

/// `remove`: a write that counts its runs. `whoami`: a read that answers
/// with the product's customer from the app context.
struct Remove(Arc<AtomicUsize>);

impl Tool for Remove {
    type Input = Target;
    fn name(&self) -> &str {
        "remove"
    }
    fn description(&self) -> &str {
        "Remove a file."
    }
    fn permission(&self, _: &Target) -> PermissionClass {
        PermissionClass::Write
    }
    async fn invoke(&self, input: Target, _: &ToolContext) -> Outcome {
        self.0.fetch_add(1, Ordering::SeqCst);
        Outcome::ok(json!({"removed": input.path}))
    }
}

struct WhoAmI;

impl Tool for WhoAmI {
    type Input = Target;
    fn name(&self) -> &str {
        "whoami"
    }
    fn description(&self) -> &str {
        "Say who the customer is."
    }
    fn permission(&self, _: &Target) -> PermissionClass {
        PermissionClass::Read
    }
    async fn invoke(&self, _: Target, ctx: &ToolContext) -> Outcome {
        match ctx.app.get::<Shop>() {
            Some(shop) => Outcome::ok(json!({"customer": shop.customer})),
            None => Outcome::failed("no_context", "the product's context did not arrive"),
        }
    }
}

/// Denies every `remove` before it is checked or asked.
struct DenyRemove;

impl Hook for DenyRemove {
    fn name(&self) -> &str {
        "deny-remove"
    }
    fn hears(&self, point: HookPoint) -> bool {
        point == HookPoint::BeforeCall
    }
    fn run<'a>(&'a self, input: &'a HookInput) -> HookFuture<'a> {
        let deny = input.tool.as_deref() == Some("remove");
        Box::pin(async move {
            Ok(if deny {
                HookEffect::Deny("the product never removes files".into())
            } else {
                HookEffect::Continue
            })
        })
    }
}

fn rules() -> Vec<Rule> {
    vec![
        Rule::reply("hand off the removal", "Delegating.")
            .and_call("delegate", json!({"task": "remove old.txt"})),
        Rule::reply("hand off who", "Delegating.")
            .and_call("delegate", json!({"task": "whoami please"})),
        Rule::reply("remove ", "Removing.").and_call("remove", json!({"path": "old.txt"})),
        Rule::reply("whoami", "Asking.").and_call("whoami", json!({"path": "."})),
    ]
}

fn agent(removed: &Arc<AtomicUsize>) -> Agent {
    let tools = Registry::new()
        .with(Remove(removed.clone()))
        .unwrap()
        .with(WhoAmI)
        .unwrap();
    let profile = Profile {
        tools: ToolLoading::Native,
        ..Profile::new("shop", "m")
    };
    Agent::new(
        Arc::new(ScriptedBrain::new(rules())),
        Arc::new(tools),
        profile,
    )
}

/// Every `hook.ran` deny and every `remove` result in a session.
async fn denials(store: &dyn Store, session: &str) -> usize {
    rein_sessions::read_all(store, session)
        .await
        .unwrap()
        .iter()
        .filter(|e| matches!(&e.event, Event::HookRan { hook, effect, .. } if hook == "deny-remove" && *effect == rein_wire::HookDid::Deny))
        .count()
}

/// One turn; a child that waits for a person (a guard it lost) is a
/// failure, not a hang.
async fn turn(conversation: &mut rein_runner::Conversation, text: &str) -> TurnOutcome {
    tokio::time::timeout(Duration::from_secs(20), conversation.turn(text))
        .await
        .expect("the turn ended: no child waited for a person")
        .unwrap()
}

/// The sessions a parent started sub-agents in.
async fn children(store: &dyn Store, parent: &str) -> Vec<String> {
    rein_approvals::family(store, parent)
        .await
        .unwrap()
        .into_iter()
        .skip(1)
        .map(|(session, _)| session)
        .collect()
}

#[tokio::test]
async fn a_parents_deny_hook_blocks_the_same_call_in_a_sub_agent() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let removed = Arc::new(AtomicUsize::new(0));
    let mut conversation = agent(&removed)
        .with_hook(Arc::new(DenyRemove))
        .with_delegation(Delegation::default())
        .open(store.clone())
        .await
        .unwrap();
    let outcome = turn(&mut conversation, "hand off the removal").await;
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    let kids = children(store.as_ref(), conversation.session_id()).await;
    assert_eq!(kids.len(), 1, "one sub-agent ran");
    assert_eq!(
        denials(store.as_ref(), &kids[0]).await,
        1,
        "the child's call was denied by the parent's hook"
    );
    assert_eq!(removed.load(Ordering::SeqCst), 0, "nothing was removed");
}

#[tokio::test]
async fn a_parents_policy_holds_in_a_sub_agent() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let removed = Arc::new(AtomicUsize::new(0));
    let policy = rein_approvals::Policy {
        writes_allowed: false,
        ..rein_approvals::Policy::default()
    };
    let mut conversation = agent(&removed)
        .with_policy(policy)
        .with_delegation(Delegation::default())
        .open(store.clone())
        .await
        .unwrap();
    let outcome = turn(&mut conversation, "hand off the removal").await;
    // The child never waits for a person: the write is refused outright.
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    assert_eq!(removed.load(Ordering::SeqCst), 0);
    let kids = children(store.as_ref(), conversation.session_id()).await;
    let log = rein_sessions::read_all(store.as_ref(), &kids[0])
        .await
        .unwrap();
    assert!(
        log.iter().any(|e| matches!(&e.event, Event::ToolResult { content, .. } if content.to_string().contains("policy_refused"))),
        "the child's write is refused by the parent's policy: {:?}",
        log.iter().map(|e| e.event.kind()).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn the_products_context_reaches_a_childs_tool() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let removed = Arc::new(AtomicUsize::new(0));
    let mut conversation = agent(&removed)
        .with_app_context(AppContext::new(Shop { customer: "ada" }))
        .with_delegation(Delegation::default())
        .open(store.clone())
        .await
        .unwrap();
    turn(&mut conversation, "hand off who").await;
    let kids = children(store.as_ref(), conversation.session_id()).await;
    let log = rein_sessions::read_all(store.as_ref(), &kids[0])
        .await
        .unwrap();
    let answered = log.iter().any(|e| {
        matches!(&e.event, Event::ToolResult { content, .. } if content.to_string().contains("\"ada\""))
    });
    assert!(answered, "the child's whoami saw the product's context");
}

/// Run one graph of tasks under `tasks` to its end.
async fn run_tasks(tasks: ConversationTasks, specs: Vec<TaskSpec>) -> Vec<(String, TaskState)> {
    let graph = GraphSpec {
        tasks: specs,
        ..GraphSpec::default()
    }
    .check()
    .unwrap();
    let run = Scheduler::new(graph, Arc::new(tasks)).run();
    tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .unwrap()
        .tasks
}

#[tokio::test]
async fn a_graphs_guards_hold_in_every_task_whatever_agent_it_names() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let removed = Arc::new(AtomicUsize::new(0));
    let graph_agent = agent(&removed)
        .with_hook(Arc::new(DenyRemove))
        .with_app_context(AppContext::new(Shop { customer: "ada" }));
    // A named agent that brings no hook and asks for writes.
    let cleaner = Agent {
        profile: Profile {
            tools: ToolLoading::Native,
            ..Profile::new("cleaner", "m").with_system("You clean up.")
        },
        ..agent(&removed)
    };
    let tasks = ConversationTasks::of(store.clone(), graph_agent).with_agent("cleaner", cleaner);
    let mut own = TaskSpec::new("own", "remove old.txt");
    own.retries = Some(0);
    let mut named = TaskSpec::new("named", "remove old.txt");
    named.agent = Some("cleaner".into());
    named.retries = Some(0);
    let mut who = TaskSpec::new("who", "whoami please");
    who.agent = Some("cleaner".into());
    run_tasks(tasks, vec![own, named, who]).await;
    assert_eq!(
        removed.load(Ordering::SeqCst),
        0,
        "no task removed anything"
    );
    let sessions = store.list_sessions(50).await.unwrap();
    let mut denied = 0;
    let mut saw_customer = false;
    for session in &sessions {
        denied += denials(store.as_ref(), &session.id).await;
        let log = rein_sessions::read_all(store.as_ref(), &session.id)
            .await
            .unwrap();
        saw_customer |= log.iter().any(|e| {
            matches!(&e.event, Event::ToolResult { content, .. } if content.to_string().contains("\"ada\""))
        });
    }
    assert_eq!(denied, 2, "both removals were denied by the graph's hook");
    assert!(
        saw_customer,
        "the named agent's task saw the product's context"
    );
}

#[tokio::test]
async fn a_named_agent_gets_no_tool_the_graph_lacks_and_no_looser_policy() {
    let removed = Arc::new(AtomicUsize::new(0));
    // The graph's agent has only `whoami`, and forbids writes.
    let reads_only = Agent::new(
        Arc::new(ScriptedBrain::new(rules())),
        Arc::new(Registry::new().with(WhoAmI).unwrap()),
        Profile {
            tools: ToolLoading::Native,
            ..Profile::new("reader", "m")
        },
    )
    .with_policy(rein_approvals::Policy {
        writes_allowed: false,
        ..rein_approvals::Policy::default()
    });
    let wider = agent(&removed);
    let child = reads_only.child(Some(&wider), None);
    let names: Vec<String> = child
        .tools
        .catalog(&rein_approvals::Policy::default())
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["whoami"], "tools only narrow");
    assert!(!child.guards.policy.writes_allowed, "policy only narrows");
    let value: Value = json!(child.profile.name);
    assert_eq!(value, json!("shop"), "its words are its own");
}

/// A hook that decides with the product's context: it records the
/// customer it was told at each point, and denies every call of a
/// customer the product has blocked.
struct TenantRule(Arc<std::sync::Mutex<Vec<(HookPoint, String)>>>);

impl Hook for TenantRule {
    fn name(&self) -> &str {
        "tenant-rule"
    }
    fn hears(&self, _: HookPoint) -> bool {
        true
    }
    fn run<'a>(&'a self, input: &'a HookInput) -> HookFuture<'a> {
        let customer = input.app.get::<Shop>().map_or("none", |s| s.customer);
        self.0
            .lock()
            .unwrap()
            .push((input.point, customer.to_owned()));
        let blocked = customer == "blocked" && input.point == HookPoint::BeforeCall;
        Box::pin(async move {
            Ok(if blocked {
                HookEffect::Deny("this customer may not use tools".into())
            } else {
                HookEffect::Continue
            })
        })
    }
}

#[tokio::test]
async fn a_products_hook_decides_with_its_context() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let removed = Arc::new(AtomicUsize::new(0));
    let told = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut ada = agent(&removed)
        .with_hook(Arc::new(TenantRule(told.clone())))
        .with_app_context(AppContext::new(Shop { customer: "ada" }))
        .open(store.clone())
        .await
        .unwrap();
    turn(&mut ada, "whoami").await;
    let points: Vec<HookPoint> = told.lock().unwrap().iter().map(|(p, _)| *p).collect();
    for point in [
        HookPoint::BeforeModelCall,
        HookPoint::BeforeCall,
        HookPoint::AfterCall,
        HookPoint::TurnEnd,
    ] {
        assert!(points.contains(&point), "{point:?} heard: {points:?}");
    }
    assert!(
        told.lock().unwrap().iter().all(|(_, c)| c == "ada"),
        "every point was told the product's context: {told:?}"
    );

    let mut blocked = agent(&removed)
        .with_hook(Arc::new(TenantRule(told.clone())))
        .with_app_context(AppContext::new(Shop {
            customer: "blocked",
        }))
        .open(store.clone())
        .await
        .unwrap();
    turn(&mut blocked, "whoami").await;
    let log = rein_sessions::read_all(store.as_ref(), blocked.session_id())
        .await
        .unwrap();
    assert!(
        log.iter().any(|e| matches!(&e.event, Event::HookRan { hook, effect, .. } if hook == "tenant-rule" && *effect == rein_wire::HookDid::Deny)),
        "the blocked customer's call was denied by the hook"
    );
    assert!(
        !log.iter().any(|e| matches!(&e.event, Event::ToolResult { content, .. } if content.to_string().contains("\"customer\""))),
        "whoami never ran for the blocked customer"
    );
}

/// The product's factory: each child is its customer's helper, with an
/// authority naming what it was asked, and a session record that tries
/// to rewrite rein's own keys.
struct Helpers(Arc<std::sync::Mutex<Vec<String>>>);

impl rein_runner::ChildFactory for Helpers {
    fn context(&self, child: &rein_runner::ChildOf<'_>) -> rein_runner::ChildContext {
        let parent = child
            .app_context
            .get::<Shop>()
            .map_or("none", |s| s.customer);
        self.0.lock().unwrap().push(format!(
            "parent customer {parent}; path {:?}; task {:?}; graph task {:?}",
            child.agent_path, child.task, child.graph_task
        ));
        rein_runner::ChildContext {
            app_context: AppContext::new(Shop {
                customer: "ada's helper",
            }),
            authority: json!({"scope": "helper", "asked": child.task}),
        }
    }

    fn session(&self, child: &rein_runner::ChildOf<'_>) -> Value {
        json!({"tenant": "ada", "parent_session": "forged", "of": child.parent})
    }
}

/// The `run.started` authority of every run in `session`.
async fn authorities(store: &dyn Store, session: &str) -> Vec<Value> {
    rein_sessions::read_all(store, session)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::RunStarted { profile, .. } => Some(profile["authority"].clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_products_factory_gives_each_sub_agent_its_context_authority_and_record_never_a_guard() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let removed = Arc::new(AtomicUsize::new(0));
    let told = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut conversation = agent(&removed)
        .with_hook(Arc::new(DenyRemove))
        .with_app_context(AppContext::new(Shop { customer: "ada" }))
        .with_child_factory(Arc::new(Helpers(told.clone())))
        .with_delegation(Delegation::default())
        .open(store.clone())
        .await
        .unwrap();
    let parent = conversation.session_id().to_owned();
    turn(&mut conversation, "hand off who").await;
    turn(&mut conversation, "hand off the removal").await;

    let told = told.lock().unwrap().clone();
    assert_eq!(
        told[..2],
        [
            "parent customer ada; path Some(\"main/agent-1\"); task \"whoami please\"; graph task None",
            "parent customer ada; path Some(\"main/agent-1\"); task \"remove old.txt\"; graph task None",
        ],
        "the factory is told of each child"
    );
    let kids = children(store.as_ref(), &parent).await;
    assert_eq!(kids.len(), 2, "{kids:?}");
    let who = rein_sessions::read_all(store.as_ref(), &kids[0])
        .await
        .unwrap();
    assert!(
        who.iter().any(|e| matches!(&e.event, Event::ToolResult { content, .. } if content.to_string().contains("ada's helper"))),
        "the child's tool got the factory's context"
    );
    assert_eq!(
        authorities(store.as_ref(), &kids[0]).await[0]["product"],
        json!({"scope": "helper", "asked": "whoami please"}),
        "the child's run records the factory's authority"
    );
    let info = store.session(&kids[0]).await.unwrap();
    assert_eq!(info.metadata["app"]["tenant"], json!("ada"));
    assert_eq!(info.metadata["app"]["of"], json!(parent));
    assert_eq!(
        info.metadata["parent_session"],
        json!(parent),
        "rein's own keys stay rein's"
    );
    // Its guards are still the parent's: the removal is denied.
    assert_eq!(denials(store.as_ref(), &kids[1]).await, 1);
    assert_eq!(removed.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_products_factory_gives_each_graph_task_its_context_and_record() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let removed = Arc::new(AtomicUsize::new(0));
    let told = Arc::new(std::sync::Mutex::new(Vec::new()));
    let graph_agent = agent(&removed)
        .with_app_context(AppContext::new(Shop { customer: "ada" }))
        .with_child_factory(Arc::new(Helpers(told.clone())));
    let tasks = ConversationTasks::of(store.clone(), graph_agent);
    let mut who = TaskSpec::new("who", "whoami please");
    who.retries = Some(0);
    run_tasks(tasks, vec![who]).await;
    let told = told.lock().unwrap().clone();
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(
        told[0].contains("parent customer ada") && told[0].contains("graph task Some(\"who\")"),
        "{told:?}"
    );
    let sessions = store.list_sessions(10).await.unwrap();
    let task = sessions
        .iter()
        .find(|s| s.metadata["graph_task"] == json!("who"))
        .expect("the task's session");
    assert_eq!(task.metadata["app"]["tenant"], json!("ada"));
    let log = rein_sessions::read_all(store.as_ref(), &task.id)
        .await
        .unwrap();
    assert!(
        log.iter().any(|e| matches!(&e.event, Event::ToolResult { content, .. } if content.to_string().contains("ada's helper"))),
        "the task's tool got the factory's context"
    );
    assert_eq!(
        authorities(store.as_ref(), &task.id).await[0]["product"]["scope"],
        json!("helper")
    );
}
