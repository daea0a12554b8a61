//! In-process subscriptions: one broadcast channel per watched session,
//! and one notification per session whose inbox someone waits on.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::{broadcast, watch};

use crate::event::StoredEvent;

/// How many events a slow subscriber may lag before it is told it missed
/// some (it then reads them back from the log by sequence number).
const CAPACITY: usize = 4096;

#[derive(Default)]
pub(crate) struct Channels {
    senders: Mutex<HashMap<String, broadcast::Sender<StoredEvent>>>,
    posted: Mutex<HashMap<String, watch::Sender<u64>>>,
}

/// What a waiter holds to hear that something was posted to one session's
/// inbox. Each holder keeps its own mark of what it has heard, so several
/// may wait on one session. Every store of this crate tells of a post from
/// any process (its own at once; another's through the database's
/// notifications or the SQLite store's watcher): a holder whose
/// [`Posted::hears_every_post`] is true need not look at the store until
/// told. One that is not (a store that cannot tell) looks every bounded
/// interval of its own.
#[derive(Debug)]
pub struct Posted {
    /// `None` for a store that never notifies.
    heard: Option<watch::Receiver<u64>>,
}

impl Posted {
    /// Never notified (a store that cannot tell).
    pub fn never() -> Self {
        Posted { heard: None }
    }

    /// Whether every post, from any process, is told here — so its holder
    /// looks at the inbox only when told. False for [`Posted::never`].
    pub fn hears_every_post(&self) -> bool {
        self.heard.is_some()
    }

    /// Whether something was posted since this holder last asked or
    /// waited; asking marks it heard.
    pub fn fresh(&mut self) -> bool {
        let Some(heard) = &mut self.heard else {
            return false;
        };
        let fresh = heard.has_changed().unwrap_or(false);
        heard.mark_unchanged();
        fresh
    }

    /// Wait until something is posted (at once when something was posted
    /// since this holder last asked). Never completes for a store that
    /// does not notify. Cancel-safe.
    pub async fn wait(&mut self) {
        if let Some(heard) = &mut self.heard
            && heard.changed().await.is_ok()
        {
            return;
        }
        std::future::pending().await
    }
}

impl Channels {
    /// Told when something is posted to `session`'s inbox in this process
    /// from now on.
    pub(crate) fn posted(&self, session: &str) -> Posted {
        let mut posted = self.posted.lock().unwrap_or_else(|p| p.into_inner());
        // Nobody hears a session whose holders are all gone.
        posted.retain(|_, sender| sender.receiver_count() > 0);
        let sender = posted
            .entry(session.to_owned())
            .or_insert_with(|| watch::channel(0).0);
        Posted {
            heard: Some(sender.subscribe()),
        }
    }

    /// Tell whoever holds `session`'s [`Posted`].
    pub(crate) fn notify_posted(&self, session: &str) {
        let posted = self.posted.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sender) = posted.get(session) {
            sender.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Tell every holder of a [`Posted`]: for a post nobody could have
    /// heard (a store's listener only now listening), a wake too many
    /// rather than one lost — a waiter looks at the inbox and waits again.
    #[cfg(feature = "postgres")]
    pub(crate) fn notify_all_posted(&self) {
        let posted = self.posted.lock().unwrap_or_else(|p| p.into_inner());
        for sender in posted.values() {
            sender.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    pub(crate) fn subscribe(&self, session: &str) -> broadcast::Receiver<StoredEvent> {
        let mut senders = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        senders
            .entry(session.to_owned())
            .or_insert_with(|| broadcast::channel(CAPACITY).0)
            .subscribe()
    }

    /// Whether anyone in this process watches `session`.
    #[cfg_attr(
        not(feature = "postgres"),
        expect(dead_code, reason = "only the PostgreSQL feed asks")
    )]
    pub(crate) fn watched(&self, session: &str) -> bool {
        let senders = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        senders
            .get(session)
            .is_some_and(|sender| sender.receiver_count() > 0)
    }

    pub(crate) fn publish(&self, session: &str, events: &[StoredEvent]) {
        let mut senders = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sender) = senders.get(session) {
            if sender.receiver_count() == 0 {
                senders.remove(session);
                return;
            }
            for event in events {
                let _ = sender.send(event.clone());
            }
        }
    }
}
