//! Subscribers of a [`super::PgStore`] hear every committed event, in
//! order, whichever process committed it.
//!
//! Every append's transaction sends `NOTIFY rein_events_KEY 'SESSION FIRST
//! LAST'` (the key is the database's `channel_key`, which a role without
//! a grant on rein's tables cannot read, so it cannot listen); one
//! listening connection per store hears them all. For a
//! session someone here watches, the feed reads the log from the last
//! event it delivered, so a notification that never arrived (the listener
//! reconnecting, say) is caught up by sequence number at the next one,
//! and at once after a reconnect. Events this process committed are
//! delivered straight away when they follow what was delivered; anything
//! out of order waits for the read. One lock over "delivered up to" keeps
//! every session's events in order and never twice. A subscriber may
//! also hear events committed just before it subscribed, whose
//! notification arrived after.
//!
//! Inbox posts are announced on `rein_inbox_KEY`, so a waiter in any process
//! wakes at once; once the listener listens (at first, and after a lost
//! connection) every waiter here is woken, for a post made while nobody
//! listened.
//!
//! Not here: the writes that notify (`write`), the channels themselves
//! (`crate::subscribe`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use tokio::sync::broadcast;

use super::batch::EVENTS_CHANNEL;
use super::write::INBOX_CHANNEL;
use crate::Posted;
use crate::event::StoredEvent;
use crate::subscribe::Channels;

/// Events read per catch-up, at most (a session further behind is read
/// again at once).
const PAGE: usize = 1_000;

/// How long the listener waits before connecting again after a failure.
const RETRY: Duration = Duration::from_secs(1);

/// The store's feed: channels, what each watched session was delivered up
/// to, and the listening task (stopped when the store is dropped).
pub(super) struct Live {
    feed: Arc<Feed>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Live {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Default)]
struct Feed {
    channels: Channels,
    /// The last sequence number delivered, per watched session.
    delivered: Mutex<HashMap<String, u64>>,
}

impl Live {
    /// Start listening on the database `options` name; `pool` reads.
    pub(super) fn start(pool: PgPool, options: PgConnectOptions) -> Live {
        let feed = Arc::new(Feed::default());
        // A connection of its own, not one of the pool's: a listener given
        // back to the pool would keep listening there, and a lost one
        // would come back on an idle pool connection instead of anew.
        let own = PgPoolOptions::new()
            .max_connections(1)
            .connect_lazy_with(options);
        let task = tokio::spawn(listen(pool, own, feed.clone()));
        Live { feed, task }
    }

    pub(super) fn subscribe(&self, session: &str) -> broadcast::Receiver<StoredEvent> {
        self.feed.channels.subscribe(session)
    }

    /// Events this process just committed.
    pub(super) fn committed(&self, session: &str, events: &[StoredEvent]) {
        self.feed.deliver(session, events, None);
    }

    pub(super) fn posted(&self, session: &str) -> Posted {
        self.feed.channels.posted(session)
    }

    /// An item this process posted (its `NOTIFY` wakes the others).
    pub(super) fn posted_here(&self, session: &str) {
        self.feed.channels.notify_posted(session);
    }
}

impl Feed {
    /// Deliver the part of `events` that follows what was delivered, in
    /// order; `base` is where a session seen for the first time starts
    /// (the notification's first event), else `events` start it.
    fn deliver(&self, session: &str, events: &[StoredEvent], base: Option<u64>) {
        let mut delivered = self.delivered.lock().unwrap_or_else(|p| p.into_inner());
        if !self.channels.watched(session) {
            delivered.remove(session);
            return;
        }
        let Some(first) = events.first() else {
            return;
        };
        let last = *delivered
            .entry(session.to_owned())
            .or_insert_with(|| base.unwrap_or(first.seq).saturating_sub(1));
        let next: Vec<StoredEvent> = events.iter().filter(|e| e.seq > last).cloned().collect();
        // Only what follows on without a gap: a gap is filled by a read.
        let contiguous = next
            .iter()
            .enumerate()
            .take_while(|(i, e)| e.seq == last + 1 + *i as u64)
            .count();
        if contiguous > 0 {
            self.channels.publish(session, &next[..contiguous]);
            delivered.insert(session.to_owned(), last + contiguous as u64);
        }
    }

