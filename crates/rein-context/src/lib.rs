//! What the model sees of a conversation, derived from its log and never
//! written back: the request's size against the window and the groups a
//! compaction may set aside ([`window`]), the log projected into the
//! messages of a request ([`project`](mod@project)), the structured state a compaction
//! records and the text that stands for it ([`state_text`]), the facts the
//! log proves and the model's summary checked against them ([`claims`]),
//! and notes on what the model read ([`read_notes`]).
//!
//! Pure: events in, messages, sizes and records out — no store, clock or
//! model call, so a runner, a trace viewer and a test share it.
//!
//! Not here: when to prune or compact and the model call that writes the
//! summary (`rein-runner`), the log itself (`rein-sessions`).

pub mod claims;
pub mod project;
pub mod read_notes;
pub mod state_text;
pub mod window;

pub use project::project;
pub use window::{ContextPolicy, count_local, estimate, tail_groups};
