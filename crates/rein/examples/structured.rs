//! A structured answer: the model's reply as a typed value (`ask::<T>`),
//! checked against `T`'s schema (one repair turn if it does not fit).
use rein::prelude::*;

/// How a bug report is triaged.
#[derive(Debug, Deserialize, JsonSchema)]
struct Triage {
    /// `low`, `medium` or `high`.
    severity: String,
    /// The part of the product it is about.
    component: String,
    /// Whether a person should look today.
    urgent: bool,
}

#[tokio::main]
async fn main() -> Result<(), AgentError> {
    // Offline, the scripted model answers in JSON; a real model is asked
    // the same way (natively where the provider supports a schema).
    let model = ScriptedBrain::new(vec![Rule::reply(
        "checkout",
        r#"Here it is: {"severity": "high", "component": "checkout", "urgent": true}"#,
    )]);
    let mut chat = Conversation::open(
        Arc::new(MemoryStore::new()),
        Arc::new(model),
        Arc::new(Registry::new()),
        Profile::new("triage", "rein-scripted"),
        None,
    )
    .await?;
    let triage: Triage = chat
        .ask("Triage this: the checkout page crashes when the cart is empty.")
        .await?;
    println!("{triage:?}");
    assert_eq!(
        (
            triage.severity.as_str(),
            triage.component.as_str(),
            triage.urgent
        ),
        ("high", "checkout", true)
    );
    chat.close().await
}
