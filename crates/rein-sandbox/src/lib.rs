//! Commands run isolated.
//!
//! - [`Sandbox`]: run one command (argv, a working directory, exactly the
//!   environment given) within bounds, its output bounded; two backends:
//!   [`LinuxSandbox`] (landlock + seccomp + rlimits + a new session killed
//!   whole at the wall-clock limit, applied by the helper
//!   `rein-sandbox-exec` just before it becomes the command) and
//!   [`HostSandbox`] (no isolation; only with an explicit acknowledgement,
//!   and every result says so); and [`ContainerSandbox`], a fresh
//!   container of a local image per command (Docker or Podman) under the
//!   same contract.
//!
//! Not here: whether a command may run at all (the command policy and
//! the person's approval).

pub mod bwrap;
mod cgroup;
pub mod config;
pub mod confine;
pub mod container;
mod executed;
mod executors;
pub mod helper;
pub mod keeping;
mod live;
pub mod policy;
mod program;
pub mod protect;
mod run;
pub mod spec;
mod tool;

pub use cgroup::PidsCgroup;
pub use container::ContainerSandbox;
pub use live::kill_running;
pub use run::{HostSandbox, LinuxSandbox, Output, Ran, Request, Sandbox};
pub use spec::Limits;
pub use tool::{RunCommand, RunInput};

/// The most output kept per stream, in bytes.
pub fn run_max_output() -> usize {
    run::MAX_OUTPUT
}

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
