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
//! and at once after a reconnect. A session watched before anything of it
//! was delivered is read from what was committed since it is watched (by
//! the events' own times, less [`SINCE_SLACK_MS`] for writers' clocks), so
//! a notification lost before the first one is caught up too. Events this
//! process committed are
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

/// A session watched before anything of it was delivered is read from the
/// events committed since it is watched, less this much (another writer's
/// clock may be behind): its subscriber may hear events committed up to
/// this long before it subscribed.
pub(super) const SINCE_SLACK_MS: i64 = 5_000;

/// Past this many sessions marked, the marks of sessions nobody watches
/// are dropped each time their number doubles.
const PRUNE_FROM: usize = 1_024;

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
    /// Where each watched session is: delivered up to, or watched since.
    delivered: Mutex<HashMap<String, Mark>>,
}

/// Where a watched session's delivery stands.
#[derive(Debug, Clone, Copy)]
enum Mark {
    /// Nothing delivered yet; watched since this time (ms, less the slack).
    Since(i64),
    /// Delivered up to this sequence number.
    Upto(u64),
}

/// Where a read for a watched session starts.
enum Start {
    /// At this sequence number.
    Seq(u64),
    /// At the first event committed at or after this time (ms).
    Since(i64),
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
        let receiver = self.feed.channels.subscribe(session);
        let since = rein_wire::clock::now_ms().saturating_sub(SINCE_SLACK_MS);
        let mut delivered = self
            .feed
            .delivered
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if !delivered.contains_key(session) {
            delivered.insert(session.to_owned(), Mark::Since(since));
            // Sessions nobody watches any more are forgotten as the map
            // doubles (a subscriber may leave before anything was delivered).
            if delivered.len() >= PRUNE_FROM && delivered.len().is_power_of_two() {
                delivered.retain(|session, _| self.feed.channels.watched(session));
            }
        }
        drop(delivered);
        receiver
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
        let last = match delivered.get(session) {
            Some(Mark::Upto(last)) => *last,
            _ => base.unwrap_or(first.seq).saturating_sub(1),
        };
        let next: Vec<StoredEvent> = events.iter().filter(|e| e.seq > last).cloned().collect();
        // Only what follows on without a gap: a gap is filled by a read.
        let contiguous = next
            .iter()
            .enumerate()
            .take_while(|(i, e)| e.seq == last + 1 + *i as u64)
            .count();
        if contiguous > 0 {
            self.channels.publish(session, &next[..contiguous]);
            delivered.insert(session.to_owned(), Mark::Upto(last + contiguous as u64));
        }
    }

    /// Where a read for `session` starts, if it is watched: after what
    /// was delivered, since it is watched, else at `first`.
    fn read_from(&self, session: &str, first: u64) -> Option<Start> {
        let delivered = self.delivered.lock().unwrap_or_else(|p| p.into_inner());
        if !self.channels.watched(session) {
            return None;
        }
        Some(match delivered.get(session) {
            Some(Mark::Upto(last)) => Start::Seq(last + 1),
            Some(Mark::Since(ms)) => Start::Since(*ms),
            None => Start::Seq(first),
        })
    }

    /// Read `session`'s log from what was delivered (or since it is
    /// watched, or `first`) up to `last` and deliver it.
    async fn catch_up(&self, pool: &PgPool, session: &str, first: u64, last: Option<u64>) {
        loop {
            let from = match self.read_from(session, first) {
                None => return,
                Some(Start::Seq(from)) => from,
                Some(Start::Since(ms)) => match first_since(pool, session, ms).await {
                    Ok(Some(from)) => from,
                    // Nothing committed since it is watched.
                    Ok(None) => return,
                    Err(err) => {
                        tracing::warn!(session, %err, "could not find where to deliver from; the next notification tries again");
                        return;
                    }
                },
            };
            if last.is_some_and(|last| from > last) {
                return;
            }
            match super::read_events(pool, session, from, PAGE).await {
                Ok(events) => {
                    let full = events.len() == PAGE;
                    self.deliver(session, &events, Some(from));
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
        let sessions: Vec<String> = {
            let mut delivered = self.delivered.lock().unwrap_or_else(|p| p.into_inner());
            delivered.retain(|session, _| self.channels.watched(session));
            delivered.keys().cloned().collect()
        };
        for session in sessions {
            // Each is read from its mark (`first` is not used).
            self.catch_up(pool, &session, 1, None).await;
        }
    }
}

/// The sequence number of `session`'s first event committed at or after
/// `ms`, if any.
async fn first_since(pool: &PgPool, session: &str, ms: i64) -> Result<Option<u64>, sqlx::Error> {
    let seq: Option<i64> = sqlx::query_scalar(
        "SELECT seq FROM events WHERE session_id = $1 AND at_ms >= $2 ORDER BY seq LIMIT 1",
    )
    .bind(session)
    .bind(ms)
    .fetch_optional(pool)
    .await?;
    Ok(seq.map(super::to_u64))
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
