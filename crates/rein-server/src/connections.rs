//! The bound on connections: the listener takes a place for each
//! connection it accepts and the connection gives it back when it closes.
//! At the bound, the next connection waits in the kernel's backlog until a
//! place is free — it is not refused, and nothing grows without end.
//!
//! No connection holds a place for nothing: one that has not sent its first
//! request's head within [`HEAD_TIMEOUT`] (a half-sent request, a socket
//! opened and left) is closed, and so is one with no bytes either way for
//! [`IDLE_TIMEOUT`] (an open event stream keeps alive more often).
//!
//! A connection is a stranger until one of its requests shows credentials
//! ([`Peer::trust`]). Strangers hold at most `strangers` places of their
//! own: past it, the oldest stranger that has held its place for
//! [`STRANGER_GRACE`] is closed to make room, so sockets opened without
//! credentials — however many, however often reopened — never keep a
//! person's request from a place for long (about a second for each
//! `strangers` connections queued ahead of it). Bare line ends are no
//! request head.
//!
//! Not here: the bound on requests at once (`auth::guard`).
//!
//! Not only `rein serve`'s: `rein mcp serve --http` listens through it too.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::serve::IncomingStream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// How long to wait after a failed accept (out of descriptors, say).
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// How long a new connection has to send its first request's head.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a stranger keeps its place before the next connection may
/// take it: a client sends its request as it connects, so a crowd of
/// callers arriving at once is not closed for one another.
pub(crate) const STRANGER_GRACE: Duration = Duration::from_secs(1);

/// How long a connection may pass no bytes either way.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A listener that holds at most `places` connections open, of them at
/// most `strangers` not yet shown to be a caller's. `rein serve` listens
/// through it, and so does `rein mcp serve --http`.
pub struct Bounded {
    pub(crate) listener: TcpListener,
    pub(crate) places: Arc<Semaphore>,
    strangers: Strangers,
}

impl Bounded {
    /// `listener`, holding at most `connections` connections open at once,
    /// of them at most `strangers` without credentials.
    pub fn new(listener: TcpListener, connections: usize, strangers: usize) -> Bounded {
        Bounded {
            listener,
            places: Arc::new(Semaphore::new(connections)),
            strangers: Strangers {
                places: Arc::new(Semaphore::new(strangers.max(1))),
                oldest_first: VecDeque::new(),
                bound: strangers.max(1),
            },
        }
    }
}

/// The places of connections not yet shown to be a caller's, and those
/// connections, oldest first.
struct Strangers {
    places: Arc<Semaphore>,
    oldest_first: VecDeque<Weak<Standing>>,
    bound: usize,
}

impl Strangers {
    /// A stranger's place for a new connection: a free one, else the
    /// oldest stranger's once it has been one for [`STRANGER_GRACE`]
    /// (that connection is closed); until then it waits.
    async fn admit(&mut self) -> Arc<Standing> {
        loop {
            if let Ok(place) = self.places.clone().try_acquire_owned() {
                return self.queued(place);
            }
            let mut wait = STRANGER_GRACE;
            while let Some(oldest) = self.oldest_first.front().map(Weak::upgrade) {
                let Some(oldest) = oldest.filter(|s| s.is_stranger()) else {
                    self.oldest_first.pop_front();
                    continue;
                };
                let held = oldest.since.elapsed();
                if held < STRANGER_GRACE {
                    wait = STRANGER_GRACE - held;
                    break;
                }
                self.oldest_first.pop_front();
                if let Some(place) = oldest.evict() {
                    return self.queued(place);
                }
            }
            let freed = tokio::time::timeout(wait, self.places.clone().acquire_owned()).await;
            if let Ok(Ok(place)) = freed {
                return self.queued(place);
            }
        }
    }

    /// A new stranger holding `place`, queued.
    fn queued(&mut self, place: OwnedSemaphorePermit) -> Arc<Standing> {
        let standing = Arc::new(Standing {
            place: Mutex::new(Some(place)),
            evicted: CancellationToken::new(),
            since: std::time::Instant::now(),
        });
        // Trusted and closed connections leave the queue now and then, so
        // it stays within twice the bound.
        if self.oldest_first.len() >= 2 * self.bound {
            self.oldest_first
                .retain(|s| s.upgrade().is_some_and(|s| s.is_stranger()));
        }
        self.oldest_first.push_back(Arc::downgrade(&standing));
        standing
    }
}

/// Whether a connection is still a stranger: it holds a stranger's place
/// until it is trusted or evicted.
struct Standing {
    place: Mutex<Option<OwnedSemaphorePermit>>,
    evicted: CancellationToken,
    since: std::time::Instant,
}

impl Standing {
    fn is_stranger(&self) -> bool {
        self.place.lock().is_ok_and(|p| p.is_some())
    }

    /// Close a stranger, taking its place; `None` once it is trusted.
    fn evict(&self) -> Option<OwnedSemaphorePermit> {
        let place = self.place.lock().ok()?.take()?;
        self.evicted.cancel();
        Some(place)
    }
}

/// Who a request came from: its address, and its connection's standing.
/// Served with [`axum::Router::into_make_service_with_connect_info`]`::<Peer>`,
/// a request carries it as `ConnectInfo<Peer>`.
#[derive(Clone)]
pub struct Peer {
    /// The peer's address.
    pub addr: SocketAddr,
    standing: Arc<Standing>,
}

