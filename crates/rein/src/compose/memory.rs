//! A definition's `[memory]` made into what the agent runs with: the
//! `remember`, `recall` and `forget` tools over one scope of rein's
//! `memory.db` (with vectors from an embeddings endpoint when it names
//! one), and that scope's pinned items as the prompt's standing text
//! (read at each turn's start).
//!
//! Not here: the store and the tools (`rein-memory`), the prefix (the
//! runner).

use std::path::Path;
use std::sync::Arc;

use crate::config::{Loaded, MemorySpec, MemoryWrites};
use crate::memory::tools::MemoryTools;
use crate::memory::{HttpEmbedder, MEMORY_FILE, MemoryBank, Pinned, Scope, SqliteMemory};
use crate::tools::{PermissionClass, Registry};
use crate::wire::AgentError;

use super::invalid;

/// An agent's memory: its tools, its pinned block, and the scope (for
/// its recorded authority).
pub(crate) struct Remembering {
    /// `remember`, `recall`, `forget`.
    pub(crate) tools: Arc<Registry>,
    /// The pinned items, for the prompt.
    pub(crate) pinned: Pinned,
    /// Whose memory.
    pub(crate) scope: Scope,
    /// The store it is kept in.
    pub(crate) store: Arc<dyn MemoryBank>,
}

/// The memory `spec` turns on for an agent working in `root` (`None`
/// when it is off).
pub(crate) async fn remembering(
    spec: Option<&MemorySpec>,
    loaded: &Loaded,
    root: &Path,
) -> Result<Option<Remembering>, AgentError> {
    let Some(spec) = spec.filter(|s| s.enabled.unwrap_or(false)) else {
        return Ok(None);
    };
    let scope = match &spec.scope {
        Some(name) => {
            Scope::new(name).map_err(|e| invalid(format!("memory.scope: {}", e.message)))?
        }
        None => Scope::project(root)?,
    };
    let home = loaded
        .home
        .as_ref()
        .ok_or_else(|| invalid("memory needs a folder for its memory.db: rein's home (a product gives one with Product::home)".to_owned()))?;
    let mut memory = SqliteMemory::open(home.join(MEMORY_FILE)).await?;
    if let Some(embeddings) = &spec.embeddings {
        let key = match &embeddings.key_env {
            Some(name) => Some(std::env::var(name).map_err(|_| {
                invalid(format!(
                    "memory.embeddings.key_env: the environment has no {name}"
                ))
            })?),
            None => None,
        };
        let embedder = HttpEmbedder::new(&embeddings.base_url, &embeddings.model, key)?;
        memory = memory.with_embedder(Arc::new(embedder));
    }
    let store: Arc<dyn MemoryBank> = Arc::new(memory);
    let class = match spec.writes.unwrap_or(MemoryWrites::Shown) {
        MemoryWrites::Shown => PermissionClass::ReversibleWrite,
        MemoryWrites::Ask => PermissionClass::Write,
    };
    let tools = MemoryTools::new(store.clone(), scope.clone())
        .writes_as(class)
        .registry()?;
    let tools = Arc::new(tools);
    let pinned = Pinned::new(store.clone(), scope.clone()).bounded(
        spec.pinned_items.unwrap_or(20),
        spec.pinned_bytes.unwrap_or(4 * 1024),
    );
    Ok(Some(Remembering {
        tools,
        pinned,
        scope,
        store,
    }))
}
