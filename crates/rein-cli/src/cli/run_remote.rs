//! `rein run GRAPH.toml --detach` and `rein run --watch ID`: a graph handed
//! to the workers of a PostgreSQL store (`rein worker`) and followed from
//! any machine.
//!
//! `--detach` checks the graph, records it (the record `rein run
//! --resume` reads) and offers it to the workers, then prints its id and
//! ends. `--watch` prints the graph's record as it grows — each task's
//! start and end, its outputs, the graph's end — from the store's live
//! feed, and exits as `rein run` would: 0 when every task succeeded.
//!
//! Not here: the workers (`worker`), running a graph in place
//! (`run_graph`).

use std::io::Write;
use std::sync::Arc;

use rein::runner::GraphRecord;
use rein::sessions::{Event, PgStore, Store};
use rein::wire::{AgentError, GraphOutcome, error::codes};
use tokio::sync::broadcast::error::RecvError;

use super::output::output_error;

/// Record the graph in `file` and offer it to the workers; its id on `out`.
pub async fn detach(
    file: &std::path::Path,
    pg: Arc<PgStore>,
    out: &mut impl Write,
) -> Result<(), AgentError> {
    let spec = super::run_graph::read_graph(file)?;
    // Checked before anything is recorded.
    spec.clone().check()?;
    let store: Arc<dyn Store> = pg.clone();
    let record = GraphRecord::create(store, &spec).await?;
    let id = record.session_id().to_owned();
    record.close().await?;
    pg.queue().submit_graph(&id).await?;
    writeln!(out, "{id}").map_err(output_error)?;
    Ok(())
}

/// Follow the graph recorded in `session` until it ends.
pub async fn watch(
    session: &str,
    store: Arc<dyn Store>,
    out: &mut impl Write,
) -> Result<(), AgentError> {
    // Subscribed before reading back: nothing falls between the two.
    let mut live = store.subscribe(session);
    let mut seen = 0;
    for event in rein::sessions::read_all(store.as_ref(), session).await? {
        seen = event.seq;
        if let Some(outcome) = show(&event.event, out)? {
            return super::run_graph::ending(outcome, session);
        }
    }
    loop {
        let event = match live.recv().await {
            Ok(event) if event.seq <= seen => continue,
            Ok(event) => event,
            Err(RecvError::Lagged(_)) => {
                // Read what was missed back from the log.
                let missed = store.read(session, seen + 1, 10_000).await?;
                let Some(last) = missed.last() else { continue };
                seen = last.seq;
                for event in &missed {
                    if let Some(outcome) = show(&event.event, out)? {
                        return super::run_graph::ending(outcome, session);
                    }
                }
                continue;
            }
            Err(RecvError::Closed) => {
                return Err(AgentError::new(
                    codes::STORE_UNAVAILABLE,
                    "the store's feed ended",
                ));
            }
        };
        seen = event.seq;
        if let Some(outcome) = show(&event.event, out)? {
            return super::run_graph::ending(outcome, session);
        }
    }
}

/// Print one event of a graph's record; the graph's end when it is one.
fn show(event: &Event, out: &mut impl Write) -> Result<Option<GraphOutcome>, AgentError> {
    let line = match event {
        Event::TaskStarted { task, attempt } => format!("{task}: started (attempt {attempt})"),
        Event::TaskFinished {
            task,
            state,
            outputs,
            detail,
            ..
        } => {
            let outputs = serde_json::to_string(outputs).unwrap_or_default();
            // Why it failed, as the problem says it: its code and words.
            let why = detail.as_ref().map_or_else(String::new, |d| {
                let said = [d.get("code"), d.get("detail").or_else(|| d.get("title"))]
                    .into_iter()
                    .flatten()
                    .filter_map(serde_json::Value::as_str)
                    .collect::<Vec<_>>()
                    .join(": ");
                let said = if said.is_empty() { d.to_string() } else { said };
                format!(" — {}", rein::wire::visible::one_line(&said, 600))
            });
            format!(
                "{task}: {} {}{why}",
                state.as_str(),
                rein::wire::visible::visible(&outputs)
            )
        }
        Event::GraphFinished { outcome } => {
            writeln!(out, "graph: {}", outcome.as_str()).map_err(output_error)?;
            return Ok(Some(*outcome));
        }
        _ => return Ok(None),
    };
    writeln!(out, "{line}").map_err(output_error)?;
    Ok(None)
}
