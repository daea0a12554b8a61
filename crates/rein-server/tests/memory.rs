//! `/api/memory` over real HTTP: a person lists, searches, adds and
//! forgets the server's memory — one scope, the only one reached (an id
//! of another scope is `memory_not_found` and stays); the history keeps
//! a forget without the text; bad input and a server with no memory get
//! their codes; the guards hold (no token, no memory).

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::sync::Arc;

use rein_memory::{InMemory, MemoryBank, NewMemory, Scope};
use serde_json::{Value, json};

#[tokio::test]
async fn a_person_sees_adds_searches_and_forgets_the_servers_memory() {
    let store = Arc::new(InMemory::default());
    let ours = Scope::new("project:/shop").unwrap();
    let theirs = Scope::new("person:bob").unwrap();
    let secret = store
        .remember(&theirs, NewMemory::text("Bob's bank pin is 4411."))
        .await
        .unwrap();
    let shown: Arc<dyn MemoryBank> = store.clone();
    let running = common::start_shaped(move |server| server.with_memory(shown, ours.clone())).await;

    let (status, added) = running
        .json(running.post(
            "/api/memory",
            json!({"text": "Ships on Tuesdays <b>only</b>", "tags": ["ops"], "pinned": true}),
        ))
        .await;
    assert_eq!(status, 201, "{added}");
    let id = added["id"].as_str().unwrap().to_owned();
    assert_eq!(added["scope"], "project:/shop");
    assert_eq!(added["source"], json!({}));

    let (status, listed) = running.json(running.get("/api/memory")).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["scope"], "project:/shop");
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{listed}");
    assert!(!listed.to_string().contains("4411"));

    let (_, found) = running.json(running.get("/api/memory?q=tuesdays")).await;
    assert_eq!(found["items"][0]["id"], id.as_str());
    let (_, none) = running.json(running.get("/api/memory?q=bank%20pin")).await;
    assert_eq!(none["items"], json!([]), "another scope is never found");

    // Another scope's item cannot be forgotten from here.
    let theirs_gone = running
        .http
        .delete(running.url(&format!("/api/memory/{}", secret.id)))
        .bearer_auth(&running.bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(theirs_gone.status().as_u16(), 404);
    let body: Value = theirs_gone.json().await.unwrap();
    assert_eq!(common::code(&body), "memory_not_found");
    assert!(store.get(&theirs, &secret.id).await.is_ok());

    let forgot = running
        .http
        .delete(running.url(&format!("/api/memory/{id}")))
        .bearer_auth(&running.bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(forgot.status().as_u16(), 200);
    let (_, listed) = running.json(running.get("/api/memory")).await;
    assert_eq!(listed["items"], json!([]));
    let (_, history) = running.json(running.get("/api/memory/history")).await;
    let kinds: Vec<&str> = history["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["forgotten", "remembered"]);
    assert!(!history.to_string().contains("Tuesdays"), "{history}");

    // Bad input: nothing to remember, an unknown field.
    let (status, empty) = running
        .json(running.post("/api/memory", json!({"text": "  "})))
        .await;
    assert_eq!((status, common::code(&empty)), (400, "invalid_input"));
    let (status, odd) = running
        .json(running.post("/api/memory", json!({"text": "x", "scope": "person:bob"})))
        .await;
    assert_eq!((status, common::code(&odd)), (400, "invalid_input"));
    // No token: no memory.
    let anonymous = running
        .http
        .get(running.url("/api/memory"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
}

#[tokio::test]
async fn a_server_without_memory_says_so() {
    let running = common::start().await;
    let (status, body) = running.json(running.get("/api/memory")).await;
    assert_eq!((status, common::code(&body)), (404, "memory_off"), "{body}");
}
