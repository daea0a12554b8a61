//! The [`Provider`] trait: one streamed model call.

use std::pin::Pin;

use futures::Stream;
use rein_wire::{AgentError, Capabilities, Request, StreamEvent};

/// The events of one model call. Dropping it cancels the call.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, AgentError>> + Send>>;

/// A model provider: one streamed call at a time per [`Provider::stream`].
///
/// Implementations must not panic and must not leak credentials into
/// events or errors. The stream ends after a [`StreamEvent::Stop`] (and any
/// usage after it), or with one `Err`.
pub trait Provider: Send + Sync {
    /// A short name for logs and traces (`anthropic`, `openai-chat`, …).
    fn name(&self) -> &str;

    /// What it can do.
    fn capabilities(&self) -> Capabilities;

    /// Start the call. Nothing happens until the stream is polled.
    fn stream(&self, request: Request) -> EventStream;

    /// Count the request's input tokens with the provider's own counter,
    /// where it has one (`Ok(None)`: it has none; callers fall back to an
    /// estimate, also on `Err`).
    fn count_tokens(&self, _request: Request) -> CountFuture {
        Box::pin(async { Ok(None) })
    }

    /// Ask the server the window `model` really has, where this provider
    /// does not know it (an OpenAI-compatible server); `None` when it was
    /// not asked. Once stated, [`Provider::capabilities`] carries it.
    fn learn_window(&self, _model: &str) -> WindowFuture {
        Box::pin(async { None })
    }
}

/// The answer of [`Provider::learn_window`].
pub type WindowFuture =
    Pin<Box<dyn std::future::Future<Output = Option<crate::window::Asked>> + Send>>;

/// The answer of [`Provider::count_tokens`].
pub type CountFuture =
    Pin<Box<dyn std::future::Future<Output = Result<Option<u64>, AgentError>> + Send>>;
