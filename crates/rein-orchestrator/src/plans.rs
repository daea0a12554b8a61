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
