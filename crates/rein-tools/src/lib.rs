//! Tools: what a product lets the model do, and how a call is run safely.
//!
//! - [`Tool`]: one tool with a typed input (`schemars::JsonSchema +
//!   Deserialize`); its JSON schema is generated, titles stripped.
//! - [`ToolBackend`]: the contract between rein and a product's tools —
//!   catalog, definition, permission class *for these arguments*, invoke
//!   (an [`Outcome`], never a panic or an `Err` for a domain failure),
//!   cacheable, revision token. [`Registry`] turns a set of [`Tool`]s into
//!   one.
//! - Arguments are validated against the schema before anything runs;
//!   invalid ones become an error result the model can read.
//! - [`bound`]: results are serialised within bounds; a larger one is
//!   stored as an artifact and replaced by a stub the model pages through.
//! - [`ResultCache`]: cacheable reads remembered per tool, canonical
//!   arguments and revision.
//! - [`Joined`]: several backends offered as one.
//! - [`Skills`]: a folder of markdown skills, checked whole at load.
//! - [`Progress`]: how a running call reports how far it got.
//!
//! It does not decide whether a call may run (that is `rein-approvals`) nor
//! when (that is `rein-runner`).

mod backend;
mod bounded;
mod cache;
mod from_fn;
mod joined;
mod progress;
mod registry;
mod skills;

/// The attribute an `impl ToolBackend` (a `dyn` trait) needs, so its author
/// does not add the crate; `impl Tool` needs none.
pub use async_trait::async_trait;
pub use backend::{
    Advanced, AppContext, Outcome, RevisionGuard, ToolBackend, ToolContext, ToolSummary,
};
pub use bounded::{ArtifactSink, Bounds, bound};
pub use cache::ResultCache;
pub use from_fn::{FnTool, tool_fn};
pub use joined::Joined;
pub use progress::{Progress, ProgressReport};
pub use registry::{Registry, Tool, schema_for, strict_variant};
/// The words a tool speaks about what a call may do.
pub use rein_wire::permission::{PermissionClass, Policy};
/// What a person approving a call is shown.
pub use rein_wire::{Preview, PreviewKind};
pub use skills::{Skill, Skills};

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
