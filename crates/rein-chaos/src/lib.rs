//! `rein-chaos`: the crash campaign (`cargo xtask chaos`). A scripted
//! conversation over rein's real file tools, `run_command` in its real
//! sandbox and a real SQLite store — reads, an approved change, a refused
//! delete, a batch of reads, a new file, a compaction, an approved command,
//! a task handed to a sub-agent, five turns — is run in a child process
//! killed with SIGKILL at random instants, reopened and resumed until it
//! finishes, and checked against an uninterrupted run: no lost or partial
//! event in any session, every call answered once, no change or command
//! run twice, nothing left running, every decision the person's. Every
//! The trials take turns among five surfaces: the library, `rein serve`'s
//! HTTP API (`served`), a task graph whose tasks are the turns (`graph`),
//! the turns' calls made by an MCP client of `rein mcp serve` (`mcp`), and
//! the real Claude Code CLI hosted by rein, with a scenario of its own
//! (`hosted`).
//!
//! Not here: the fault matrix, fuzzing and the hostile-input tests (each
//! crate's own tests, `fuzz/`).

pub mod campaign;
pub mod check;
pub mod child;
pub mod counted;
pub mod graph;
pub mod hosted;
pub mod hosted_check;
pub mod mcp;
pub mod model;
pub mod served;
