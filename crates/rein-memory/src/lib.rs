//! Long-term memory: items of text a conversation (or a person) asked to
//! keep, in a scope, with where they came from, found again by full text.
//!
//! - [`Scope`]: whose memory — a person, a project root, an agent; the
//!   product chooses the words. Every read and write names one, and the
//!   store (not only the tools above it) keeps scopes apart: an item is
//!   never listed, found, read or forgotten from another scope.
//! - [`MemoryItem`]: the text, tags, its [`Source`] (session, turn, call),
//!   whether it is pinned (shown in every prompt's stable prefix), and a
//!   revision.
//! - [`MemoryBank`]: remember, get, list, search, forget — bounded by
//!   [`Limits`] (item size, items per scope, tags, results) — and the
//!   scope's history of [`Change`]s (never an item's text).
//! - [`InMemory`] (`memory.rs`) and, with the `sqlite` feature,
//!   [`SqliteMemory`] (`sqlite.rs`, FTS5 ranked by bm25), one contract.
//!
//! - [`tools`] (feature `tools`): `remember`, `recall`, `forget` over a
//!   store and one scope, as a `rein-tools` registry.
//! - [`Pinned`] (`pinned.rs`): a scope's pinned items as one bounded block
//!   of data for the prompt's stable prefix; with the `runner` feature a
//!   `rein_runner::Standing`, read at each turn's start.
//!
//! - [`embed`] (feature `embeddings`): vectors from an OpenAI-compatible
//!   `/embeddings` endpoint, blended into `SqliteMemory`'s searches.
//!
//! Not here: the prefix itself (the runner), the surfaces a person edits
//! memory from (the CLI, the server).

#[cfg(feature = "embeddings")]
pub mod embed;
mod memory;
#[cfg(feature = "sqlite")]
mod opening;
mod pinned;
#[cfg(feature = "sqlite")]
mod rows;
#[cfg(feature = "sqlite")]
mod sqlite;
mod terms;
#[cfg(feature = "tools")]
pub mod tools;
#[cfg(feature = "embeddings")]
mod vectors;

use async_trait::async_trait;
use rein_wire::AgentError;
use rein_wire::error::codes;
use serde::{Deserialize, Serialize};

#[cfg(feature = "embeddings")]
pub use embed::{Embedder, HttpEmbedder};
pub use memory::InMemory;
pub use pinned::{PINNED_HEADING, Pinned, block as pinned_block};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteMemory;

/// The file memory is kept in, under rein's home.
pub const MEMORY_FILE: &str = "memory.db";

/// The longest scope name, in bytes.
pub const MAX_SCOPE_BYTES: usize = 256;

/// Whose memory: a name like `person:alice`, `project:/home/alice/shop` or
/// `agent:writer`. Non-empty, at most [`MAX_SCOPE_BYTES`], no control
/// characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Scope(String);

impl Scope {
    /// A scope named `name`, or `invalid_input` saying why not.
    pub fn new(name: &str) -> Result<Scope, AgentError> {
        let bad = |why: &str| {
            Err(AgentError::new(
                codes::INVALID_INPUT,
                format!("a memory scope {why}"),
            ))
        };
        if name.trim().is_empty() {
            return bad("needs a name");
        }
        if name.len() > MAX_SCOPE_BYTES {
            return bad(&format!("name is at most {MAX_SCOPE_BYTES} bytes"));
        }
        if name.chars().any(char::is_control) {
            return bad("name has no control characters");
        }
        Ok(Scope(name.to_owned()))
    }

    /// The project at `root` (absolute): `project:` and its path — the
    /// scope `rein memory` and an agent with memory use by default.
    pub fn project(root: &std::path::Path) -> Result<Scope, AgentError> {
        Scope::new(&format!("project:{}", root.display()))
    }

    /// Its name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Scope {
    type Error = AgentError;
    fn try_from(name: String) -> Result<Scope, AgentError> {
        Scope::new(&name)
    }
}

impl From<Scope> for String {
    fn from(scope: Scope) -> String {
        scope.0
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where an item came from: the session, turn and tool call that asked to
/// remember it (none of them for an item a person added by hand).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<String>,
    /// The tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
}

/// What to remember.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewMemory {
    /// The text.
    pub text: String,
    /// Tags, for a person's sorting and the search.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Where it came from.
    #[serde(default)]
    pub source: Source,
    /// Shown in every prompt's stable prefix (refreshed at turn
    /// boundaries), not only found by search.
    #[serde(default)]
    pub pinned: bool,
}

impl NewMemory {
    /// Just `text`: no tags, no source, not pinned.
    pub fn text(text: &str) -> NewMemory {
        NewMemory {
            text: text.to_owned(),
            ..NewMemory::default()
        }
    }
}

/// A remembered item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryItem {
    /// Its id (sortable by creation).
    pub id: String,
    /// Its scope.
    pub scope: Scope,
    /// The text.
    pub text: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Where it came from.
    pub source: Source,
    /// Shown in every prompt's stable prefix.
    pub pinned: bool,
    /// Its revision: 1 when remembered.
    pub revision: u64,
    /// When it was remembered (ms since the epoch).
    pub created_ms: i64,
}

