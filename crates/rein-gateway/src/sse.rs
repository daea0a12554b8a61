//! Server-sent events framing.
//!
//! The framing itself (line endings LF / CR / CRLF, chunks split anywhere,
//! multi-line data, comments, a leading BOM, `id` and `retry`) is the
//! `sse-stream` crate's. This module adds what rein needs around it:
//!
//! - **A line bound.** A line longer than [`SseLimits::max_line_bytes`]
//!   ends the stream with `stream_line_too_long` instead of growing a buffer
//!   without limit.
//! - **The pending event at end of body is dispatched.** WHATWG drops an
//!   event that has no trailing blank line; the providers' own SDKs dispatch
//!   it, and real captures end that way (their final `message_stop`,
//!   `response.completed` or `[DONE]`). rein follows the SDKs. Only a clean
//!   end of body does this; a body that fails mid-way is an error.
//! - **`id` carries forward** as the last event id, as WHATWG says.
//! - **Blocks without a `data` field are not dispatched** (WHATWG): an
//!   `event: ping` with no data, or a lone `retry:`, updates state only.
//!   No provider puts meaning in such a block.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use rein_wire::{AgentError, error::codes};
use sse_stream::SseByteStream;

/// Bounds on the framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseLimits {
    /// The longest line accepted, in bytes.
    pub max_line_bytes: usize,
}

impl Default for SseLimits {
    fn default() -> Self {
        // Provider lines are one JSON event each; the largest real ones
        // (a whole tool call or a final response object) are far below this.
        SseLimits {
            max_line_bytes: 8 * 1024 * 1024,
        }
    }
}

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseFrame {
    /// The `event` field, when the block had one.
    pub event: Option<String>,
    /// The data lines joined with `\n`.
    pub data: String,
    /// The last event id seen so far (carried forward).
    pub id: Option<String>,
    /// Whether this frame was completed by the end of the body rather than
    /// by a blank line.
    pub at_eof: bool,
}

/// The error a byte stream yields to the framing.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BodyError(AgentError);

/// Frame a stream of byte chunks into SSE events.
pub fn frames<S>(bytes: S, limits: SseLimits) -> impl Stream<Item = Result<SseFrame, AgentError>>
where
    S: Stream<Item = Result<Bytes, AgentError>> + Send + 'static,
{
    let flushed = Arc::new(AtomicBool::new(false));
    let guarded = LineGuard {
        inner: Box::pin(bytes),
        limits,
        run: 0,
        ended: false,
        flushed: flushed.clone(),
        needs_flush: false,
    };
    let mut last_id: Option<String> = None;
    SseByteStream::new(guarded).filter_map(move |item| {
        let out = match item {
            Ok(block) => {
                if let Some(id) = block.id {
                    last_id = Some(id);
                }
                block.data.map(|data| {
                    Ok(SseFrame {
                        event: block.event,
                        data,
                        id: last_id.clone(),
                        at_eof: flushed.load(Ordering::Acquire),
                    })
                })
            }
            Err(sse_stream::Error::Body(err)) => match err.downcast::<BodyError>() {
                Ok(body) => Some(Err(body.0)),
                Err(other) => Some(Err(AgentError::new(
                    codes::STREAM_IO,
                    format!("reading the stream failed: {other}"),
                ))),
            },
            Err(err) => Some(Err(AgentError::new(
                codes::STREAM_MALFORMED,
                format!("the stream is not valid SSE: {err}"),
            ))),
        };
        futures::future::ready(out)
    })
}

/// Bounds line length and appends the blank line that dispatches a pending
/// event at a clean end of body.
struct LineGuard {
    inner: Pin<Box<dyn Stream<Item = Result<Bytes, AgentError>> + Send>>,
    limits: SseLimits,
    /// Bytes since the last line break.
    run: usize,
    ended: bool,
    flushed: Arc<AtomicBool>,
    /// Whether anything has been seen since the last blank line (an
    /// approximation is fine: an extra blank line dispatches nothing).
    needs_flush: bool,
}

impl Stream for LineGuard {
    type Item = Result<Bytes, BodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match self.inner.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(chunk))) => {
                let mut run = self.run;
                for &b in chunk.iter() {
                    if b == b'\n' || b == b'\r' {
                        run = 0;
                    } else {
                        run += 1;
                        if run > self.limits.max_line_bytes {
                            self.ended = true;
                            return Poll::Ready(Some(Err(BodyError(
                                AgentError::new(
                                    codes::STREAM_LINE_TOO_LONG,
                                    format!(
                                        "a stream line exceeded {} bytes",
                                        self.limits.max_line_bytes
                                    ),
                                )
                                .with_field("max_line_bytes", self.limits.max_line_bytes),
                            ))));
                        }
                    }
                }
                self.run = run;
                if !chunk.is_empty() {
                    self.needs_flush = true;
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(err))) => {
                self.ended = true;
                Poll::Ready(Some(Err(BodyError(err))))
            }
            Poll::Ready(None) => {
                self.ended = true;
                if self.needs_flush {
                    self.flushed.store(true, Ordering::Release);
                    Poll::Ready(Some(Ok(Bytes::from_static(b"\n\n"))))
                } else {
                    Poll::Ready(None)
                }
            }
        }
    }
}
