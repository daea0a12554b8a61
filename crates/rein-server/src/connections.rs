//! The bound on connections: the listener takes a place for each
//! connection it accepts and the connection gives it back when it closes.
//! At the bound, the next connection waits in the kernel's backlog until a
//! place is free — it is not refused, and nothing grows without end.
//!
//! Not here: the bound on requests at once (`auth::guard`).

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

/// A listener that holds at most `places` connections open.
pub(crate) struct Bounded {
    pub(crate) listener: TcpListener,
    pub(crate) places: Arc<Semaphore>,
}

/// A connection and its place.
pub(crate) struct Held {
    io: TcpStream,
    _place: OwnedSemaphorePermit,
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
                Ok((io, addr)) => return (Held { io, _place: place }, addr),
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
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Held {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
