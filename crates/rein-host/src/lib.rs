//! Hosting other agents: Claude Code, Codex, and any agent that speaks ACP,
//! driven as workers whose progress is shown safely, whose cost is counted,
//! and whose sessions a person can watch and take over.
//!
//! - [`claude`] and [`codex`]: pure reducers over each CLI's JSON lines
//!   ([`Reducer`]): lines in, [`Step`]s out, one [`Outcome`]. No process,
//!   clock or file, so recordings, live runs and fuzz inputs share them.
//! - [`acp`]: any ACP agent driven as a child, its permission requests
//!   decided by a person; [`acp_stream`]: its messages reduced, purely;
//!   [`acp_serve`]: rein itself served as an ACP agent; [`jsonrpc`]: the
//!   JSON-RPC both sides speak.
//! - [`progress`]: what a person is shown — redacted by construction.
//! - [`driver`]: the one loop every hosted run goes through (its session,
//!   inbox, questions, record, end; in a run that stays, its next turns:
//!   `turns`, `talk`) over a per-kind [`Adapter`]: [`cli`]
//!   (a CLI's JSON lines: Claude Code, `codex exec`), [`codex_app`],
//!   [`acp`]; [`child`]: the program as a child process (its environment,
//!   its process group killed when the run is over, its stderr's tail);
//!   [`person`]: a program's question and a person's answer; [`asks`]: a
//!   question recorded and decided from any surface; [`heard`]: words and
//!   stops posted mid-run; [`record`]: the hosted run as an ordinary rein
//!   session; [`config`]: the agents a person configured (`[agents.NAME]`).
//! - [`session`]: the session host — a terminal per session ([`pty`]) and,
//!   for a protocol agent, a separate inbound channel; live plural attach,
//!   takeover by typing, interventions recorded; a protocol agent's run is
//!   such a session too, rendered; [`attach`]: the same session from
//!   another process, over a Unix socket.
//!
//! Not here: rein's own conversations (`rein-runner`), or the terminal
//! rendering of progress (the CLI's).

pub mod acp;
pub mod acp_serve;
pub mod acp_stream;
mod adapter;
pub mod asks;
pub mod attach;
pub mod child;
pub mod claude;
pub mod cli;
pub mod codex;
pub mod codex_app;
pub mod config;
pub mod driver;
pub mod heard;
pub mod helper;
pub mod jsonrpc;
pub mod keeper;
mod lifetime;
mod lines;
pub mod person;
pub mod progress;
pub mod pty;
pub mod record;
pub mod reducer;
pub mod session;
pub mod shown;
pub mod switch;
mod talk;
mod turns;
mod view;

pub use child::{Driven, Ended, HostSpec};
pub use claude::ClaudeStream;
pub use cli::{Joined, drive};
pub use codex::CodexStream;
pub use driver::{Adapter, Next, Stays, Taking, drive_with};
pub use lifetime::kill_running;
pub use progress::{Progress, ProgressKind};
pub use record::Recorder;
pub use reducer::{Outcome, Reducer, Refusal, RefusalKind, Step, TurnResult};

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
