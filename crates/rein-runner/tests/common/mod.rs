//! What the runner's end-to-end tests share: a real SQLite file, the
//! reference tool backend, scripted models and the profile they run with.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]
#![allow(dead_code, reason = "each test binary uses a part")]

pub mod orders;

use std::sync::Arc;

use rein_gateway::Provider;
use rein_runner::{Conversation, Profile};
use rein_sessions::{SqliteStore, Store};
use rein_testing::{FakeToolBackend, ScriptedCall, ScriptedMessage};

pub fn profile() -> Profile {
    Profile {
        max_output_tokens: 1024,
        ..Profile::new("Helper", "fake-model").with_system("You help with the project.")
    }
}

pub fn call(id: &str, tool: &str, args: serde_json::Value) -> ScriptedCall {
    ScriptedCall::to(tool, args).id(id).in_fragments(3)
}

pub fn says(text: &str) -> ScriptedMessage {
    ScriptedMessage::text(&[text])
}

pub fn calls(list: Vec<ScriptedCall>) -> ScriptedMessage {
    let mut m = ScriptedMessage::text(&[]);
    for c in list {
        m = m.with_call(c);
    }
    m
}

pub struct Setup {
    pub _dir: tempfile::TempDir,
    pub path: std::path::PathBuf,
    pub store: Arc<dyn Store>,
    pub backend: Arc<FakeToolBackend>,
}

pub async fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rein.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.unwrap());
    let backend =
        Arc::new(FakeToolBackend::new(&[("a.rs", "fn a() {}"), ("b.rs", "fn b() {}")]).unwrap());
    Setup {
        _dir: dir,
        path,
        store,
        backend,
    }
}

pub async fn open(s: &Setup, provider: Arc<dyn Provider>, existing: Option<&str>) -> Conversation {
    Conversation::open(
        s.store.clone(),
        provider,
        s.backend.clone(),
        profile(),
        existing,
    )
    .await
    .unwrap()
}

pub async fn kinds(store: &dyn Store, id: &str) -> Vec<String> {
    store
        .read(id, 1, 10_000)
        .await
        .unwrap()
        .iter()
        .map(|e| e.event.kind().to_owned())
        .collect()
}
