//! In-process subscriptions: one broadcast channel per watched session.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::broadcast;

use crate::event::StoredEvent;

/// How many events a slow subscriber may lag before it is told it missed
/// some (it then reads them back from the log by sequence number).
const CAPACITY: usize = 4096;

#[derive(Default)]
pub(crate) struct Channels {
    senders: Mutex<HashMap<String, broadcast::Sender<StoredEvent>>>,
}

impl Channels {
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
