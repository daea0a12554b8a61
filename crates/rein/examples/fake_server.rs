//! A product's own test of its assistant, against the fake
//! OpenAI-compatible server on loopback (feature `testing`): the server
//! streams a scripted tool call and then an answer; the test checks what
//! the tool was asked, what the model was sent back, and the reply.
//!
//! `cargo run -p rein-harness --features testing --example fake_server`.
use rein::prelude::*;
use rein::testing::{FakeServer, Reply, ScriptedCall, ScriptedMessage};
use rein::tools::PermissionClass::Read;

#[derive(Deserialize, JsonSchema)]
struct Item {
    item: String,
}

#[tokio::main]
async fn main() -> Result<(), AgentError> {
    // What the "model" says, in order: a call of the shop's tool, then the
    // answer once its result is back.
    let asks = ScriptedMessage::text(&["Let me look."]).with_call(
        ScriptedCall::to("lookup_price", json!({"item": "tea"}))
            .id("c1")
            .in_fragments(2),
    );
    let answers = ScriptedMessage::text(&["Tea is ", "$4.50."]);
    let server = FakeServer::start(vec![
        Reply::sse(asks.openai_chat_sse()),
        Reply::sse(answers.openai_chat_sse()),
    ])
    .await
    .map_err(|e| AgentError::new(rein::wire::error::codes::INTERNAL, e.to_string()))?;

    let lookup = |i: Item| async move { Outcome::ok(json!({"item": i.item, "cents": 450})) };
    let tools = Registry::new().with(tool_fn("lookup_price", "An item's price.", Read, lookup))?;
    let model = HttpProvider::new(server.config_for(WireApi::OpenAiChat))?;
    let agent = Agent::new(
        Arc::new(model),
        Arc::new(tools),
        Profile::new("shop", "fake-model"),
    );
    let mut chat = agent.open(Arc::new(MemoryStore::new())).await?;
    let outcome = chat.turn("How much is tea?").await?;

    // The reply, and what the model was sent: two requests, the second
    // carrying the tool's result.
    assert_eq!(
        outcome,
        TurnOutcome::Finished {
            reply: "Tea is $4.50.".into()
        }
    );
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    let second = String::from_utf8_lossy(&sent[1].body);
    assert!(
        second.contains("450"),
        "the tool's result went back: {second}"
    );
    println!("{outcome:?} after {} model calls", sent.len());
    chat.close().await
}
