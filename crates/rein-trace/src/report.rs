//! Trace reports: totals per session and per run.

use std::collections::BTreeMap;
use std::fmt::Write;

use rein_sessions::{Compaction, Event, ResultSource, StoredEvent, ToolStatus};
use rein_wire::Usage;
use serde::Serialize;

/// Tool calls by how they ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolCounts {
    /// Results recorded.
    pub total: u64,
    /// Succeeded.
    pub ok: u64,
    /// Failed.
    pub error: u64,
    /// Answered from the tool-result cache.
    pub cached: u64,
    /// Offloaded to an artifact.
    pub offloaded: u64,
    /// Interrupted by a crash or stop.
    pub interrupted: u64,
}

/// Totals over a set of events.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Model calls completed.
    pub model_calls: u64,
    /// Tokens, summed.
    pub usage: Usage,
    /// Cost of the calls whose cost is known, in micro-USD.
    pub cost_micro_usd: u64,
    /// Calls whose cost is unknown (their model has no price).
    pub calls_without_cost: u64,
    /// Of `cost_micro_usd`, what reasoning tokens cost.
    pub reasoning_cost_micro_usd: u64,
    /// Cache verdicts (`cold`, `hit`, `miss`, `uncached`) and their counts.
    pub cache_verdicts: BTreeMap<rein_wire::CacheVerdict, u64>,
    /// Cache-read tokens over all prompt tokens (0 when there were none).
    pub cache_read_share: f64,
    /// Tool calls.
    pub tools: ToolCounts,
    /// Time spent in model calls.
    pub model_ms: u64,
    /// Time spent in tool calls.
    pub tool_ms: u64,
    /// Compactions made.
    pub compactions: u64,
}

impl Totals {
    fn add(&mut self, event: &Event) {
        match event {
            Event::ModelCompleted {
                usage,
                cost_micro_usd,
                reasoning_cost_micro_usd,
                cache_verdict,
                latency_ms,
                ..
            } => {
                self.reasoning_cost_micro_usd = self
                    .reasoning_cost_micro_usd
                    .saturating_add(reasoning_cost_micro_usd.unwrap_or(0));
                self.model_calls += 1;
                if let Some(usage) = usage {
                    self.usage.accumulate(usage);
                }
                match cost_micro_usd {
                    Some(cost) => self.cost_micro_usd = self.cost_micro_usd.saturating_add(*cost),
                    None => self.calls_without_cost += 1,
                }
                if let Some(verdict) = cache_verdict {
                    *self.cache_verdicts.entry(*verdict).or_default() += 1;
                }
                self.model_ms = self.model_ms.saturating_add(*latency_ms);
            }
            Event::ToolResult {
                status,
                source,
                duration_ms,
                ..
            } => {
                self.tools.total += 1;
                match status {
                    ToolStatus::Ok => self.tools.ok += 1,
                    ToolStatus::Error => self.tools.error += 1,
                }
                match source {
                    ResultSource::Cache => self.tools.cached += 1,
                    ResultSource::Offload => self.tools.offloaded += 1,
                    ResultSource::Interrupted => self.tools.interrupted += 1,
                    ResultSource::Live => {}
                }
                self.tool_ms = self.tool_ms.saturating_add(*duration_ms);
            }
            Event::CompactionCreated { .. } => self.compactions += 1,
            _ => {}
        }
        let prompt = self.usage.prompt_total();
        self.cache_read_share = if prompt == 0 {
            0.0
        } else {
            self.usage.cache_read as f64 / prompt as f64
        };
    }
}

/// One compaction, as `compaction.created` recorded it: what it did and
/// why (the reason fields are absent from logs written before they were
/// recorded).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionLine {
    /// Where it is in the log.
    pub seq: u64,
    /// `prune` (old read results set aside) or `compact` (older history
    /// summarised).
    pub kind: String,
    /// What set it off: `soft_line`, `hard_line`, `asked`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// The request's share of the window when it was set off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pressure: Option<f64>,
    /// The tokens it aimed the request at.
    pub target_tokens: u64,
    /// Groups summarised and groups kept raw (compact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<(u64, u64)>,
    /// Tokens of the raw tail kept (compact), or reclaimed (prune).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

impl CompactionLine {
    fn of(seq: u64, summary: &Compaction, target_tokens: u64) -> CompactionLine {
        let (groups, tokens) = match summary {
            Compaction::Compact(compact) => (
                compact.groups_covered.zip(compact.groups_kept),
                compact.tail_tokens,
            ),
            Compaction::Prune(prune) => (None, prune.reclaimed_tokens),
            Compaction::Other(_) => (None, None),
        };
        CompactionLine {
            seq,
            kind: summary.kind().to_owned(),
            trigger: summary.trigger().map(str::to_owned),
            pressure: summary.pressure(),
            target_tokens,
            groups,
            tokens,
        }
    }

    fn render(&self) -> String {
        let mut line = format!("{} at seq {}", self.kind, self.seq);
        if let Some(trigger) = &self.trigger {
            line.push_str(&format!(" · {trigger}"));
        }
        if let Some(pressure) = self.pressure.filter(|p| *p > 0.0) {
            line.push_str(&format!(" at {:.1}%", pressure * 100.0));
        }
        line.push_str(&format!(" · target {} tokens", self.target_tokens));
        if let Some((covered, kept)) = self.groups {
            line.push_str(&format!(" · {covered} groups summarised, {kept} kept"));
        }
        match (self.kind.as_str(), self.tokens) {
            ("prune", Some(tokens)) => line.push_str(&format!(" · {tokens} tokens set aside")),
            (_, Some(tokens)) => line.push_str(&format!(" ({tokens} tokens)")),
            _ => {}
        }
        line
    }
}

