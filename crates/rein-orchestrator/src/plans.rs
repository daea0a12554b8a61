//! Plans: a product's own packet in, a product's own packet out, a task
//! graph in between.
//!
//! A product speaks in its own terms — a release checklist, an analysis
//! request, a migration plan. Its [`PlanHost`] turns that *plan packet*
//! into a [`GraphSpec`] (its workflow layer: which tasks, in which order,
//! with which briefs) and turns the run's [`Report`] back into its *result
//! packet* (what its UI or API shows). [`run_plan`] does the rest: checks
//! the graph before anything runs, runs it, and hands the report back.
//!
//! # A worked example
//!
//! A product's release plan — `{"version": "2.1", "checks": ["unit", "lint"]}`
//! — becomes one task per check, side by side, and an announcement after
//! all of them that reads their verdicts; the run comes back as the
//! product's release report. (The longer form, with a failing check and
//! refused packets, is `tests/plans.rs`.)
//!
//! ```
//! use std::sync::Arc;
//!
//! use futures::FutureExt;
//! use futures::future::BoxFuture;
//! use rein_orchestrator::{
//!     Attempt, GraphSpec, Outputs, PlanHost, Report, TaskRunner, TaskSpec, TaskState, run_plan,
//! };
//! use rein_wire::{AgentError, error::codes};
//! use serde_json::{Value, json};
//!
//! struct Releases;
//!
//! impl PlanHost for Releases {
//!     fn compose(&self, plan: &Value) -> Result<GraphSpec, AgentError> {
//!         let Some(checks) = plan["checks"].as_array() else {
//!             return Err(AgentError::new(codes::INVALID_INPUT, "`checks` is a list"));
//!         };
//!         let ids: Vec<String> = checks
//!             .iter()
//!             .filter_map(Value::as_str)
//!             .map(|c| format!("check-{c}"))
//!             .collect();
//!         let mut tasks: Vec<TaskSpec> = ids
//!             .iter()
//!             .map(|id| TaskSpec::new(id, format!("Run {id}.")).yields(&["verdict"]))
//!             .collect();
//!         let verdicts: String = ids.iter().map(|id| format!("{id}: {{{{{id}.verdict}}}}; ")).collect();
//!         let after: Vec<&str> = ids.iter().map(String::as_str).collect();
//!         tasks.push(
//!             TaskSpec::new("announce", format!("Announce {}: {verdicts}", plan["version"]))
//!                 .after(&after)
//!                 .yields(&["note"]),
//!         );
//!         Ok(GraphSpec { tasks, ..GraphSpec::default() })
//!     }
//!
//!     fn summarise(&self, plan: &Value, report: &Report) -> Result<Value, AgentError> {
//!         let note = report.tasks.iter().find_map(|(task, state)| match state {
//!             TaskState::Succeeded { outputs, .. } if task == "announce" => outputs.get("note").cloned(),
//!             _ => None,
//!         });
//!         Ok(json!({"version": plan["version"], "ready": note.is_some(), "note": note}))
//!     }
//! }
//!
//! /// Stands in for conversations (`rein_runner::ConversationTasks` in a product).
//! struct Checks;
//!
//! impl TaskRunner for Checks {
//!     fn run(&self, attempt: Attempt) -> BoxFuture<'static, Result<Outputs, AgentError>> {
//!         async move {
//!             Ok(match attempt.task.id.as_str() {
//!                 "announce" => [("note".to_owned(), attempt.brief)].into(),
//!                 _ => [("verdict".to_owned(), "ok".to_owned())].into(),
//!             })
//!         }
//!         .boxed()
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let plan = json!({"version": "2.1", "checks": ["unit", "lint"]});
//! let run = run_plan(&Releases, &plan, Arc::new(Checks)).await?;
//! assert_eq!(run.result["ready"], true);
//! assert_eq!(
//!     run.result["note"],
//!     "Announce \"2.1\": check-unit: ok; check-lint: ok; "
//! );
//! # Ok::<(), AgentError>(())
//! # }).unwrap();
//! ```
//!
//! Not here: what a task is (the [`TaskRunner`]), or any packet format —
//! those are the product's.

use std::sync::Arc;

use rein_wire::AgentError;
use serde_json::Value;

use crate::graph::GraphSpec;
use crate::schedule::{Report, Scheduler, TaskRunner};

/// A product's plans: its plan packet to a graph, the run to its result
/// packet.
pub trait PlanHost: Send + Sync {
    /// The graph that carries out `plan` (refuse a packet that makes no
    /// sense with `invalid_input`, naming the field).
    fn compose(&self, plan: &Value) -> Result<GraphSpec, AgentError>;

    /// The result packet for `plan` from the run's `report`.
    fn summarise(&self, plan: &Value, report: &Report) -> Result<Value, AgentError>;
}

/// What a plan's run gave: every task's end, and the product's packet.
#[derive(Debug, Clone)]
pub struct PlanRun {
    /// The graph's report.
    pub report: Report,
    /// The result packet the host made from it.
    pub result: Value,
}

/// Compose `plan` into a graph through `host`, check it, run it with
/// `runner`, and summarise the run. A graph that fails its check is
/// refused before anything runs (`graph_invalid`).
pub async fn run_plan(
    host: &dyn PlanHost,
    plan: &Value,
    runner: Arc<dyn TaskRunner>,
) -> Result<PlanRun, AgentError> {
    let graph = host.compose(plan)?.check()?;
    let report = Scheduler::new(graph, runner).run().await;
    let result = host.summarise(plan, &report)?;
    Ok(PlanRun { report, result })
}
