//! The memory contract, run on every store: what is remembered is read,
//! listed and found in its own scope and in no other; bounds are refused
//! with their codes; forgetting removes an item for good. The SQLite store
//! also keeps its items across a reopen, in a file only its owner reads,
//! and refuses a file made by a newer rein.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use rein_memory::{
    ChangeKind, InMemory, Limits, MemoryBank, NewMemory, Scope, Source, SqliteMemory,
};
use rein_wire::error::codes;

fn scope(name: &str) -> Scope {
    Scope::new(name).unwrap()
}

fn tagged(text: &str, tags: &[&str]) -> NewMemory {
    NewMemory {
        text: text.to_owned(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        source: Source {
            session: Some("s1".into()),
            turn: Some("t1".into()),
            call: Some("c1".into()),
        },
        pinned: false,
    }
}

/// The small bounds the contract checks against.
fn limits() -> Limits {
    Limits {
        max_item_bytes: 200,
        max_items: 5,
        max_tags: 3,
        max_results: 10,
    }
}

async fn contract(store: &dyn MemoryBank) {
    remembered_items_are_read_listed_and_found(store).await;
    scopes_never_meet(store).await;
    bounds_are_refused_with_their_codes(store).await;
    forgetting_is_for_good(store).await;
}

async fn remembered_items_are_read_listed_and_found(store: &dyn MemoryBank) {
    let alice = scope("person:alice");
    let tabs = store
        .remember(&alice, tagged("Prefers tabs over spaces", &["style"]))
        .await
        .unwrap();
    assert_eq!(tabs.revision, 1);
    assert_eq!(tabs.source.call.as_deref(), Some("c1"));
    let mut pinned = NewMemory::text("Works on the shop project, in Rust");
    pinned.pinned = true;
    let shop = store.remember(&alice, pinned).await.unwrap();
    let both = store
        .remember(&alice, tagged("Tabs in Makefiles, spaces in YAML", &[]))
        .await
        .unwrap();
    assert_eq!(store.get(&alice, &tabs.id).await.unwrap(), tabs);
    let listed: Vec<String> = store
        .list(&alice, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(listed, [both.id.clone(), shop.id.clone(), tabs.id.clone()]);
    assert_eq!(store.list(&alice, 1).await.unwrap().len(), 1);
    let every: Vec<String> = store
        .all(&alice)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(every, [tabs.id.clone(), shop.id.clone(), both.id.clone()]);
    let pins = store.pinned(&alice, 10).await.unwrap();
    assert_eq!(pins.len(), 1);
    assert_eq!(pins[0].id, shop.id);
    // Found by a word of its text or a tag, case aside; the item with
    // more of the words first.
    let found = store.search(&alice, "TABS spaces", 10).await.unwrap();
    let ids: Vec<&str> = found.iter().map(|f| f.item.id.as_str()).collect();
    assert_eq!(ids.len(), 2, "{found:?}");
    assert!(ids.contains(&tabs.id.as_str()) && ids.contains(&both.id.as_str()));
    assert!(found[0].rank >= found[1].rank);
    let by_tag = store.search(&alice, "style", 10).await.unwrap();
    assert_eq!(by_tag.len(), 1);
    assert_eq!(by_tag[0].item.id, tabs.id);
    // Query syntax is words, never an expression; no words, nothing found.
    assert!(
        store
            .search(&alice, "\" OR * NEAR(", 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.search(&alice, " ... ", 10).await.unwrap().is_empty());
    assert_eq!(
        store.search(&alice, "rust", 10).await.unwrap()[0].item.id,
        shop.id
    );
}

async fn scopes_never_meet(store: &dyn MemoryBank) {
    let alice = scope("person:alice");
    let bob = scope("person:bob");
    let secret = store
        .remember(&alice, NewMemory::text("Alice's locker code is 4711"))
        .await
        .unwrap();
    assert!(
        store
            .search(&bob, "locker code 4711", 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.list(&bob, 10).await.unwrap().is_empty());
    assert!(store.all(&bob).await.unwrap().is_empty());
    assert!(store.pinned(&bob, 10).await.unwrap().is_empty());
    let read = store.get(&bob, &secret.id).await.unwrap_err();
    assert_eq!(read.code, codes::MEMORY_NOT_FOUND);
    let forgot = store
        .forget(&bob, &secret.id, &Source::default())
        .await
        .unwrap_err();
    assert_eq!(forgot.code, codes::MEMORY_NOT_FOUND);
    // Still Alice's, untouched.
    assert_eq!(store.get(&alice, &secret.id).await.unwrap(), secret);
    // A scope that only looks like another is another.
    let alice_ish = scope("person:alice ");
    assert!(
        store
            .search(&alice_ish, "locker", 10)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn bounds_are_refused_with_their_codes(store: &dyn MemoryBank) {
    let carol = scope("person:carol");
    for bad in [
        NewMemory::text("   "),
        NewMemory::text(&"x".repeat(201)),
        tagged("four tags", &["a", "b", "c", "d"]),
        tagged("an empty tag", &[" "]),
        tagged("a long tag", &[&"t".repeat(65)]),
    ] {
        let err = store.remember(&carol, bad).await.unwrap_err();
        assert_eq!(err.code, codes::INVALID_INPUT, "{}", err.message);
    }
    assert!(store.list(&carol, 10).await.unwrap().is_empty());
    for i in 0..5 {
        store
            .remember(&carol, NewMemory::text(&format!("item {i}")))
            .await
            .unwrap();
    }
    let full = store
        .remember(&carol, NewMemory::text("one too many"))
        .await
        .unwrap_err();
    assert_eq!(full.code, codes::MEMORY_FULL);
    // The bound is per scope: another has room.
    store
        .remember(&scope("person:dave"), NewMemory::text("room here"))
        .await
        .unwrap();
    assert!(Scope::new("").is_err() && Scope::new("a\u{7}b").is_err());
    assert!(Scope::new(&"s".repeat(257)).is_err());
}

async fn forgetting_is_for_good(store: &dyn MemoryBank) {
    let erin = scope("person:erin");
    let item = store
        .remember(&erin, NewMemory::text("Erin's cat is called Miso"))
        .await
        .unwrap();
    let by = Source {
        session: Some("s9".into()),
        turn: None,
        call: Some("c9".into()),
    };
    store.forget(&erin, &item.id, &by).await.unwrap();
    assert_eq!(
        store.get(&erin, &item.id).await.unwrap_err().code,
        codes::MEMORY_NOT_FOUND
    );
    assert!(
        store
            .search(&erin, "miso cat", 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.list(&erin, 10).await.unwrap().is_empty());
    assert_eq!(
        store
            .forget(&erin, &item.id, &Source::default())
            .await
            .unwrap_err()
            .code,
        codes::MEMORY_NOT_FOUND
    );
    // The history keeps that it was forgotten, by whom — never the text.
    let history = store.history(&erin, 10).await.unwrap();
    let kinds: Vec<ChangeKind> = history.iter().map(|c| c.kind).collect();
    assert_eq!(kinds, [ChangeKind::Forgotten, ChangeKind::Remembered]);
    assert!(history.iter().all(|c| c.id == item.id));
    assert_eq!(history[0].source, by);
    let shown = serde_json::to_string(&history).unwrap();
    assert!(!shown.contains("Miso"), "{shown}");
    // No other scope's history is seen.
    assert!(
        store
            .history(&scope("person:frank"), 10)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn the_in_memory_store_keeps_the_contract() {
    contract(&InMemory::with_limits(limits())).await;
}

#[tokio::test]
async fn the_sqlite_store_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteMemory::open_with(dir.path().join("memory.db"), limits())
        .await
        .unwrap();
    contract(&store).await;
}

#[tokio::test]
async fn the_sqlite_store_keeps_items_across_a_reopen_in_a_private_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let alice = scope("person:alice");
    let item = {
        let store = SqliteMemory::open(&path).await.unwrap();
        store
            .remember(
                &alice,
                tagged("Deploys on Fridays are forbidden", &["rules"]),
            )
            .await
            .unwrap()
    };
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let store = SqliteMemory::open(&path).await.unwrap();
    assert_eq!(store.get(&alice, &item.id).await.unwrap(), item);
    // Words match whole (no stemming): "friday" is not "fridays".
    assert!(store.search(&alice, "friday", 5).await.unwrap().is_empty());
    assert_eq!(
        store.search(&alice, "fridays", 5).await.unwrap()[0].item,
        item
    );
}

#[tokio::test]
async fn a_memory_file_from_a_newer_rein_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    drop(SqliteMemory::open(&path).await.unwrap());
    {
        let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&path);
        let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect_with(&options)
            .await
            .unwrap();
        sqlx::query("PRAGMA user_version = 99")
            .execute(&mut conn)
            .await
            .unwrap();
    }
    let err = SqliteMemory::open(&path).await.unwrap_err();
    assert_eq!(err.code, codes::STORE_SCHEMA_NEWER, "{}", err.message);
}

/// A forgotten item's words are gone from the file itself — its row, its
/// full-text index, the write-ahead log — not only from the answers.
#[tokio::test]
async fn a_forgotten_items_words_leave_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let store = SqliteMemory::open(&path).await.unwrap();
    let alice = scope("person:alice");
    for n in 0..20 {
        store
            .remember(&alice, NewMemory::text(&format!("filler item {n}")))
            .await
            .unwrap();
    }
    let secret = store
        .remember(&alice, NewMemory::text("the code is zanzibarquux"))
        .await
        .unwrap();
    store
        .forget(&alice, &secret.id, &Source::default())
        .await
        .unwrap();
    drop(store);
    // Reopened and closed: the log is checkpointed into the file.
    let store = SqliteMemory::open(&path).await.unwrap();
    assert!(
        store
            .search(&alice, "zanzibarquux", 5)
            .await
            .unwrap()
            .is_empty()
    );
    drop(store);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let mut bytes = std::fs::read(&path).unwrap();
    for side in ["memory.db-wal", "memory.db-shm"] {
        if let Ok(more) = std::fs::read(dir.path().join(side)) {
            bytes.extend(more);
        }
    }
    let found = bytes.windows(12).any(|w| w == b"zanzibarquux");
    assert!(!found, "the forgotten word is still in the file");
}

/// A batch is kept whole or not at all: one bad item, or one past the
/// scope's bound, keeps none of it.
#[tokio::test]
async fn a_batch_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteMemory::open_with(dir.path().join("memory.db"), limits())
        .await
        .unwrap();
    let gina = scope("person:gina");
    let bad = vec![NewMemory::text("fine"), NewMemory::text(" ")];
    assert_eq!(
        store.remember_many(&gina, bad).await.unwrap_err().code,
        codes::INVALID_INPUT
    );
    let six: Vec<NewMemory> = (0..6)
        .map(|n| NewMemory::text(&format!("item {n}")))
        .collect();
    assert_eq!(
        store.remember_many(&gina, six).await.unwrap_err().code,
        codes::MEMORY_FULL
    );
    assert!(store.list(&gina, 10).await.unwrap().is_empty());
    let five: Vec<NewMemory> = (0..5)
        .map(|n| NewMemory::text(&format!("item {n}")))
        .collect();
    assert_eq!(store.remember_many(&gina, five).await.unwrap().len(), 5);
    assert_eq!(store.list(&gina, 10).await.unwrap().len(), 5);
    assert_eq!(store.history(&gina, 10).await.unwrap().len(), 5);
}
