//! A helpdesk written from `docs/guide/library.md` alone: its own
//! definition, two typed tools, a refund its agent asks a person for, and
//! long-term memory — built with `rein::compose::Product`, so nothing of a
//! `rein` CLI user's home or folder comes in. The first process asks; the
//! second finds the waiting question by the ticket and decides it.
//!
//! Offline on the scripted model, or `REIN_BASE_URL` and `REIN_MODEL` for an
//! OpenAI-compatible server. Needs the `compose` feature.
use std::path::Path;

use rein::compose::Product;
use rein::prelude::*;
use rein::tools::PermissionClass::{Read, Write};

/// The helpdesk's own definition (a file works the same:
/// `Product::definition_file`).
const DEFINITION: &str = r#"
[agents.triage]
instructions = "You answer a shop's customers. Look an order up before you answer about it."
memory = { enabled = true, scope = "helpdesk" }
budgets = { max_steps = 8 }
"#;

#[derive(Deserialize, JsonSchema)]
struct Order {
    /// The order's number.
    id: u64,
}

#[tokio::main]
async fn main() -> Result<(), AgentError> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, step, folder] = args.as_slice()
        && step == "decide"
    {
        return decide(Path::new(folder)).await;
    }
    let folder = std::env::temp_dir().join(format!("rein-helpdesk-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("a temporary folder");
    let (store, agent) = helpdesk(&folder).await?;
    let mut chat = agent
        .open_session(store, None, json!({"ticket": "T-42"}))
        .await?;
    println!("{:?}", chat.turn("Where is order 7?").await?);
    let asked = chat.turn("Please refund order 7.").await?;
    assert!(
        matches!(asked, TurnOutcome::AwaitingApproval(_)),
        "{asked:?}"
    );
    chat.close().await?;

    let me = std::env::current_exe().expect("this program's path");
    let decided = std::process::Command::new(me)
        .args(["decide", &folder.to_string_lossy()])
        .status()
        .expect("the second process starts");
    let refunds = std::fs::read_to_string(folder.join("refunds.txt")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&folder);
    assert!(decided.success(), "the second process failed");
    assert_eq!(
        refunds, "7\n",
        "the refund ran once, after the person's yes"
    );
    Ok(())
}

/// The second process: the question waiting on ticket T-42, decided by a
/// person in the helpdesk's own UI.
async fn decide(folder: &Path) -> Result<(), AgentError> {
    let (store, agent) = helpdesk(folder).await?;
    for session in store.sessions_where("ticket", "T-42", 10).await? {
        let mut chat = agent.reopen(store.clone(), &session.id).await?;
        for asked in chat.pending_approvals().await? {
            println!("asked: {} {}", asked.tool, asked.arguments);
            let yes = Answer::Approve(LeaseScope::Once);
            let person = Surface::product("helpdesk", "sam");
            println!(
                "{:?}",
                chat.decide_and_resume(&asked.approval_id, yes, &person)
                    .await?
            );
        }
        chat.close().await?;
    }
    Ok(())
}

/// The store and the agent, the same in both processes (rein keeps
/// `memory.db` beside the store in `folder`).
async fn helpdesk(folder: &Path) -> Result<(Arc<dyn Store>, Agent), AgentError> {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(folder.join("rein.db")).await?);
    let composed = Product::new()
        .definition_text("helpdesk.toml", DEFINITION)
        .agent("triage")
        .home(folder)
        .provider(model()?)
        .model(std::env::var("REIN_MODEL").unwrap_or_else(|_| "rein-scripted".into()))
        .tools(Arc::new(tools(folder)?))
        .build(&store)
        .await?;
    Ok((store, composed.agent))
}

fn tools(folder: &Path) -> Result<Registry, AgentError> {
    let lookup = |o: Order| async move { Outcome::ok(json!({"id": o.id, "status": "shipped"})) };
    let refunds = folder.join("refunds.txt");
    let refund = move |o: Order| {
        let refunds = refunds.clone();
        async move {
            use std::io::Write as _;
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&refunds);
            match file.and_then(|mut f| writeln!(f, "{}", o.id)) {
                Ok(()) => Outcome::ok(json!({"refunded": o.id})),
                Err(e) => Outcome::failed(rein::wire::error::codes::WRITE_FAILED, e.to_string()),
            }
        }
    };
    Registry::new()
        .with(tool_fn("lookup_order", "An order's status.", Read, lookup))?
        .with(tool_fn("refund", "Refund an order.", Write, refund))
}

fn model() -> Result<Arc<dyn Provider>, AgentError> {
    let Ok(url) = std::env::var("REIN_BASE_URL") else {
        return Ok(Arc::new(ScriptedBrain::new(vec![
            Rule::reply("where", "It has shipped.").and_call("lookup_order", json!({"id": 7})),
            Rule::reply("refund", "Refunding.").and_call("refund", json!({"id": 7})),
        ])));
    };
    Ok(Arc::new(HttpProvider::new(
        ProviderConfig::openai_compatible(url),
    )?))
}