/// One run's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    /// The run.
    pub run_id: String,
    /// The turn it served.
    pub turn_id: String,
    /// How it ended (absent while unfinished).
    pub outcome: Option<rein_wire::Ending>,
    /// Wall time from start to finish (absent while unfinished).
    pub wall_ms: Option<u64>,
    /// Its totals.
    pub totals: Totals,
}

/// A session's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceReport {
    /// The session.
    pub session_id: String,
    /// Events in the log.
    pub events: u64,
    /// Turns started.
    pub turns: u64,
    /// Totals over the whole session.
    pub totals: Totals,
    /// Each run, in order.
    pub runs: Vec<RunReport>,
    /// Its sub-agents, each on its own (see [`TraceReport::with_agents`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<crate::AgentReport>,
    /// The session's totals with its sub-agents' added (present when it
    /// has sub-agents).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all: Option<Totals>,
    /// Each compaction, in order, with why it ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub compactions: Vec<CompactionLine>,
}

/// Build the report of a session from its whole log.
pub fn report(session_id: &str, events: &[StoredEvent]) -> TraceReport {
    let mut totals = Totals::default();
    let mut runs: Vec<RunReport> = Vec::new();
    let mut starts: Vec<i64> = Vec::new();
    let mut open: Option<usize> = None;
    let mut turns = 0;
    let mut compactions = Vec::new();
    for stored in events {
        let event = &stored.event;
        totals.add(event);
        if let Event::CompactionCreated {
            summary,
            target_tokens,
            ..
        } = event
        {
            compactions.push(CompactionLine::of(stored.seq, summary, *target_tokens));
        }
        match event {
            Event::TurnStarted { .. } => turns += 1,
            Event::RunStarted {
                run_id, turn_id, ..
            } => {
                runs.push(RunReport {
                    run_id: run_id.clone(),
                    turn_id: turn_id.clone(),
                    outcome: None,
                    wall_ms: None,
                    totals: Totals::default(),
                });
                starts.push(stored.at_ms);
                open = Some(runs.len() - 1);
            }
            Event::RunFinished {
                run_id, outcome, ..
            } => {
                if let Some(i) = runs.iter().rposition(|r| &r.run_id == run_id) {
                    runs[i].outcome = Some(*outcome);
                    runs[i].wall_ms = Some(u64::try_from(stored.at_ms - starts[i]).unwrap_or(0));
                    if open == Some(i) {
                        open = None;
                    }
                }
            }
            other => {
                if let Some(i) = open {
                    runs[i].totals.add(other);
                }
            }
        }
    }
    TraceReport {
        session_id: session_id.to_owned(),
        events: events.len() as u64,
        turns,
        totals,
        runs,
        agents: Vec::new(),
        all: None,
        compactions,
    }
}

/// Micro-USD as dollars with six decimals (`$0.012300`).
pub fn usd(micro: u64) -> String {
    format!("${}.{:06}", micro / 1_000_000, micro % 1_000_000)
}

fn verdicts(t: &Totals) -> String {
    if t.cache_verdicts.is_empty() {
        return "none".into();
    }
    t.cache_verdicts
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn cost(t: &Totals) -> String {
    if t.calls_without_cost == 0 {
        usd(t.cost_micro_usd)
    } else if t.model_calls == t.calls_without_cost {
        "unknown".into()
    } else {
        format!(
            "{} + {} calls of unknown cost",
            usd(t.cost_micro_usd),
            t.calls_without_cost
        )
    }
}

pub(crate) fn totals_lines(out: &mut String, indent: &str, t: &Totals) {
    let u = &t.usage;
    let _ = writeln!(
        out,
        "{indent}model calls   {} ({} ms)",
        t.model_calls, t.model_ms
    );
    let _ = writeln!(
        out,
        "{indent}tokens        input {} · output {} · cache read {} · cache write {} · reasoning {}",
        u.input, u.output, u.cache_read, u.cache_write, u.reasoning
    );
    let _ = writeln!(out, "{indent}cost          {}", cost(t));
    if u.reasoning > 0 && t.calls_without_cost < t.model_calls {
        let _ = writeln!(
            out,
            "{indent}  reasoning   {} ({} tokens, billed as output)",
            usd(t.reasoning_cost_micro_usd),
            u.reasoning
        );
    }
    let _ = writeln!(
        out,
        "{indent}cache         {} · read share {:.1}%",
        verdicts(t),
        t.cache_read_share * 100.0
    );
    let tc = &t.tools;
    let _ = writeln!(
        out,
        "{indent}tool calls    {} (ok {} · error {} · cached {} · offloaded {} · interrupted {}; {} ms)",
        tc.total, tc.ok, tc.error, tc.cached, tc.offloaded, tc.interrupted, t.tool_ms
    );
    if t.compactions > 0 {
        let _ = writeln!(out, "{indent}compactions   {}", t.compactions);
    }
}

impl TraceReport {
    /// The report as text for a terminal.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "session {} · {} events · {} turns · {} runs",
            self.session_id,
            self.events,
            self.turns,
            self.runs.len()
        );
        totals_lines(&mut out, "  ", &self.totals);
        for run in &self.runs {
            let _ = writeln!(
                out,
                "run {} (turn {}) · {} · {}",
                run.run_id,
                run.turn_id,
                run.outcome.map_or("unfinished", rein_wire::Ending::as_str),
                run.wall_ms
                    .map_or_else(|| "-".to_owned(), |ms| format!("{ms} ms"))
            );
            totals_lines(&mut out, "  ", &run.totals);
        }
        for compaction in &self.compactions {
            let _ = writeln!(out, "  {}", compaction.render());
        }
        self.render_agents(&mut out);
        out
    }
}
