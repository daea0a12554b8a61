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
//! Not here: the bound on requests at once (`auth::guard`).
//!
//! Not only `rein serve`'s: `rein mcp serve --http` listens through it too.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long to wait after a failed accept (out of descriptors, say).
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// How long a new connection has to send its first request's head.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection may pass no bytes either way.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A listener that holds at most `places` connections open. `rein serve`
/// listens through it, and so does `rein mcp serve --http`.
pub struct Bounded {
    pub(crate) listener: TcpListener,
    pub(crate) places: Arc<Semaphore>,
}

impl Bounded {
    /// `listener`, holding at most `connections` connections open at once.
    pub fn new(listener: TcpListener, connections: usize) -> Bounded {
        Bounded {
            listener,
            places: Arc::new(Semaphore::new(connections)),
        }
    }
}

/// A connection, its place, and the deadline it must make progress by.
pub struct Held {
    io: TcpStream,
    _place: OwnedSemaphorePermit,
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// Whether the first request's head has ended (`\r\n\r\n` seen), and
    /// the last bytes read while looking for it.
    head_done: bool,
    tail: [u8; 3],
}

impl Held {
    fn new(io: TcpStream, place: OwnedSemaphorePermit) -> Held {
        Held {
            io,
            _place: place,
            deadline: Box::pin(tokio::time::sleep(HEAD_TIMEOUT)),
            head_done: false,
            tail: [0; 3],
        }
    }

    /// `Err` once the deadline passed: the connection is closed.
    fn expired(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
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
                    return (Held::new(io, place), addr);
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

    use std::sync::Arc;

    use axum::serve::Listener;
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::Semaphore;

    use super::Bounded;

    #[tokio::test]
    async fn an_accepted_connection_sends_small_writes_at_once() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut bounded = Bounded {
            listener,
            places: Arc::new(Semaphore::new(1)),
        };
        let _client = TcpStream::connect(addr).await.unwrap();
        let (held, _) = bounded.accept().await;
        assert!(held.io.nodelay().unwrap());
    }
}