impl Peer {
    /// This connection is a caller's: it leaves the strangers.
    pub fn trusted(&self) {
        if let Ok(mut place) = self.standing.place.lock() {
            place.take();
        }
    }

    /// The request's connection is a caller's (a request not served over
    /// [`Bounded`] carries no peer: nothing).
    pub fn trust(request: &axum::extract::Request) {
        if let Some(ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<Peer>>() {
            peer.trusted();
        }
    }
}

impl axum::extract::connect_info::Connected<IncomingStream<'_, Bounded>> for Peer {
    fn connect_info(stream: IncomingStream<'_, Bounded>) -> Peer {
        Peer {
            addr: *stream.remote_addr(),
            standing: stream.io().standing.clone(),
        }
    }
}

/// For a router whose every refusal of a caller without credentials is a
/// 401 (`rein mcp serve --http`'s): a request answered otherwise is a
/// caller's, and so is its connection.
pub async fn trust_unless_unauthorized(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let peer = request.extensions().get::<ConnectInfo<Peer>>().cloned();
    let response = next.run(request).await;
    if response.status() != axum::http::StatusCode::UNAUTHORIZED
        && let Some(ConnectInfo(peer)) = peer
    {
        peer.trusted();
    }
    response
}

/// A connection, its place, and the deadline it must make progress by.
pub struct Held {
    io: TcpStream,
    _place: OwnedSemaphorePermit,
    standing: Arc<Standing>,
    /// Ready once the connection was closed to make room for another.
    evicted: Pin<Box<WaitForCancellationFutureOwned>>,
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// Whether a byte other than a line end came (bare line ends are no
    /// request); whether the first request's head has ended (`\r\n\r\n`
    /// seen after it), and the last bytes read while looking for it.
    content: bool,
    head_done: bool,
    tail: [u8; 3],
}

impl Held {
    fn new(io: TcpStream, place: OwnedSemaphorePermit, standing: Arc<Standing>) -> Held {
        Held {
            io,
            _place: place,
            evicted: Box::pin(standing.evicted.clone().cancelled_owned()),
            standing,
            deadline: Box::pin(tokio::time::sleep(HEAD_TIMEOUT)),
            content: false,
            head_done: false,
            tail: [0; 3],
        }
    }

    /// `Err` once the deadline passed or the connection was evicted: the
    /// connection is closed.
    fn expired(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if self.evicted.as_mut().poll(cx).is_ready() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "closed to make room: a stranger's connection, the oldest",
            ));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                if self.head_done {
                    "idle too long"
                } else {
                    "no request head in time"
                },
            )),
            Poll::Pending => Ok(()),
        }
    }

    /// Bytes went through: the idle deadline moves (once the first head is
    /// in; before, its own deadline stands).
    fn progressed(&mut self, read: Option<&[u8]>) {
        let read = match read {
            Some(bytes) if !self.content => {
                match bytes.iter().position(|b| !matches!(b, b'\r' | b'\n')) {
                    Some(at) => {
                        self.content = true;
                        Some(&bytes[at..])
                    }
                    None => None,
                }
            }
            other => other,
        };
        if !self.head_done
            && let Some(bytes) = read
        {
            let mut window = Vec::with_capacity(3 + bytes.len());
            window.extend_from_slice(&self.tail);
            window.extend_from_slice(bytes);
            self.head_done = window.windows(4).any(|w| w == b"\r\n\r\n");
            // The window holds the three tail bytes at least.
            self.tail.copy_from_slice(&window[window.len() - 3..]);
        }
        if self.head_done {
            self.deadline
                .as_mut()
                .reset(tokio::time::Instant::now() + IDLE_TIMEOUT);
        }
    }
}

impl axum::serve::Listener for Bounded {
    type Io = Held;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Held, SocketAddr) {
        loop {
            // The semaphore is never closed.
            let Ok(place) = self.places.clone().acquire_owned().await else {
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            };
            match self.listener.accept().await {
                Ok((io, addr)) => {
                    // Each event of a stream goes out when written: with
                    // Nagle's algorithm a small write waits for the
                    // client's delayed ACK, ~40 ms on Linux — which the
                    // first token through `rein serve` paid every time.
                    if let Err(err) = io.set_nodelay(true) {
                        tracing::warn!(error = %err, "TCP_NODELAY could not be set");
                    }
                    let standing = self.strangers.admit().await;
                    return (Held::new(io, place, standing), addr);
                }
                Err(err) => {
                    tracing::warn!(error = %err, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

impl AsyncRead for Held {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.expired(cx)?;
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled
            && buf.filled().len() > before
        {
            if self.head_done {
                self.progressed(None);
            } else {
                let read = buf.filled()[before..].to_vec();
                self.progressed(Some(&read));
            }
        }
        polled
    }
}

impl AsyncWrite for Held {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.expired(cx)?;
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled
            && n > 0
        {
            self.progressed(None);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

    use axum::serve::Listener;
    use tokio::net::{TcpListener, TcpStream};

    use super::Bounded;

    #[tokio::test]
    async fn an_accepted_connection_sends_small_writes_at_once() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut bounded = Bounded::new(listener, 1, 1);
        let _client = TcpStream::connect(addr).await.unwrap();
        let (held, _) = bounded.accept().await;
        assert!(held.io.nodelay().unwrap());
    }
}
