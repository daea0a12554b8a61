//! Sub-agents in a report: each sub-agent's session reported on its own,
//! listed under the parent by agent path, and everything added up — what
//! the whole piece of work cost, not only the parent's own calls.
//!
//! Pure: the caller reads the sessions (a sub-agent's is named in its
//! parent's `agent.started`); this only adds up.

use std::fmt::Write;

use serde::Serialize;

use crate::report::{Totals, TraceReport, totals_lines};

/// One sub-agent's part of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentReport {
    /// Its path (`main/agent-2`, `main/agent-1/agent-1`).
    pub agent_path: String,
    /// Its session.
    pub session_id: String,
    /// How its last run ended (absent while unfinished).
    pub outcome: Option<rein_wire::Ending>,
    /// Its own totals.
    pub totals: Totals,
}

impl Totals {
    /// Add `other` in (counts, usage, cost, time; the read share again).
    pub fn merge(&mut self, other: &Totals) {
        self.model_calls += other.model_calls;
        self.usage.accumulate(&other.usage);
        self.cost_micro_usd = self.cost_micro_usd.saturating_add(other.cost_micro_usd);
        self.calls_without_cost += other.calls_without_cost;
        self.reasoning_cost_micro_usd = self
            .reasoning_cost_micro_usd
            .saturating_add(other.reasoning_cost_micro_usd);
        for (verdict, n) in &other.cache_verdicts {
            *self.cache_verdicts.entry(*verdict).or_default() += n;
        }
        let t = &mut self.tools;
        let o = &other.tools;
        t.total += o.total;
        t.ok += o.ok;
        t.error += o.error;
        t.cached += o.cached;
        t.offloaded += o.offloaded;
        t.interrupted += o.interrupted;
        self.model_ms = self.model_ms.saturating_add(other.model_ms);
        self.tool_ms = self.tool_ms.saturating_add(other.tool_ms);
        self.compactions += other.compactions;
        let prompt = self.usage.prompt_total();
        self.cache_read_share = if prompt == 0 {
            0.0
        } else {
            self.usage.cache_read as f64 / prompt as f64
        };
    }
}

impl TraceReport {
    /// Roll the sub-agents' reports (with their paths) into this one: each
    /// listed under [`TraceReport::agents`], and [`TraceReport::all`] the
    /// parent's totals with theirs added.
    pub fn with_agents(mut self, agents: Vec<(String, TraceReport)>) -> TraceReport {
        let mut all = self.totals.clone();
        for (agent_path, report) in agents {
            all.merge(&report.totals);
            self.agents.push(AgentReport {
                agent_path,
                session_id: report.session_id,
                outcome: report.runs.last().and_then(|r| r.outcome),
                totals: report.totals,
            });
        }
        if !self.agents.is_empty() {
            self.all = Some(all);
        }
        self
    }

    /// The sub-agents' lines of the text report (none without sub-agents).
    pub(crate) fn render_agents(&self, out: &mut String) {
        let Some(all) = &self.all else { return };
        for agent in &self.agents {
            let _ = writeln!(
                out,
                "agent {} (session {}) · {}",
                agent.agent_path,
                agent.session_id,
                agent
                    .outcome
                    .map_or("unfinished", rein_wire::Ending::as_str)
            );
            totals_lines(out, "  ", &agent.totals);
        }
        let _ = writeln!(
            out,
            "all agents together (main and {} sub-agents)",
            self.agents.len()
        );
        totals_lines(out, "  ", all);
    }
}
