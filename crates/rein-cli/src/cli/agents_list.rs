//! `rein agents sessions` and `rein agents list`: the hosted sessions live
//! now, the configured agents and the hosted runs so far; and closing the
//! record of a run whose driver died, before any of them is read.
//!
//! Not here: running an agent (`agents`), the records (`rein-host`).

use std::io::Write;

use rein::host::config::AgentsConfig;
use rein::sessions::Store;
use rein::wire::visible::visible;
use rein::wire::{AgentError, error::codes};

use crate::cli::output::output_error;

/// The hosted agents configured (read through the one config loader).
pub(crate) fn hosted(home: &std::path::Path) -> Result<AgentsConfig, AgentError> {
    let loaded = rein::config::Loaded::load(home, None)?;
    AgentsConfig::parse(&loaded.section_text("agents"))
}

/// Close the record of every hosted run whose driver died (killed
/// outright, it could not), and remove its watch socket.
pub async fn close_dead(home: &std::path::Path, store: &dyn Store) -> Result<(), AgentError> {
    for session in rein::host::record::close_dead(store, 1_000).await? {
        let _ = std::fs::remove_file(rein::host::attach::socket_path(home, &session));
    }
    Ok(())
}

/// `rein agents sessions`: the live hosted sessions, oldest first, as
/// their owners say (a dead run's socket answers nothing and is not shown).
pub async fn sessions(
    home: &std::path::Path,
    as_json: bool,
    out: &mut impl Write,
) -> Result<(), AgentError> {
    let live = rein::host::attach::live_sessions(home).await;
    if as_json {
        for listed in &live {
            let line = serde_json::to_string(listed)
                .map_err(|e| AgentError::new(codes::INTERNAL, e.to_string()))?;
            writeln!(out, "{line}").map_err(output_error)?;
        }
        return Ok(());
    }
    if live.is_empty() {
        return writeln!(
            out,
            "no hosted session is live (start one with `rein agents run`)"
        )
        .map_err(output_error);
    }
    let now = rein::wire::clock::now_ms();
    for listed in live {
        let holder = match &listed.holder {
            rein::host::session::InputHolder::Agent => "the agent".into(),
            rein::host::session::InputHolder::Person { viewer, .. } => visible(viewer),
        };
        // Viewers' names came from other processes: shown visibly.
        writeln!(
            out,
            "{}  {:<10} opened {:<12} {} watching ({})  held by {}{}",
            visible(&listed.session),
            listed.mode.as_str(),
            crate::cli::sessions_cmd::ago(now, listed.opened_at_ms),
            listed.viewers.len(),
            visible(&listed.viewers.join(", ")),
            holder,
            if listed.switchable {
                "  (switchable: Ctrl-] m when attached)"
            } else {
                ""
            }
        )
        .map_err(output_error)?;
    }
    Ok(())
}

/// `rein agents list`.
pub async fn list(
    home: &std::path::Path,
    store: &dyn Store,
    limit: usize,
    out: &mut impl Write,
) -> Result<(), AgentError> {
    close_dead(home, store).await?;
    let config = hosted(home)?;
    for (name, entry) in &config.agents {
        let program = std::path::Path::new(&entry.argv[0])
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        writeln!(
            out,
            "configured  {name:<16} {:<7} {}",
            entry.kind.as_str(),
            rein::wire::visible::visible(&program)
        )
        .map_err(output_error)?;
    }
    let mut shown = 0usize;
    // Hosted runs are sessions like any other; more are read than shown so
    // that chats in between do not hide them.
    for info in store
        .list_sessions(limit.saturating_mul(10).max(100))
        .await?
    {
        let Some(kind) = info
            .metadata
            .get("hosted")
            .and_then(serde_json::Value::as_str)
        else {
            continue;
        };
        let events = rein::sessions::read_all(store, &info.id).await?;
        let report = rein::trace::report(&info.id, &events);
        let outcome = report
            .runs
            .last()
            .and_then(|r| r.outcome)
            .map_or("running", rein::wire::Ending::as_str);
        let cost = if report.totals.calls_without_cost == 0 && report.totals.model_calls > 0 {
            rein::trace::usd(report.totals.cost_micro_usd)
        } else {
            "cost unknown".to_owned()
        };
        writeln!(
            out,
            "{}  {:<7} {:<14} {} tool calls  {}",
            info.id,
            rein::wire::visible::visible(kind),
            outcome,
            report.totals.tools.total,
            cost
        )
        .map_err(output_error)?;
        shown += 1;
        if shown >= limit {
            break;
        }
    }
    if shown == 0 {
        writeln!(out, "no hosted runs yet (start one with `rein agents run`)")
            .map_err(output_error)?;
    }
    Ok(())
}
