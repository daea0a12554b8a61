//! rein's eval runner: suites of conversations with checks.
//!
//! A suite is a TOML (or JSON) file of cases under `tests/evals/`
//! ([`suite`]). Each case runs as a whole conversation ([`run`]) on a real
//! SQLite file with the reference tool backend: offline against its own
//! scripted model, or against any real provider. A simulated person answers
//! approvals as the case says. The checks read the log and the backend
//! afterwards. [`report`] prints the scored table, writes the JSON report and
//! compares it with a baseline.
//!
//! It is not a benchmark: times are reported, never checked.

mod check;
mod concluded;
mod graph;
mod memory;
mod person;
pub mod pressure;
mod project;
pub mod report;
mod result;
pub mod run;
pub mod suite;

pub use report::{Report, regressions};
pub use run::{CaseResult, ModelChoice, run_case, run_case_with};
pub use suite::{Case, LoadedCase, load, parse};
