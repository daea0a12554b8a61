//! [`InMemory`]: memory kept in the process, for tests and products that
//! keep nothing on disk. A search ranks by how many of the query's words
//! an item has (text and tags), newer first among equals.
//!
//! Not here: the contract both stores keep (`lib.rs`, the crate's tests).

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use rein_wire::AgentError;

use crate::terms::terms;
use crate::{Found, Limits, MemoryItem, MemoryStore, NewMemory, Scope, not_found};

/// Memory in the process.
#[derive(Debug, Default)]
pub struct InMemory {
    limits: Limits,
    /// Each scope's items, oldest first.
    scopes: Mutex<BTreeMap<Scope, Vec<MemoryItem>>>,
}

impl InMemory {
    /// An empty store with these bounds.
    pub fn with_limits(limits: Limits) -> InMemory {
        InMemory {
            limits,
            scopes: Mutex::default(),
        }
    }

    fn scopes(&self) -> std::sync::MutexGuard<'_, BTreeMap<Scope, Vec<MemoryItem>>> {
        self.scopes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl MemoryStore for InMemory {
    async fn remember(&self, scope: &Scope, new: NewMemory) -> Result<MemoryItem, AgentError> {
        self.limits.check(&new)?;
        let mut scopes = self.scopes();
        let items = scopes.entry(scope.clone()).or_default();
        self.limits.full(scope, items.len())?;
        let item = MemoryItem::new(scope, new);
        items.push(item.clone());
        Ok(item)
    }

    async fn get(&self, scope: &Scope, id: &str) -> Result<MemoryItem, AgentError> {
        self.scopes()
            .get(scope)
            .and_then(|items| items.iter().find(|i| i.id == id))
            .cloned()
            .ok_or_else(|| not_found(scope, id))
    }

    async fn list(&self, scope: &Scope, limit: usize) -> Result<Vec<MemoryItem>, AgentError> {
        let scopes = self.scopes();
        let items = scopes.get(scope).map(Vec::as_slice).unwrap_or_default();
        Ok(items
            .iter()
            .rev()
            .take(self.limits.results(limit))
            .cloned()
            .collect())
    }

    async fn all(&self, scope: &Scope) -> Result<Vec<MemoryItem>, AgentError> {
        Ok(self.scopes().get(scope).cloned().unwrap_or_default())
    }

    async fn pinned(&self, scope: &Scope, limit: usize) -> Result<Vec<MemoryItem>, AgentError> {
        let scopes = self.scopes();
        let items = scopes.get(scope).map(Vec::as_slice).unwrap_or_default();
        Ok(items
            .iter()
            .filter(|i| i.pinned)
            .take(self.limits.results(limit))
            .cloned()
            .collect())
    }

    async fn search(
        &self,
        scope: &Scope,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Found>, AgentError> {
        let wanted = terms(query);
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let scopes = self.scopes();
        let items = scopes.get(scope).map(Vec::as_slice).unwrap_or_default();
        let mut found: Vec<(usize, usize, &MemoryItem)> = items
            .iter()
            .enumerate()
            .filter_map(|(at, item)| {
                let has = terms(&format!("{} {}", item.text, item.tags.join(" ")));
                let hits = wanted.iter().filter(|w| has.contains(w)).count();
                (hits > 0).then_some((hits, at, item))
            })
            .collect();
        // More words matched first; among equals, the newer.
        found.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
        Ok(found
            .into_iter()
            .take(self.limits.results(limit))
            .map(|(hits, _, item)| Found {
                item: item.clone(),
                rank: hits as f64,
            })
            .collect())
    }

    async fn forget(&self, scope: &Scope, id: &str) -> Result<(), AgentError> {
        let mut scopes = self.scopes();
        let items = scopes.get_mut(scope).ok_or_else(|| not_found(scope, id))?;
        let at = items
            .iter()
            .position(|i| i.id == id)
            .ok_or_else(|| not_found(scope, id))?;
        items.remove(at);
        Ok(())
    }
}
