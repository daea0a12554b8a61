//! The server's tests over real HTTP, one test binary: each file below was its own binary once, and
//! each linked the whole stack. One binary builds and links once.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

mod api;
mod bounds;
mod browser;
mod common;
mod crowds;
mod edges;
mod graphs;
mod memory;
mod page;
mod page_exits;
mod page_faults;
mod page_graphs;
mod replays;
