//! Embeddings blended into search, against a loopback stand-in of an
//! OpenAI-compatible `/v1/embeddings` that the test owns (its "model"
//! puts each text on three axes — animals, food, weather — by the words
//! it knows): a query sharing no word with an item finds it by meaning;
//! an item found both ways ranks first; another scope's vectors are never
//! reached; the key goes as a bearer token; a server that fails leaves
//! remembering and searching by words working.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::sync::Arc;

use rein_memory::{HttpEmbedder, MemoryBank, NewMemory, Scope, SqliteMemory};
use rein_testing::{FakeServer, RecordedRequest, Reply};
use serde_json::{Value, json};

/// A text's vector by the words the stand-in knows.
fn meaning(text: &str) -> Vec<f64> {
    let lower = text.to_lowercase();
    let axis = |words: &[&str]| words.iter().filter(|w| lower.contains(*w)).count() as f64;
    vec![
        axis(&["dog", "canine", "puppy", "cat"]),
        axis(&["pizza", "pasta", "food", "lunch"]),
        axis(&["rain", "weather", "sunny"]),
        0.01,
    ]
}

async fn stand_in(failing: bool) -> FakeServer {
    let server = FakeServer::start(Vec::new()).await.unwrap();
    server.respond_with(Arc::new(move |request: &RecordedRequest, _| {
        if failing {
            return Reply::status(503, "{}".to_owned());
        }
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let data: Vec<Value> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"index": i, "embedding": meaning(t.as_str().unwrap())}))
            .collect();
        Reply::status(
            200,
            json!({"data": data, "model": body["model"]}).to_string(),
        )
    }));
    server
}

#[tokio::test]
async fn a_query_finds_an_item_by_meaning_and_the_words_still_count() {
    let server = stand_in(false).await;
    let dir = tempfile::tempdir().unwrap();
    let embedder = HttpEmbedder::new(
        &format!("{}/v1", server.base_url()),
        "tiny-embed",
        Some("sk-test-embed".into()),
    )
    .unwrap();
    let store = SqliteMemory::open(dir.path().join("memory.db"))
        .await
        .unwrap()
        .with_embedder(Arc::new(embedder));
    let alice = Scope::new("person:alice").unwrap();
    let bob = Scope::new("person:bob").unwrap();
    let dog = store
        .remember(&alice, NewMemory::text("Alice's dog is called Rex."))
        .await
        .unwrap();
    store
        .remember(&alice, NewMemory::text("Alice eats pizza on Fridays."))
        .await
        .unwrap();
    store
        .remember(&bob, NewMemory::text("Bob's puppy is called Max."))
        .await
        .unwrap();
    // No shared word: found by meaning, and only in Alice's scope.
    let found = store.search(&alice, "canine", 5).await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].item.id, dog.id);
    // Found both ways ranks first.
    let found = store.search(&alice, "pizza lunch", 5).await.unwrap();
    assert!(found[0].item.text.contains("pizza"), "{found:?}");
    // The stand-in saw the model and the key as a bearer token.
    let asked = &server.requests()[0];
    assert_eq!(asked.path, "/v1/embeddings");
    assert_eq!(asked.json()["model"], "tiny-embed");
    assert_eq!(asked.header("authorization"), Some("Bearer sk-test-embed"));
    // Forgotten: its vector goes with it.
    store
        .forget(&alice, &dog.id, &rein_memory::Source::default())
        .await
        .unwrap();
    assert!(store.search(&alice, "canine", 5).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_failing_embeddings_server_leaves_words_working() {
    let server = stand_in(true).await;
    let dir = tempfile::tempdir().unwrap();
    let embedder =
        HttpEmbedder::new(&format!("{}/v1", server.base_url()), "tiny-embed", None).unwrap();
    let store = SqliteMemory::open(dir.path().join("memory.db"))
        .await
        .unwrap()
        .with_embedder(Arc::new(embedder));
    let scope = Scope::new("person:alice").unwrap();
    let item = store
        .remember(&scope, NewMemory::text("The office plant is a fern."))
        .await
        .unwrap();
    let found = store.search(&scope, "fern", 5).await.unwrap();
    assert_eq!(found[0].item.id, item.id);
    assert!(
        store
            .search(&scope, "greenery", 5)
            .await
            .unwrap()
            .is_empty()
    );
}
