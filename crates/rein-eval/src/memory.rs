//! A case's long-term memory: an in-memory store seeded with the case's
//! items, the `remember` / `recall` / `forget` tools over its scope beside
//! the project's, and the scope's pinned items as the agent's standing
//! text — what an agent definition's `[memory]` gives. Its checks read the
//! store and every session's model calls afterwards.
//!
//! Not here: running the turns (`run`), the other checks (`check`).

use std::collections::BTreeSet;
use std::sync::Arc;

use rein_memory::tools::MemoryTools;
use rein_memory::{InMemory, MemoryBank, MemoryItem, NewMemory, Pinned, Scope};
use rein_runner::Agent;
use rein_sessions::{Event, StoredEvent};
use rein_tools::{Joined, PermissionClass};
use rein_wire::AgentError;

use crate::result::CaseResult;
use crate::suite::{Case, MemoryCase};

/// The memory a case runs with.
pub(crate) struct CaseMemory {
    store: Arc<InMemory>,
    scope: Scope,
    ask: bool,
}

impl CaseMemory {
    /// The case's memory, its items kept.
    pub(crate) async fn new(spec: &MemoryCase) -> Result<CaseMemory, AgentError> {
        let store = Arc::new(InMemory::default());
        let scope = Scope::new(spec.scope.as_deref().unwrap_or("project:eval"))?;
        for item in &spec.items {
            let at = match &item.scope {
                Some(name) => Scope::new(name)?,
                None => scope.clone(),
            };
            let new = NewMemory {
                pinned: item.pinned,
                ..NewMemory::text(&item.text)
            };
            let mut kept = MemoryItem::new(&at, new);
            if let Some(id) = &item.id {
                kept.id.clone_from(id);
            }
            store.import(kept)?;
        }
        Ok(CaseMemory {
            store,
            scope,
            ask: spec.ask,
        })
    }

    /// `agent` with the memory's tools beside its own and the pinned
    /// items as its standing text.
    pub(crate) fn give(&self, mut agent: Agent) -> Result<Agent, AgentError> {
        let store: Arc<dyn MemoryBank> = self.store.clone();
        let class = if self.ask {
            PermissionClass::Write
        } else {
            PermissionClass::ReversibleWrite
        };
        let tools = MemoryTools::new(store.clone(), self.scope.clone())
            .writes_as(class)
            .registry()?;
        agent.tools = Arc::new(Joined::new(vec![agent.tools.clone(), Arc::new(tools)]));
        agent.standing = Some(Arc::new(Pinned::new(store, self.scope.clone())));
        Ok(agent)
    }

    /// The memory checks of `case` on the store and `events` (every
    /// session's, in order).
    pub(crate) async fn check(&self, case: &Case, result: &mut CaseResult, events: &[StoredEvent]) {
        let texts: Vec<String> = match self.store.all(&self.scope).await {
            Ok(items) => items.into_iter().map(|i| i.text.to_lowercase()).collect(),
            Err(err) => {
                result.failures.push(format!("memory: {}", err.message));
                return;
            }
        };
        for want in &case.expect.memory_holds {
            if !texts.iter().any(|t| t.contains(&want.to_lowercase())) {
                result
                    .failures
                    .push(format!("memory holds no item with {want:?}"));
            }
        }
        for unwanted in &case.expect.memory_lacks {
            if texts.iter().any(|t| t.contains(&unwanted.to_lowercase())) {
                result
                    .failures
                    .push(format!("memory still holds an item with {unwanted:?}"));
            }
        }
        prefix_checks(case, result, events);
    }
}

/// The stable prefix's checks: the same within each turn, and how many
/// there were.
pub(crate) fn prefix_checks(case: &Case, result: &mut CaseResult, events: &[StoredEvent]) {
    let mut all = BTreeSet::new();
    let mut turn: BTreeSet<&str> = BTreeSet::new();
    let mut unstable = 0;
    for stored in events {
        match &stored.event {
            Event::TurnStarted { .. } => {
                unstable += turn.len().saturating_sub(1);
                turn.clear();
            }
            Event::ModelRequested {
                prefix_fingerprint, ..
            } => {
                turn.insert(prefix_fingerprint);
                all.insert(prefix_fingerprint.as_str());
            }
            _ => {}
        }
    }
    unstable += turn.len().saturating_sub(1);
    if case.expect.prefix_stable_within_turns && unstable > 0 {
        result.failures.push(format!(
            "the stable prefix changed {unstable} time(s) within a turn"
        ));
    }
    if let Some(want) = case.expect.prefixes
        && all.len() as u64 != want
    {
        result.failures.push(format!(
            "{} distinct stable prefixes were sent, not {want}",
            all.len()
        ));
    }
}
