//! A shop's assistant: the shop's own tools, a price change its admin
//! approves in the shop's own UI, the answer and what it cost.
//!
//! `REIN_BASE_URL=http://127.0.0.1:8080 REIN_MODEL=qwen` runs it against an
//! OpenAI-compatible server; without them, on the offline scripted model.
use rein::prelude::*;
use rein::tools::PermissionClass::{Read, Write};

#[derive(Deserialize, JsonSchema)]
struct Price {
    item: String,
    cents: Option<u64>,
}

#[tokio::main]
async fn main() -> Result<(), AgentError> {
    let lookup = |p: Price| async move { Outcome::ok(json!({"item": p.item, "cents": 450})) };
    let set = |p: Price| async move { Outcome::ok(json!({"item": p.item, "now": p.cents})) };
    let tools = Registry::new()
        .with(tool_fn("lookup_price", "An item's price.", Read, lookup))?
        .with(tool_fn("set_price", "Set an item's price.", Write, set))?;
    let (model, name) = model()?;
    let prices = PriceTable::builtin().with(&name, ModelPrice::usd_per_mtok(0.15, 0.6));
    let profile = Profile::new("shop assistant", &name);
    let agent = Agent::new(model, Arc::new(tools), profile).with_prices(prices);
    let mut chat = agent.open(Arc::new(MemoryStore::new())).await?;

    let mut outcome = chat.turn("Raise the price of tea by 50 cents.").await?;
    while let TurnOutcome::AwaitingApproval(asked) = outcome {
        // The shop's admin page shows what is asked, and its person decides.
        println!("{}: {} {}", asked.agent_path, asked.tool, asked.arguments);
        let yes = Answer::Approve(LeaseScope::Once);
        let admin = Surface::product("shop admin", "alice");
        outcome = chat
            .decide_and_resume(&asked.approval_id, yes, &admin)
            .await?;
    }
    println!("{outcome:?}\n{}", chat.report().await?.render());
    chat.close().await
}

// Where the model comes from: a product names its server; offline (and in
// CI) the scripted model stands in, told what to call.
fn model() -> Result<(Arc<dyn Provider>, String), AgentError> {
    let name = std::env::var("REIN_MODEL").unwrap_or_else(|_| "rein-scripted".into());
    if let Ok(url) = std::env::var("REIN_BASE_URL") {
        let server = HttpProvider::new(ProviderConfig::openai_compatible(url))?;
        return Ok((Arc::new(server), name));
    }
    let raise = Rule::reply("raise", "Raising it.")
        .and_call("lookup_price", json!({"item": "tea"}))
        .and_call("set_price", json!({"item": "tea", "cents": 500}));
    Ok((Arc::new(ScriptedBrain::new(vec![raise])), name))
}
