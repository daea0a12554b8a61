//! Standing text (pinned memory) in the stable prefix: read once at each
//! turn's start, so every request of a turn carries the same prefix even
//! when the source changes meanwhile; a change shows at the next turn,
//! told to the person (the first read is not a change); an unchanged
//! text changes nothing.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use rein_gateway::{HttpProvider, WireApi};
use rein_runner::{Agent, Standing, UiKind};
use rein_testing::{FakeServer, Reply};
use rein_wire::AgentError;
use serde_json::json;

/// Each read gives the next of `texts` (the last one again when past
/// the end), counting reads.
struct Versions {
    texts: Vec<&'static str>,
    reads: AtomicUsize,
}

impl Standing for Versions {
    fn name(&self) -> &str {
        "pinned memory"
    }
    fn read(&self) -> BoxFuture<'static, Result<Option<String>, AgentError>> {
        let n = self.reads.fetch_add(1, Ordering::SeqCst);
        let text = self.texts[n.min(self.texts.len() - 1)].to_owned();
        Box::pin(async move { Ok(Some(text)) })
    }
}

fn sse(m: &rein_testing::ScriptedMessage) -> Reply {
    Reply::sse(m.openai_chat_sse())
}

#[tokio::test]
async fn the_standing_text_is_read_once_a_turn_and_a_change_waits_for_the_next() {
    let server = FakeServer::start(vec![
        sse(&common::calls(vec![common::call(
            "c1",
            "read_file",
            json!({"path": "a.rs"}),
        )])),
        sse(&common::says("Read it.")),
        sse(&common::says("Second.")),
        sse(&common::says("Third.")),
    ])
    .await
    .unwrap();
    let provider = Arc::new(HttpProvider::new(server.config_for(WireApi::OpenAiChat)).unwrap());
    let s = common::setup().await;
    let versions = Arc::new(Versions {
        texts: vec!["likes tea (v1)", "likes coffee (v2)", "likes coffee (v2)"],
        reads: AtomicUsize::new(0),
    });
    let agent =
        Agent::new(provider, s.backend.clone(), common::profile()).with_standing(versions.clone());
    let mut conversation = agent.open(s.store.clone()).await.unwrap();
    let mut ui = conversation.subscribe();
    let told = |ui: &mut tokio::sync::broadcast::Receiver<rein_runner::UiEvent>| {
        let mut lines = Vec::new();
        while let Ok(event) = ui.try_recv() {
            if let UiKind::CatalogChanged { changes } = event.kind {
                lines.extend(changes);
            }
        }
        lines
    };
    conversation.turn("read a.rs").await.unwrap();
    // Two requests in the turn, one read: both carry the first text.
    assert_eq!(versions.reads.load(Ordering::SeqCst), 1);
    let bodies: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.json().to_string())
        .collect();
    assert_eq!(bodies.len(), 2);
    assert!(
        bodies.iter().all(|b| b.contains("likes tea (v1)")),
        "{bodies:?}"
    );
    // The first read is no change to tell.
    assert!(told(&mut ui).is_empty());
    // The next turn reads the changed text; the person is told.
    conversation.turn("again").await.unwrap();
    let second = server.requests()[2].json().to_string();
    assert!(
        second.contains("likes coffee (v2)") && !second.contains("likes tea"),
        "{second}"
    );
    assert_eq!(told(&mut ui), ["pinned memory changed"]);
    // Unchanged: nothing told, the same prefix.
    conversation.turn("and again").await.unwrap();
    assert!(told(&mut ui).is_empty());
    let (a, b) = (server.requests()[2].json(), server.requests()[3].json());
    assert_eq!(a["messages"][0], b["messages"][0]);
    assert_eq!(a["tools"], b["tools"]);
    conversation.close().await.unwrap();
}
