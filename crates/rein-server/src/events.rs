//! A conversation's events as Server-Sent Events: every logged event with
//! its sequence number as the SSE `id` (kind `log`), and while a turn runs
//! here its live events (kind `ui`: answer text as it streams, tool calls,
//! usage) without an id — they are not kept; the log has their outcome.
//!
//! A client that reconnects with `Last-Event-ID: N` (or `?after=N`) gets
//! the log from `N + 1` on, then the live tail: it subscribes before it
//! reads back, and skips what it has sent, so nothing is lost or repeated
//! across the seam; a watcher that falls behind the live channel reads the
//! gap back from the log, a page at a time. A read of the log that fails is
//! said (kind `failed`: its code and words) and ends the stream.
//!
//! Not here: routes and guards (`routes`, `auth`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::sse::{Event as Sse, KeepAlive};
use futures::Stream;
use rein_sessions::StoredEvent;
use rein_wire::{AgentError, error::codes};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use utoipa::IntoParams;

use crate::Inner;

/// Log events read back per page.
const PAGE: usize = 500;

/// How often an idle stream sends a comment (keeps proxies from closing it).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// One logged event as SSE.
fn log_event(stored: &StoredEvent) -> Sse {
    let data = json!({
        "seq": stored.seq,
        "at_ms": stored.at_ms,
        "agent": stored.agent_path,
        "kind": stored.event.kind(),
        "data": stored.event.data(),
    });
    Sse::default()
        .id(stored.seq.to_string())
        .event("log")
        .data(data.to_string())
}

/// A read of the log that failed, said to the watcher before the stream
/// ends (its code and words; it may reconnect with `Last-Event-ID`).
fn failed(err: &AgentError) -> Sse {
    let data = json!({"code": err.code, "message": err.message});
    Sse::default().event("failed").data(data.to_string())
}

/// The stream for `session` after sequence number `after`. Refused when
/// the conversation has as many watchers as the limit (`too_many_clients`)
/// or does not exist (`session_not_found`).
pub(crate) async fn stream(
    inner: Arc<Inner>,
    session: String,
    after: u64,
    watchers: usize,
) -> Result<(impl Stream<Item = Result<Sse, Infallible>>, KeepAlive), AgentError> {
    let head = inner.store.session(&session).await?.head_seq;
    let after = after.min(head);
    let ui = inner.live.ui(&session);
    if ui.receiver_count() >= watchers {
        return Err(AgentError::new(
            codes::TOO_MANY_CLIENTS,
            format!("this conversation has {watchers} watchers already"),
        ));
    }
    // Subscribed before reading back: an event appended meanwhile is in
    // the channel, and skipped if the read-back had it.
    let mut durable = inner.store.subscribe(&session);
    let mut live = ui.subscribe();
    let stream = async_stream::stream! {
        let mut sent = after;
        // The log read back in pages up to `until` (the head when none);
        // a read that fails is said (`failed`) and ends the stream.
        macro_rules! read_back {
            ($until:expr) => {
                loop {
                    let until: Option<u64> = $until;
                    let want = until.map_or(PAGE, |u| {
                        usize::try_from(u.saturating_sub(sent)).unwrap_or(PAGE).min(PAGE)
                    });
                    if want == 0 {
                        break;
                    }
                    let page = match inner.store.read(&session, sent + 1, want).await {
                        Ok(page) => page,
                        Err(err) => {
                            yield Ok(failed(&err));
                            return;
                        }
                    };
                    let full = page.len() == want;
                    for stored in page.iter().filter(|e| until.is_none_or(|u| e.seq <= u)) {
                        sent = stored.seq;
                        yield Ok(log_event(stored));
                    }
                    if !full {
                        break;
                    }
                }
            };
        }
        read_back!(None);
        loop {
            tokio::select! {
                event = durable.recv() => match event {
                    Ok(stored) if stored.seq > sent => {
                        // A gap (events appended between the read-back and
                        // the subscription's first) is read from the log.
                        read_back!(Some(stored.seq - 1));
                        sent = stored.seq;
                        yield Ok(log_event(&stored));
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => read_back!(None),
                    Err(RecvError::Closed) => return,
                },
                event = live.recv() => match event {
                    Ok(event) => {
                        if let Ok(data) = serde_json::to_string(&event) {
                            yield Ok(Sse::default().event("ui").data(data));
                        }
                    }
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                },
            }
        }
    };
    Ok((stream, KeepAlive::new().interval(KEEP_ALIVE)))
}

#[derive(Debug, Deserialize, IntoParams)]
pub(crate) struct After {
    /// Send the log after this sequence number (as `Last-Event-ID`).
    pub(crate) after: Option<u64>,
}

/// Where a stream starts: after `Last-Event-ID`, else `after`, else the
/// start. A resume point that is no sequence number is refused, not taken
/// as "from the start"; one past the head is the head (it never wraps).
pub(crate) fn resume_point(headers: &HeaderMap, after: Option<u64>) -> Result<u64, AgentError> {
    let last = match headers.get("last-event-id") {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    AgentError::new(
                        codes::INVALID_INPUT,
                        "Last-Event-ID must be a sequence number this stream sent",
                    )
                })?,
        ),
    };
    Ok(last.or(after).unwrap_or(0))
}
