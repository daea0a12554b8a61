//! Quickstart: a typed tool, a conversation, the answer and what it cost.
//!
//! Runs offline on the scripted model; with `REIN_BASE_URL` (and
//! `REIN_MODEL`) set, the same program talks to that OpenAI-compatible
//! server (llama.cpp, vLLM, Ollama, LM Studio, …).
use rein::prelude::*;

/// A city.
#[derive(Deserialize, JsonSchema)]
struct City {
    /// Its name.
    name: String,
}

#[tokio::main]
async fn main() -> Result<(), AgentError> {
    let weather = tool_fn(
        "weather",
        "Today's weather in a city.",
        PermissionClass::Read,
        |city: City| async move {
            Outcome::ok(json!({"city": city.name, "sky": "clear", "celsius": 21}))
        },
    );
    let model: Arc<dyn Provider> = match std::env::var("REIN_BASE_URL") {
        Ok(url) => Arc::new(HttpProvider::new(ProviderConfig::openai_compatible(url))?),
        Err(_) => Arc::new(ScriptedBrain::new(vec![Rule::call(
            "weather in",
            "Looking it up.",
            "weather",
            json!({}),
            Some("name"),
        )])),
    };
    let name = std::env::var("REIN_MODEL").unwrap_or_else(|_| "rein-scripted".into());
    let mut chat = Conversation::open(
        Arc::new(MemoryStore::new()),
        model,
        Arc::new(Registry::new().with(weather)?),
        Profile::new("weather desk", name),
        None,
    )
    .await?;

    let outcome = chat.turn("What is the weather in Lisbon?").await?;
    let TurnOutcome::Finished { reply } = outcome else {
        panic!("the turn did not finish: {outcome:?}");
    };
    println!("answer: {reply}");
    let report = chat.report().await?;
    assert_eq!(report.totals.tools.ok, 1, "the tool ran once");
    print!("{}", report.render());
    chat.close().await
}
