//! What the graph-task tests share: a product's write that waits for a
//! person and counts its runs, a SQLite file, and the worker profile.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rein_runner::{Profile, ToolLoading};
use rein_sessions::{SqliteStore, Store};
use rein_tools::{Outcome, Registry, tool_fn};
use rein_wire::permission::PermissionClass;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// What the order tool is asked for.
#[derive(Deserialize, JsonSchema)]
struct Order {
    /// What to order.
    item: String,
}

/// `place_order`, a product's write (it waits for a person), counting its
/// runs in `runs`.
pub fn order_registry(runs: Arc<AtomicUsize>) -> Registry {
    let order = tool_fn(
        "place_order",
        "Place an order.",
        PermissionClass::Write,
        move |order: Order| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Outcome::ok(json!({"ordered": order.item}))
            }
        },
    );
    Registry::new().with(order).unwrap()
}

/// A store on a fresh SQLite file (keep the directory alive).
pub async fn sqlite_store() -> (tempfile::TempDir, Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    (dir, store)
}

/// The profile graph tasks run with.
pub fn worker() -> Profile {
    Profile {
        max_output_tokens: 256,
        tools: ToolLoading::Native,
        ..Profile::new("worker", "m").with_system("Do the task.")
    }
}
