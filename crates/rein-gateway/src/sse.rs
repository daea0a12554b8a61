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
//! - **A body that is not SSE at all is told apart.** WHATWG would read
//!   any text as fields it ignores, so an HTML page, a JSON document or
//!   random bytes would look like a stream cut short (retryable). The
//!   first non-blank line must be a comment or one of the four fields
//!   (`data`, `event`, `id`, `retry`); otherwise the stream ends at once
//!   with `stream_not_sse`, which is not retried.

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
        held: Some(Vec::new()),
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

/// Bounds line length, holds the body back until its start shows it is
/// SSE, and appends the blank line that dispatches a pending event at a
/// clean end of body.
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
    /// The body so far while it is not yet known to be SSE (`None` once
    /// it is). Held back from the parser; at most a few chunks.
    held: Option<Vec<u8>>,
}

/// How much of a body that is not SSE its error quotes; the verdict waits
/// for this much (or the end), so the message does not depend on chunking.
const SNIPPET: usize = 60;

/// The longest SSE field name (`event`, `retry`) and its colon.
const LONGEST_FIELD: usize = 6;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Whether the body starting with `start` is SSE: `Some` once its first
/// non-blank line shows it, `None` while more is needed (`ended`: no more
/// is coming).
fn judge_start(start: &[u8], ended: bool) -> Option<bool> {
    if !ended && start.len() < BOM.len() && BOM.starts_with(start) {
        return None;
    }
    let body = start.strip_prefix(BOM).unwrap_or(start);
    let first = body.iter().position(|&b| b != b'\n' && b != b'\r')?;
    let rest = &body[first..];
    let line_end = rest.iter().position(|&b| b == b'\n' || b == b'\r');
    let line = &rest[..line_end.unwrap_or(rest.len())];
    let line_complete = ended || line_end.is_some();
    if line.first() == Some(&b':') {
        return Some(true);
    }
    let name = match line.iter().position(|&b| b == b':') {
        Some(at) => &line[..at],
        None if line_complete => line,
        None if line.len() >= LONGEST_FIELD => return Some(false),
        None => return None,
    };
    Some(matches!(name, b"data" | b"event" | b"id" | b"retry"))
}

fn not_sse(start: &[u8]) -> BodyError {
    let start = start.strip_prefix(BOM).unwrap_or(start);
    let quoted = String::from_utf8_lossy(&start[..start.len().min(SNIPPET)]);
    BodyError(AgentError::new(
        codes::STREAM_NOT_SSE,
        format!(
            "the answer is not an event stream; it starts with `{}`",
            rein_wire::visible::visible(quoted.trim_end())
        ),
    ))
}

impl LineGuard {
    /// Count line lengths in `chunk`; `Err` past the bound.
    fn measure(&mut self, chunk: &[u8]) -> Result<(), BodyError> {
        let mut run = self.run;
        for &b in chunk {
            if b == b'\n' || b == b'\r' {
                run = 0;
            } else {
                run += 1;
                if run > self.limits.max_line_bytes {
                    return Err(BodyError(
                        AgentError::new(
                            codes::STREAM_LINE_TOO_LONG,
                            format!(
                                "a stream line exceeded {} bytes",
                                self.limits.max_line_bytes
                            ),
                        )
                        .with_field("max_line_bytes", self.limits.max_line_bytes),
                    ));
                }
            }
        }
        self.run = run;
        if !chunk.is_empty() {
            self.needs_flush = true;
        }
        Ok(())
    }

    /// Pass `chunk` on, or hold it while the body's kind is undecided.
    /// `Ok(None)`: held, poll again.
    fn admit(&mut self, chunk: Bytes) -> Result<Option<Bytes>, BodyError> {
        let chunk = match self.held.as_mut() {
            None => chunk,
            Some(held) => {
                held.extend_from_slice(&chunk);
                match judge_start(held, false) {
                    Some(true) => Bytes::from(self.held.take().unwrap_or_default()),
                    Some(false) if held.len() >= SNIPPET => return Err(not_sse(held)),
                    _ if held.len() > self.limits.max_line_bytes => {
                        // Undecided this long: the first line is over the bound.
                        let held = self.held.take().unwrap_or_default();
                        self.measure(&held)?;
                        Bytes::from(held)
                    }
                    _ => return Ok(None),
                }
            }
        };
        self.measure(&chunk)?;
        Ok(Some(chunk))
    }

    /// The body ended cleanly: decide on what is held, then flush.
    fn at_end(&mut self) -> Option<Result<Bytes, BodyError>> {
        let mut out = Vec::new();
        if let Some(held) = self.held.take() {
            match judge_start(&held, true) {
                Some(false) => return Some(Err(not_sse(&held))),
                _ => {
                    if let Err(err) = self.measure(&held) {
                        return Some(Err(err));
                    }
                    out = held;
                }
            }
        }
        if self.needs_flush {
            self.flushed.store(true, Ordering::Release);
            out.extend_from_slice(b"\n\n");
        }
        (!out.is_empty()).then(|| Ok(Bytes::from(out)))
    }
}

impl Stream for LineGuard {
    type Item = Result<Bytes, BodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if self.ended {
                return Poll::Ready(None);
            }
            match self.inner.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => match self.admit(chunk) {
                    Ok(Some(chunk)) => return Poll::Ready(Some(Ok(chunk))),
                    Ok(None) => continue,
                    Err(err) => {
                        self.ended = true;
                        return Poll::Ready(Some(Err(err)));
                    }
                },
                Poll::Ready(Some(Err(err))) => {
                    self.ended = true;
                    return Poll::Ready(Some(Err(BodyError(err))));
                }
                Poll::Ready(None) => {
                    self.ended = true;
                    return Poll::Ready(self.at_end());
                }
            }
        }
    }
}
