//! The streamed model call.
//!
//! `rein-gateway` turns a provider-neutral [`Request`](rein_wire::Request)
//! into one streamed HTTP call to a model provider and its answer into
//! normalised [`StreamEvent`](rein_wire::StreamEvent)s. It speaks three wire
//! APIs — Anthropic Messages, OpenAI Chat Completions (and every
//! OpenAI-compatible server), OpenAI Responses — over hyper + rustls, with
//! retries, timeouts and an offline switch.
//!
//! It is *not* the agent loop: it makes one call and knows nothing of tools
//! being run, sessions or approvals. That is `rein-runner`'s job.
//!
//! Layers, bottom up:
//! - [`sse`]: spec-compliant SSE framing over a byte stream (bounded lines,
//!   the pending event dispatched at end of body).
//! - [`decode`]: one pure reducer per wire API, from SSE frames to events.
//! - [`encode`]: one request-body writer per wire API.
//! - [`HttpProvider`]: the HTTP call with retries and timeouts, as a
//!   [`Provider`].

mod answered;
mod client;
pub mod config;
pub mod decode;
pub mod encode;
mod http_provider;
mod provider;
pub mod scripted;
pub mod sse;
pub mod too_long;
pub mod window;

pub use config::{ApiKey, ProviderConfig, RetryPolicy, Timeouts, WireApi, offline_switch_on};
pub use decode::decode_stream;
pub use http_provider::HttpProvider;
pub use provider::{CountFuture, EventStream, Provider, WindowFuture};
pub use rein_wire::{CachingStyle, Capabilities};

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
