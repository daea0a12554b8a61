//! The vocabulary every rein crate speaks.
//!
//! `rein-wire` holds the plain data types that cross crate boundaries: the
//! messages and content blocks of a conversation, the provider-neutral
//! [`Request`] envelope, the normalised [`StreamEvent`]s a model call yields,
//! [`Usage`] and its cost in integer micro-USD, canonical JSON (RFC 8785),
//! sortable ids, and [`AgentError`] with its registry of stable codes.
//!
//! It is *not* a client: nothing here opens a socket, reads a file or knows a
//! provider's wire format. Those live in `rein-gateway`.

mod assemble;
pub mod canonical;
mod capabilities;
pub mod clock;
pub mod env;
pub mod error;
mod event;
pub mod hook;
pub mod hosted;
pub mod ids;
mod io_reason;
mod live;
pub mod loops;
mod message;
pub mod permission;
mod preview;
pub mod repair;
mod request;
mod revision;
pub mod secrets;
mod usage;
pub mod visible;
pub mod words;

pub use assemble::{AssembledMessage, AssembledToolCall, Assembler};
pub use capabilities::{CachingStyle, Capabilities, ModelReasoning, model_reasoning};
pub use error::{AgentError, ErrorCode};
pub use event::{StopReason, StreamEvent};
pub use hook::{HookDid, HookPoint};
pub use live::{AgentPath, ApprovalRequest, ResultSource, UiEvent, UiKind};
pub use message::{ContentBlock, ImageSource, Message, Role, ToolCall, text_of};
pub use preview::{
    MAX_PREVIEW_BYTES, MAX_SHOWN_ARGUMENT_CHARS, Preview, PreviewKind, arguments_text,
};
pub use request::{
    CacheBreakpoint, CacheTarget, MIN_THINKING_BUDGET, Metadata, OutputSchema, Reasoning, Request,
    Sampling, SystemBlock, ToolChoice, ToolSpec,
};
pub use revision::Revision;
pub use usage::{CHARS_PER_TOKEN, ModelPrice, PriceTable, Usage, estimate_tokens_of};
pub use words::{
    CacheVerdict, ChildEnding, CountMethod, Ending, GraphOutcome, InterventionKind, PressureAction,
    TaskEnding,
};

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
