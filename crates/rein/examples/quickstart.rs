//! The product's own tool, its person's yes, the answer and its cost: offline on the scripted
//! model, or on an OpenAI-compatible server given as `REIN_BASE_URL` and `REIN_MODEL`.
use rein::prelude::*;
use rein::tools::PermissionClass::Write;

#[derive(Deserialize, JsonSchema)]
struct Order {
    id: u64,
}

#[tokio::main]
async fn main() -> Result<(), AgentError> {
    let cancel = |o: Order| async move { Outcome::ok(json!({ "cancelled": o.id })) };
    let tools = Registry::new().with(tool_fn("cancel_order", "Cancel an order.", Write, cancel))?;
    let (model, name) = model()?;
    let agent = Agent::new(model, Arc::new(tools), Profile::new("shop", name));
    let mut chat = agent.open(Arc::new(MemoryStore::new())).await?;
    let mut outcome = chat.turn("Please cancel order 42.").await?;
    while let TurnOutcome::AwaitingApproval(asked) = outcome {
        println!("asked: {} {}", asked.tool, asked.arguments); // the product's UI shows it
        let (id, yes) = (asked.approval_id, Answer::Approve(LeaseScope::Once));
        let admin = Surface::product("shop admin", "alice");
        outcome = chat.decide_and_resume(&id, yes, &admin).await?;
    }
    println!("{outcome:?}\n{}", chat.report().await?.render());
    chat.close().await
}

fn model() -> Result<(Arc<dyn Provider>, String), AgentError> {
    let name = std::env::var("REIN_MODEL").unwrap_or_else(|_| "rein-scripted".into());
    let Ok(url) = std::env::var("REIN_BASE_URL") else {
        let rule = Rule::reply("cancel", "On it.").and_call("cancel_order", json!({"id": 42}));
        return Ok((Arc::new(ScriptedBrain::new(vec![rule])), name));
    };
    let server = HttpProvider::new(ProviderConfig::openai_compatible(url))?;
    Ok((Arc::new(server), name))
}
