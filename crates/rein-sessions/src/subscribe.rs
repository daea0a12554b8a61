//! In-process subscriptions: one broadcast channel per watched session,
//! and one notification per session whose inbox someone waits on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, broadcast};

use crate::event::StoredEvent;

/// How many events a slow subscriber may lag before it is told it missed
/// some (it then reads them back from the log by sequence number).
const CAPACITY: usize = 4096;

#[derive(Default)]
pub(crate) struct Channels {
    senders: Mutex<HashMap<String, broadcast::Sender<StoredEvent>>>,
    posted: Mutex<HashMap<String, Arc<Notify>>>,
}

impl Channels {
    /// Notified when something is posted to `session`'s inbox in this
    /// process.
    pub(crate) fn posted(&self, session: &str) -> Arc<Notify> {
        let mut posted = self.posted.lock().unwrap_or_else(|p| p.into_inner());
        // Nobody waits on a notification only this map holds.
        posted.retain(|_, n| Arc::strong_count(n) > 1);
        posted.entry(session.to_owned()).or_default().clone()
    }

    /// Wake whoever waits on `session`'s inbox.
    pub(crate) fn notify_posted(&self, session: &str) {
        let posted = self.posted.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(notify) = posted.get(session) {
            notify.notify_waiters();
        }
    }

    pub(crate) fn subscribe(&self, session: &str) -> broadcast::Receiver<StoredEvent> {
        let mut senders = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        senders
            .entry(session.to_owned())
            .or_insert_with(|| broadcast::channel(CAPACITY).0)
            .subscribe()
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
