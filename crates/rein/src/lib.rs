//! rein, an agent harness runtime.
//!
//! This facade re-exports the crates an application needs, so it can
//! depend on `rein` alone. Each layer is also usable on its own:
//!
//! - [`wire`]: the vocabulary (messages, requests, stream events, usage and
//!   cost, canonical JSON, ids, errors with stable codes);
//! - [`gateway`]: the streamed model call over the three wire APIs;
//! - [`sessions`]: the durable store (event log, turn tree, locks, artifacts);
//! - [`trace`]: reports and golden traces read from the log.
//!
//! The `rein` binary built from this crate is the command-line surface.

pub use rein_gateway as gateway;
pub use rein_sessions as sessions;
pub use rein_trace as trace;
pub use rein_wire as wire;

pub mod chat;
pub mod decode_cmd;
pub mod files;
pub mod output;
pub mod sessions_cmd;
