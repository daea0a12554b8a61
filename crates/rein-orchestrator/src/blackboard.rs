//! The blackboard: key-value state the tasks of a graph share, each key
//! with a revision, written only by compare-and-set — a writer names the
//! revision it read, and a write against any other fails with the current
//! revision and value (`blackboard_conflict`), so no task overwrites what
//! it never saw.
//!
//! Every accepted write is handed to the [`Blackboard`]'s recorder (the
//! store makes it an event). Bounded: at most [`MAX_KEYS`] keys of at most
//! [`MAX_KEY`] bytes, values of at most [`MAX_VALUE`] bytes of JSON.
//!
//! Not here: the tools through which a task's agent reads and writes it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rein_wire::{AgentError, error::codes};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Keys on one blackboard, at most.
pub const MAX_KEYS: usize = 10_000;
/// A key's length in bytes, at most.
pub const MAX_KEY: usize = 256;
/// A value's JSON length in bytes, at most.
pub const MAX_VALUE: usize = 256 * 1024;

/// One key's value and revision (1 for its first write; 0 means absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Its revision.
    pub revision: u64,
}

/// An accepted write, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Write {
    /// The key.
    pub key: String,
    /// The new value.
    pub value: Value,
    /// The revision it now has.
    pub revision: u64,
    /// Who wrote it (a task id).
    pub by: String,
}

type Recorder = Arc<dyn Fn(&Write) + Send + Sync>;

/// Shared, revisioned key-value state. Cheap to clone (the clones share).
#[derive(Clone, Default)]
pub struct Blackboard {
    entries: Arc<Mutex<BTreeMap<String, Entry>>>,
    recorder: Option<Recorder>,
}

impl std::fmt::Debug for Blackboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blackboard")
            .field("keys", &self.len())
            .finish()
    }
}

impl Blackboard {
    /// An empty blackboard.
    pub fn new() -> Self {
        Self::default()
    }

    /// A blackboard holding `entries` (what a store read back), whose
    /// accepted writes go to `recorder`.
    pub fn restored(
        entries: BTreeMap<String, Entry>,
        recorder: impl Fn(&Write) + Send + Sync + 'static,
    ) -> Self {
        Blackboard {
            entries: Arc::new(Mutex::new(entries)),
            recorder: Some(Arc::new(recorder)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The keys held.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// `key`'s value and revision, if it has one.
    pub fn get(&self, key: &str) -> Option<Entry> {
        self.lock().get(key).cloned()
    }

    /// Every key with its value and revision.
    pub fn snapshot(&self) -> BTreeMap<String, Entry> {
        self.lock().clone()
    }

    /// Set `key` to `value` if its revision is still `expected` (0: the
    /// key must not exist yet). Returns the new revision; a conflict fails
    /// with `blackboard_conflict` and the current revision and value in the
    /// detail.
    pub fn compare_and_set(
        &self,
        key: &str,
        expected: u64,
        value: Value,
        by: &str,
    ) -> Result<u64, AgentError> {
        if key.is_empty() || key.len() > MAX_KEY {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                format!("a blackboard key is 1 to {MAX_KEY} bytes long"),
            ));
        }
        let size = serde_json::to_vec(&value).map_or(usize::MAX, |v| v.len());
        if size > MAX_VALUE {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                format!("the value for `{key}` is {size} bytes of JSON; at most {MAX_VALUE}"),
            ));
        }
        let write = {
            let mut entries = self.lock();
            let current = entries.get(key);
            let revision = current.map_or(0, |e| e.revision);
            if revision != expected {
                return Err(AgentError::new(
                    codes::BLACKBOARD_CONFLICT,
                    format!("`{key}` is at revision {revision}, not {expected}: read it again"),
                )
                .with_detail(json!({
                    "key": key,
                    "revision": revision,
                    "value": current.map_or(Value::Null, |e| e.value.clone()),
                })));
            }
            if current.is_none() && entries.len() >= MAX_KEYS {
                return Err(AgentError::new(
                    codes::INVALID_INPUT,
                    format!("the blackboard holds {MAX_KEYS} keys, its most"),
                ));
            }
            let entry = Entry {
                value: value.clone(),
                revision: revision + 1,
            };
            entries.insert(key.to_owned(), entry);
            Write {
                key: key.to_owned(),
                value,
                revision: revision + 1,
                by: by.to_owned(),
            }
        };
        if let Some(record) = &self.recorder {
            record(&write);
        }
        Ok(write.revision)
    }
}