    /// Where a read for `session` starts, if it is watched.
    fn read_from(&self, session: &str, first: u64) -> Option<u64> {
        let delivered = self.delivered.lock().unwrap_or_else(|p| p.into_inner());
        if !self.channels.watched(session) {
            return None;
        }
        Some(delivered.get(session).map_or(first, |d| d + 1))
    }

    /// Read `session`'s log from what was delivered (or `first`) up to
    /// `last` and deliver it.
    async fn catch_up(&self, pool: &PgPool, session: &str, first: u64, last: Option<u64>) {
        loop {
            let Some(from) = self.read_from(session, first) else {
                return;
            };
            if last.is_some_and(|last| from > last) {
                return;
            }
            match super::read_events(pool, session, from, PAGE).await {
                Ok(events) => {
                    let full = events.len() == PAGE;
                    self.deliver(session, &events, Some(first));
                    if !full {
                        return;
                    }
                }
                Err(err) => {
                    tracing::warn!(session, %err, "could not read events to deliver; the next notification tries again");
                    return;
                }
            }
        }
    }

    /// Every watched session read again from what it was delivered.
    async fn catch_up_all(&self, pool: &PgPool) {
        let sessions: Vec<(String, u64)> = {
            let delivered = self.delivered.lock().unwrap_or_else(|p| p.into_inner());
            delivered.iter().map(|(s, d)| (s.clone(), d + 1)).collect()
        };
        for (session, from) in sessions {
            self.catch_up(pool, &session, from, None).await;
        }
    }
}

/// `SESSION FIRST LAST`.
fn parse(payload: &str) -> Option<(&str, u64, u64)> {
    let mut parts = payload.split(' ');
    let session = parts.next()?;
    let first = parts.next()?.parse().ok()?;
    let last = parts.next()?.parse().ok()?;
    Some((session, first, last))
}

/// The listening task: connect, listen, hand each notification on; after
/// a lost connection, catch every watched session up.
async fn listen(pool: PgPool, own: PgPool, feed: Arc<Feed>) {
    loop {
        let mut listener = match PgListener::connect_with(&own).await {
            Ok(listener) => listener,
            Err(err) => {
                if pool.is_closed() {
                    return;
                }
                tracing::warn!(%err, "cannot listen for the store's notifications; trying again");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        let key: Result<String, _> = sqlx::query_scalar("SELECT key FROM channel_key")
            .fetch_one(&pool)
            .await;
        let (events, inbox) = match key {
            Ok(key) => (
                format!("{EVENTS_CHANNEL}{key}"),
                format!("{INBOX_CHANNEL}{key}"),
            ),
            Err(err) => {
                if pool.is_closed() {
                    return;
                }
                tracing::warn!(%err, "cannot read the store's channel key; trying again");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        if let Err(err) = listener.listen_all([events.as_str(), inbox.as_str()]).await {
            tracing::warn!(%err, "cannot listen for the store's notifications; trying again");
            tokio::time::sleep(RETRY).await;
            continue;
        }
        // Whatever was committed or posted while no one listened.
        feed.catch_up_all(&pool).await;
        feed.channels.notify_all_posted();
        loop {
            match listener.try_recv().await {
                Ok(Some(note)) if note.channel() == inbox => {
                    feed.channels.notify_posted(note.payload());
                }
                Ok(Some(note)) => {
                    if let Some((session, first, last)) = parse(note.payload()) {
                        feed.catch_up(&pool, session, first, Some(last)).await;
                    }
                }
                // The connection was lost and made again (listening anew);
                // what was committed meanwhile is read back.
                Ok(None) => {
                    feed.catch_up_all(&pool).await;
                    feed.channels.notify_all_posted();
                }
                Err(err) => {
                    if pool.is_closed() {
                        return;
                    }
                    tracing::warn!(%err, "lost the store's notifications; connecting again");
                    tokio::time::sleep(RETRY).await;
                    break;
                }
            }
        }
    }
}
