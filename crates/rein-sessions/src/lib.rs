//! Durable sessions: the append-only event log and what is projected from it.
//!
//! Every session is a log of [`Event`]s numbered without gaps; the log is
//! the truth, and everything else — the transcript, the turn tree, the
//! control record, traces — is derived from it. This crate holds the
//! [`Store`] trait, its SQLite implementation (the embedded default,
//! [`SqliteStore`]), one on PostgreSQL for many processes and machines
//! (`PgStore`, feature `postgres`) and an in-memory one ([`MemoryStore`]), the session
//! lock (a lease with heartbeat and expiry), content-addressed artifacts,
//! and the recovery scan that finds work a crashed process left unfinished.
//!
//! It is *not* the agent loop: it records what `rein-runner` does and
//! enforces nothing about a turn's meaning beyond the turn tree's shape.

mod answered;
mod artifact;
mod compact_state;
mod compaction;
mod copy;
mod event;
mod holder;
pub mod home;
mod inbox;
mod log_cache;
mod memory;
mod open;
#[cfg(feature = "postgres")]
mod postgres;
mod projection;
mod record;
pub mod recovery;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod rows;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;
mod subscribe;
mod validate;

pub use answered::{Answered, answered};
pub use artifact::hash_hex;
pub use compact_state::{
    CompactState, DecisionSeen, FailedCall, ReadNote, Receipt, Recorded, SummaryCheck,
    SummaryOutcome,
};
pub use compaction::{Compact, CompactPolicy, Compaction, Prune, PrunedCall};
pub use copy::{Copied, copy};
pub use event::{EVENT_VERSION, Event, NewEvent, ResultSource, StoredEvent, ToolStatus};
pub use holder::ProcessMark;
pub use inbox::{Folded, InboxEntry, InboxItem, TakenDecision, fold};
pub use log_cache::LogCache;
pub use memory::MemoryStore;
pub use open::{open_url, sqlite_path};
#[cfg(feature = "postgres")]
pub use postgres::{
    Claim, ClaimedTask, MAX_CLAIMED_AT_ONCE, PgStore, TaskResult, WorkQueue, redact,
};
pub use projection::{history, started_turn};
pub use record::{Acted, Pressure, Refused};
#[cfg(feature = "sqlite")]
pub use sqlite::{Durability, OPENING_AT_ONCE, SqliteStore};
pub use store::{
    ArtifactRef, ControlRecord, PendingApproval, SessionInfo, SessionLock, Slice, Store, TurnInfo,
    open_turn_started, read_all, read_from, still_begins,
};
pub use subscribe::Posted;

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