impl MemoryItem {
    /// `new`, remembered now in `scope`: a fresh id, revision 1.
    pub fn new(scope: &Scope, new: NewMemory) -> MemoryItem {
        MemoryItem {
            id: rein_wire::ids::new_prefixed("mem"),
            scope: scope.clone(),
            text: new.text,
            tags: new.tags,
            source: new.source,
            pinned: new.pinned,
            revision: 1,
            created_ms: rein_wire::clock::now_ms(),
        }
    }
}

/// What happened to an item, as the store's history keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// It was remembered.
    Remembered,
    /// It was forgotten.
    Forgotten,
}

/// One change of a scope: when, which item, what, and who asked for it
/// (a session's call, or a person with no session). Never the item's
/// text: once forgotten, the text is gone and only this line stays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// When (ms since the epoch).
    pub at_ms: i64,
    /// The item.
    pub id: String,
    /// What happened.
    pub kind: ChangeKind,
    /// Who asked: the session and call, or nothing for a person's own.
    pub source: Source,
}

/// Changes a scope's history keeps, at most; the oldest go first.
pub const MAX_HISTORY: usize = 10_000;

/// An item found by a search, with its rank (higher is better).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    /// The item.
    pub item: MemoryItem,
    /// How well it matched.
    pub rank: f64,
}

/// The bounds a store keeps. Every one is finite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The longest item text, in bytes.
    pub max_item_bytes: usize,
    /// Items per scope.
    pub max_items: usize,
    /// Tags per item (each at most 64 bytes).
    pub max_tags: usize,
    /// Results of one search or list, at most.
    pub max_results: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_item_bytes: 4 * 1024,
            max_items: 10_000,
            max_tags: 16,
            max_results: 100,
        }
    }
}

/// The longest tag, in bytes.
pub const MAX_TAG_BYTES: usize = 64;

impl Limits {
    /// `new` checked against these bounds (the scope's count is the
    /// store's to check).
    pub fn check(&self, new: &NewMemory) -> Result<(), AgentError> {
        let bad = |why: String| Err(AgentError::new(codes::INVALID_INPUT, why));
        if new.text.trim().is_empty() {
            return bad("there is nothing to remember".to_owned());
        }
        if new.text.len() > self.max_item_bytes {
            return bad(format!(
                "{} bytes is more than a memory item holds ({})",
                new.text.len(),
                self.max_item_bytes
            ));
        }
        if new.tags.len() > self.max_tags {
            return bad(format!("at most {} tags", self.max_tags));
        }
        if let Some(tag) = new.tags.iter().find(|t| {
            t.trim().is_empty() || t.len() > MAX_TAG_BYTES || t.chars().any(char::is_control)
        }) {
            return bad(format!(
                "the tag {tag:?} is empty, longer than {MAX_TAG_BYTES} bytes or has control characters"
            ));
        }
        Ok(())
    }

    /// `limit` within the results' bound (at least one).
    pub fn results(&self, limit: usize) -> usize {
        limit.clamp(1, self.max_results)
    }

    /// `memory_full` for a scope holding `held` items already.
    pub fn full(&self, scope: &Scope, held: usize) -> Result<(), AgentError> {
        if held >= self.max_items {
            return Err(AgentError::new(
                codes::MEMORY_FULL,
                format!("the memory scope {scope} holds {held} items, its limit"),
            ));
        }
        Ok(())
    }
}

/// `memory_not_found` for `id` in `scope`.
pub fn not_found(scope: &Scope, id: &str) -> AgentError {
    AgentError::new(
        codes::MEMORY_NOT_FOUND,
        format!(
            "no memory item {} in scope {scope}",
            rein_wire::visible::visible(id)
        ),
    )
}

/// Where memory is kept. Every call names its scope, and no call reaches
/// an item of another.
#[async_trait]
pub trait MemoryBank: Send + Sync {
    /// Keep `new` in `scope` (`invalid_input` past the item bounds,
    /// `memory_full` past the scope's count).
    async fn remember(&self, scope: &Scope, new: NewMemory) -> Result<MemoryItem, AgentError>;

    /// The item `id` of `scope` (`memory_not_found` otherwise, also for
    /// an item of another scope).
    async fn get(&self, scope: &Scope, id: &str) -> Result<MemoryItem, AgentError>;

    /// The scope's items, newest first, at most `limit` (within the
    /// results' bound).
    async fn list(&self, scope: &Scope, limit: usize) -> Result<Vec<MemoryItem>, AgentError>;

    /// Every item of the scope, oldest first (at most the scope's bound of
    /// items: an export).
    async fn all(&self, scope: &Scope) -> Result<Vec<MemoryItem>, AgentError>;

    /// The scope's pinned items, oldest first, at most `limit`.
    async fn pinned(&self, scope: &Scope, limit: usize) -> Result<Vec<MemoryItem>, AgentError>;

    /// The scope's items matching `query` by full text (its words, any
    /// order, any of them; text and tags), best first, at most `limit`.
    /// A query with no words finds nothing.
    async fn search(
        &self,
        scope: &Scope,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Found>, AgentError>;

    /// Remove `id` from `scope` for good, as `source` asked
    /// (`memory_not_found` when it is not there). The history keeps that
    /// it was forgotten, not its text.
    async fn forget(&self, scope: &Scope, id: &str, source: &Source) -> Result<(), AgentError>;

    /// The scope's changes, newest first, at most `limit` (within the
    /// results' bound): what was remembered and forgotten, by whom.
    async fn history(&self, scope: &Scope, limit: usize) -> Result<Vec<Change>, AgentError>;
}

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
