//! `McpServe` with elicitation allowed: a client that declares form
//! elicitation is asked about a write; its person's yes runs the call once,
//! a decline refuses it, and the log names the surface. Without the
//! setting the client is never asked (only `rein approve` decides).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rein_mcp::{McpServe, ServeSettings};
use rein_sessions::{Event, MemoryStore};
use rein_tools::{Outcome, PermissionClass, Registry, tool_fn};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, FormElicitationCapability, Implementation,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// A client whose person answers each elicitation from a script.
#[derive(Clone)]
struct Person {
    answers: Arc<Vec<Option<bool>>>,
    asked: Arc<AtomicUsize>,
}

impl ClientHandler for Person {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        assert!(message.contains("`put`"), "{message}");
        let n = self.asked.fetch_add(1, Ordering::SeqCst);
        Ok(match self.answers.get(n).copied().flatten() {
            Some(approve) => {
                let mut result = ElicitResult::new(ElicitationAction::Accept);
                result.content = Some(json!({"approve": approve}));
                result
            }
            None => ElicitResult::new(ElicitationAction::Decline),
        })
    }

    fn get_info(&self) -> ClientConfig {
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(FormElicitationCapability::new());
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(elicitation);
        let mut info = ClientConfig::default();
        info.capabilities = capabilities;
        info.client_info = Implementation::new("editor", "1");
        info
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Put {
    /// What to store.
    value: String,
}

fn backend(runs: Arc<AtomicUsize>) -> Registry {
    Registry::new()
        .with(tool_fn(
            "put",
            "Store a value.",
            PermissionClass::Write,
            move |input: Put| {
                let runs = runs.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Outcome::ok(json!({"stored": input.value}))
                }
            },
        ))
        .expect("a valid tool")
}

fn put(value: &str) -> CallToolRequestParams {
    let Value::Object(args) = json!({"value": value}) else {
        unreachable!()
    };
    CallToolRequestParams::new("put").with_arguments(args)
}

async fn served(
    elicitation: bool,
    answers: Vec<Option<bool>>,
) -> (Arc<MemoryStore>, McpServe, Person, Arc<AtomicUsize>) {
    let store = Arc::new(MemoryStore::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let settings = ServeSettings {
        approval_wait: Duration::from_secs(3),
        elicitation,
        ..ServeSettings::default()
    };
    let serve = McpServe::open(
        store.clone(),
        Arc::new(backend(runs.clone())),
        None,
        settings,
    )
    .await
    .expect("open");
    let person = Person {
        answers: Arc::new(answers),
        asked: Arc::default(),
    };
    (store, serve, person, runs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_person_approves_and_declines_by_elicitation() {
    let (store, serve, person, runs) = served(true, vec![Some(true), None]).await;
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let server = serve.clone();
    tokio::spawn(async move {
        let running = server.serve(server_io).await.expect("server starts");
        let _ = running.waiting().await;
    });
    let client = person.clone().serve(client_io).await.expect("initialize");

    let yes = client.call_tool(put("one")).await.expect("answered");
    assert_ne!(yes.is_error, Some(true), "{yes:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let no = client.call_tool(put("two")).await.expect("answered");
    assert_eq!(no.is_error, Some(true), "{no:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "a declined call never runs");
    assert_eq!(person.asked.load(Ordering::SeqCst), 2);

    let decided: Vec<String> = rein_sessions::read_all(store.as_ref(), serve.session_id())
        .await
        .expect("log")
        .into_iter()
        .filter_map(|e| match e.event {
            Event::ApprovalDecided { by, decision, .. } => Some(format!("{decision:?} by {by}")),
            _ => None,
        })
        .collect();
    assert_eq!(decided.len(), 2, "{decided:?}");
    assert!(
        decided.iter().all(|d| d.contains("mcp-elicitation:editor")),
        "{decided:?}"
    );
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_setting_the_client_is_never_asked() {
    let (_store, serve, person, runs) = served(false, vec![Some(true)]).await;
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let server = serve.clone();
    tokio::spawn(async move {
        let running = server.serve(server_io).await.expect("server starts");
        let _ = running.waiting().await;
    });
    let client = person.clone().serve(client_io).await.expect("initialize");
    // Nobody decides within the wait: the call is stopped, never run.
    let waited = client.call_tool(put("one")).await.expect("answered");
    assert_eq!(waited.is_error, Some(true), "{waited:?}");
    assert_eq!(person.asked.load(Ordering::SeqCst), 0);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    client.cancel().await.expect("close");
}
