//! A product's own tool, its person's yes, the answer and its cost, on the offline scripted model.
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
    // A server instead: Arc::new(HttpProvider::new(ProviderConfig::openai_compatible(url))?)
    let rule = Rule::reply("cancel", "On it.").and_call("cancel_order", json!({"id": 42}));
    let model = Arc::new(ScriptedBrain::new(vec![rule]));
    let agent = Agent::new(model, Arc::new(tools), Profile::new("shop", "scripted"));
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
