//! [`LogCache`]: whole logs read once, then only what was appended since.
//! A surface that shows a conversation again and again (a page polling
//! its summary, a list of conversations) reads what is new, not the whole
//! log each time.
//!
//! A log only grows, so a cached log is the start of the store's — unless
//! the session was made again elsewhere under the same id. Before a cached
//! log is used its last event is read back and compared; a log that is not
//! the store's is thrown away and read whole.
//!
//! Not here: what the logs mean, or the conversations' own logs (each
//! conversation keeps its own: `rein_runner::KeptLog`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rein_wire::AgentError;

use crate::{Store, StoredEvent};

/// Logs kept for the next read, bounded in events over all of them.
#[derive(Debug)]
pub struct LogCache {
    max_events: usize,
    kept: Mutex<Kept>,
}

/// The least recently read first.
#[derive(Debug, Default)]
struct Kept {
    logs: VecDeque<(String, Arc<Vec<StoredEvent>>)>,
    events: usize,
}

impl LogCache {
    /// A cache holding at most `max_events` events over all its logs (a
    /// log longer than that is read but not kept).
    pub fn new(max_events: usize) -> LogCache {
        LogCache {
            max_events,
            kept: Mutex::new(Kept::default()),
        }
    }

    /// The whole log of `session` in `store`, as `crate::read_all` reads
    /// it: from the cache, with what was appended since.
    pub async fn read(
        &self,
        store: &dyn Store,
        session: &str,
    ) -> Result<Arc<Vec<StoredEvent>>, AgentError> {
        let mut events = match self.take(session) {
            Some(kept) => match kept.last() {
                Some(last) if crate::still_begins(store, session, last).await? => kept,
                _ => Arc::default(),
            },
            None => Arc::default(),
        };
        let fresh = crate::read_from(store, session, events.len() as u64 + 1).await?;
        if !fresh.is_empty() {
            Arc::make_mut(&mut events).extend(fresh);
        }
        if events.is_empty() {
            store.session(session).await?;
        }
        self.put(session, events.clone());
        Ok(events)
    }

    fn take(&self, session: &str) -> Option<Arc<Vec<StoredEvent>>> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let at = kept.logs.iter().position(|(s, _)| s == session)?;
        let (_, log) = kept.logs.remove(at)?;
        kept.events -= log.len();
        Some(log)
    }

    fn put(&self, session: &str, log: Arc<Vec<StoredEvent>>) {
        if log.is_empty() || log.len() > self.max_events {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = kept.logs.iter().position(|(s, _)| s == session)
            && let Some((_, old)) = kept.logs.remove(at)
        {
            kept.events -= old.len();
        }
        kept.events += log.len();
        kept.logs.push_back((session.to_owned(), log));
        while kept.events > self.max_events {
            let Some((_, old)) = kept.logs.pop_front() else {
                break;
            };
            kept.events -= old.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::LogCache;
    use crate::{Event, MemoryStore, NewEvent, Store, read_all};

    async fn said(store: &MemoryStore, session: &str, text: &str) {
        let lease = store
            .acquire(session, "test", std::time::Duration::from_secs(30))
            .await
            .unwrap();
        store
            .append(
                &lease,
                vec![NewEvent {
                    agent_path: "main".into(),
                    event: Event::SteerSaid { text: text.into() },
                }],
            )
            .await
            .unwrap();
        store.release(&lease).await.unwrap();
    }

    #[tokio::test]
    async fn a_cached_log_reads_only_what_is_new_and_never_another_stores() {
        let store = MemoryStore::new();
        let id = store.create_session(json!({})).await.unwrap().id;
        for i in 0..50 {
            said(&store, &id, &format!("{i}")).await;
        }
        let cache = LogCache::new(1_000);
        assert_eq!(
            *cache.read(&store, &id).await.unwrap(),
            read_all(&store, &id).await.unwrap()
        );
        said(&store, &id, "more").await;
        let before = store.events_read();
        let log = cache.read(&store, &id).await.unwrap();
        let read = store.events_read() - before;
        assert!(
            read <= 2,
            "{read} events read: only the check and what is new"
        );
        assert_eq!(*log, read_all(&store, &id).await.unwrap());

        // The same id in another store, holding other words: what was
        // cached is not its log, and none of it is mixed in.
        let info = store.session(&id).await.unwrap();
        let mut events = read_all(&store, &id).await.unwrap();
        events.truncate(60);
        if let Some(Event::SteerSaid { text }) = events.last_mut().map(|e| &mut e.event) {
            *text = "other words".into();
        }
        let moved = MemoryStore::new();
        moved.import(&info, events).await.unwrap();
        let log = cache.read(&moved, &id).await.unwrap();
        assert_eq!(*log, read_all(&moved, &id).await.unwrap());
    }
}
