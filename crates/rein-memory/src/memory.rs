//! [`InMemory`]: memory kept in the process, for tests and products that
//! keep nothing on disk. A search ranks by how many of the query's words
//! an item has (text and tags), newer first among equals.
//!
//! Not here: the contract both stores keep (`lib.rs`, the crate's tests).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use async_trait::async_trait;
use rein_wire::AgentError;

use crate::terms::terms;
use crate::{
    Change, ChangeKind, Found, Limits, MAX_HISTORY, MemoryBank, MemoryItem, NewMemory, Scope,
    Source, not_found,
};

/// Memory in the process.
#[derive(Debug, Default)]
pub struct InMemory {
    limits: Limits,
    /// Each scope's items, oldest first.
    scopes: Mutex<BTreeMap<Scope, Vec<MemoryItem>>>,
    /// Each scope's changes, oldest first, at most [`MAX_HISTORY`].
    changes: Mutex<BTreeMap<Scope, VecDeque<Change>>>,
}

impl InMemory {
    /// An empty store with these bounds.
    pub fn with_limits(limits: Limits) -> InMemory {
        InMemory {
            limits,
            ..InMemory::default()
        }
    }

    /// Keep `item` as it was exported — its id, source and time — in its
    /// scope (a store restored from an export, a product's fixture). The
    /// same bounds as `remember`; an id the store holds is refused.
    pub fn import(&self, item: MemoryItem) -> Result<(), AgentError> {
        self.limits.check(&NewMemory {
            text: item.text.clone(),
            tags: item.tags.clone(),
            source: item.source.clone(),
            pinned: item.pinned,
        })?;
        let mut scopes = self.scopes();
        if scopes.values().flatten().any(|held| held.id == item.id) {
            return Err(AgentError::new(
                rein_wire::error::codes::INVALID_INPUT,
                format!("the memory already holds an item {}", item.id),
            ));
        }
        let items = scopes.entry(item.scope.clone()).or_default();
        self.limits.full(&item.scope, items.len())?;
        items.push(item.clone());
        drop(scopes);
        self.record(&item.scope, &item.id, ChangeKind::Remembered, &item.source);
        Ok(())
    }

    fn record(&self, scope: &Scope, id: &str, kind: ChangeKind, source: &Source) {
        let mut changes = self
            .changes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let kept = changes.entry(scope.clone()).or_default();
        if kept.len() >= MAX_HISTORY {
            kept.pop_front();
        }
        kept.push_back(Change {
            at_ms: rein_wire::clock::now_ms(),
            id: id.to_owned(),
            kind,
            source: source.clone(),
        });
    }

    fn scopes(&self) -> std::sync::MutexGuard<'_, BTreeMap<Scope, Vec<MemoryItem>>> {
        self.scopes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl MemoryBank for InMemory {
    async fn remember(&self, scope: &Scope, new: NewMemory) -> Result<MemoryItem, AgentError> {
        self.limits.check(&new)?;
        let mut scopes = self.scopes();
        let items = scopes.entry(scope.clone()).or_default();
        self.limits.full(scope, items.len())?;
        let item = MemoryItem::new(scope, new);
        items.push(item.clone());
        drop(scopes);
        self.record(scope, &item.id, ChangeKind::Remembered, &item.source);
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

    async fn forget(&self, scope: &Scope, id: &str, source: &Source) -> Result<(), AgentError> {
        let mut scopes = self.scopes();
        let items = scopes.get_mut(scope).ok_or_else(|| not_found(scope, id))?;
        let at = items
            .iter()
            .position(|i| i.id == id)
            .ok_or_else(|| not_found(scope, id))?;
        items.remove(at);
        drop(scopes);
        self.record(scope, id, ChangeKind::Forgotten, source);
        Ok(())
    }

    async fn history(&self, scope: &Scope, limit: usize) -> Result<Vec<Change>, AgentError> {
        let changes = self
            .changes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(changes
            .get(scope)
            .map(|kept| {
                kept.iter()
                    .rev()
                    .take(self.limits.results(limit))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default())
    }
}
