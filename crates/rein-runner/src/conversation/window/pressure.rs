//! Context pressure: measuring a request's share of the window, pruning old
//! read results (soft), compacting older history into a derived state and
//! a summary (hard). Both are records in the log; nothing is rewritten.
//!
//! Not here: the thresholds and pure helpers (`rein_context::window`), the
//! summary itself (`summary`).

use rein_sessions::{Compact, CompactPolicy, Compaction, Event, PrunedCall, StoredEvent};
use rein_wire::{AgentError, CountMethod, Request, error::codes};

use super::Window;
use crate::agent::Agent;
use crate::conversation::journal::Journal;

impl Window {
    /// The request's share of the window and how it was counted: the
    /// local estimate, or — near a threshold, where precision matters —
    /// the provider's own count when it has one (falling back to the
    /// estimate if counting fails), else the model's tokenizer where one is
    /// known locally. `scale` corrects the local estimate of the prompt
    /// where the provider was seen to count more (a too-long refusal that
    /// stated its count).
    pub(crate) async fn measure(
        agent: &Agent,
        request: &Request,
        bytes: u64,
        window: u64,
        scale: f64,
    ) -> (f64, CountMethod) {
        let reserved = u64::from(request.max_output_tokens);
        let prompt = rein_wire::estimate_tokens_of(bytes);
        let local = (prompt as f64 * scale.max(1.0)).ceil() as u64 + reserved;
        let near = (local as f64) >= 0.9 * agent.context.soft * window as f64;
        let (tokens, method) = if !near {
            (local, CountMethod::Estimate)
        } else if agent.provider.capabilities().token_counting {
            match agent.provider.count_tokens(request.clone()).await {
                Ok(Some(counted)) => (counted + reserved, CountMethod::Provider),
                Ok(None) => (local, CountMethod::Estimate),
                Err(err) => {
                    tracing::warn!(code = %err.code, "counting tokens failed; using the local estimate");
                    (local, CountMethod::Estimate)
                }
            }
        } else {
            // The model's own tokenizer, where one is known locally.
            let text = rein_wire::canonical::to_string(request).unwrap_or_default();
            match rein_context::window::count_local(&request.model, &text) {
                Some(n) => (n + reserved, CountMethod::Tokenizer),
                None => (local, CountMethod::Estimate),
            }
        };
        (tokens as f64 / window.max(1) as f64, method)
    }

    /// Set old read results aside as artifacts. `true` when a batch was made.
    pub(crate) async fn soft_prune(
        agent: &Agent,
        journal: &mut Journal,
        window: u64,
        share: f64,
    ) -> Result<bool, AgentError> {
        use rein_context::window::{group_starts, prunable};
        let events = journal.log().await?;
        let (visible, edits) = uncovered(&events);
        let groups = group_starts(&visible);
        if groups.len() <= agent.context.keep_groups {
            return Ok(false);
        }
        let tail_start = groups[groups.len() - agent.context.keep_groups];
        let already: std::collections::HashSet<String> = edits.pruned.keys().cloned().collect();
        let candidates = prunable(&visible, tail_start, &already);
        let reclaimed: u64 = candidates.iter().map(|c| c.2).sum();
        if candidates.is_empty() || reclaimed < agent.context.min_reclaim {
            return Ok(false);
        }
        let record = Prune {
            trigger: "soft_line",
            share,
            window,
            target_tokens: (agent.context.soft * window as f64) as u64,
            at_once: false,
        };
        Self::set_aside(journal, &candidates, record).await?;
        Ok(true)
    }

    /// Keep `candidates` (read results: call id, content, tokens, seq) as
    /// artifacts and record them set aside, as `record` says why.
    pub(super) async fn set_aside(
        journal: &mut Journal,
        candidates: &[(String, serde_json::Value, u64, u64)],
        record: Prune,
    ) -> Result<(), AgentError> {
        let mut calls = Vec::new();
        for (call_id, content, _, _) in candidates {
            let artifact = journal
                .store()
                .put_artifact(content.to_string().as_bytes(), "application/json")
                .await?;
            calls.push(PrunedCall {
                call_id: call_id.clone(),
                artifact: artifact.hash,
            });
        }
        let reclaimed: u64 = candidates.iter().map(|c| c.2).sum();
        let from_seq = candidates.iter().map(|c| c.3).min().unwrap_or(0);
        let to_seq = candidates.iter().map(|c| c.3).max().unwrap_or(0);
        tracing::info!(
            results = calls.len(),
            reclaimed,
            trigger = record.trigger,
            "setting read results aside"
        );
        let summary = Compaction::Prune(rein_sessions::Prune {
            calls,
            reclaimed_tokens: Some(reclaimed),
            trigger: Some(record.trigger.to_owned()),
            pressure: Some(record.share),
            window: Some(record.window),
            at_once: record.at_once,
            rest: serde_json::Map::new(),
        });
        journal
            .append(vec![Event::CompactionCreated {
                from_seq,
                to_seq,
                summary: Box::new(summary),
                target_tokens: record.target_tokens,
            }])
            .await?;
        Ok(())
    }

    /// Replace older complete groups by a structured state and a summary the
    /// model writes, keeping a raw recent tail bounded in tokens
    /// (`context::tail_groups`); the record says why, by which policy and
    /// what it kept.
    pub(crate) async fn compact(
        agent: &Agent,
        journal: &mut Journal,
        pressed: Pressed,
    ) -> Result<(), AgentError> {
        use rein_context::window::{group_sizes, group_starts, on_path, state, tail_groups};
        let Pressed {
            window,
            share,
            reserve,
            trigger,
        } = pressed;
        let events = journal.log().await?;
        let path = events.path();
        let visible = on_path(&events, path);
        let groups = group_starts(&visible);
        let path_set: std::collections::HashSet<&str> = path.iter().map(String::as_str).collect();
        let edits = rein_context::project::Edits::collect(&events, &path_set);
        let sizes = group_sizes(&visible, &groups, &|call| edits.pruned.contains_key(call));
        let policy = &agent.context;
        // The tail's share is of the request as it stands (the history
        // already compacted away does not count twice).
        let sent = share * window as f64;
        let budget = ((policy.tail_share * sent) as u64).min(policy.tail_max_tokens);
        let floor = ((policy.target * window as f64) as u64).saturating_sub(reserve);
        let tail = tail_groups(&sizes, budget, floor, policy.keep_groups);
        let tail_tokens: u64 = sizes.iter().rev().take(tail).sum();
        if groups.len() <= tail {
            return Err(AgentError::new(
                codes::CONTEXT_WINDOW_EXCEEDED,
                "the conversation does not fit the context window and its recent part cannot be compacted",
            )
            .with_field("groups", groups.len())
            .with_field("window", window));
        }
        let cut = groups[groups.len() - tail];
        let from_seq = visible.first().map_or(0, |e| e.seq);
        let to_seq = visible
            .iter()
            .map(|e| e.seq)
            .filter(|s| *s < cut)
            .max()
            .unwrap_or(from_seq);
        let covered: Vec<&StoredEvent> = visible
            .iter()
            .copied()
            .filter(|e| e.seq <= to_seq)
            .collect();
        let pending: Vec<String> = journal
            .control()
            .await?
            .pending
            .into_iter()
            .map(|p| p.approval_id)
            .collect();
        let record = rein_context::claims::Record::of(&covered);
        let state = state(&covered, &pending, &record);
        let before: Vec<StoredEvent> = events.iter().filter(|e| e.seq <= to_seq).cloned().collect();
        let transcript = super::summary::transcript(&before, path, window);
        let (written, checked) = super::summary::checked(agent, &transcript, &record, window).await;
        let text = rein_context::state_text::compaction_text(&state, &written);
        tracing::info!(
            from_seq,
            to_seq,
            groups = groups.len() - tail,
            "compacting older history"
        );
        journal
            .append(vec![Event::CompactionCreated {
                from_seq,
                to_seq,
                summary: Box::new(Compaction::Compact(Compact {
                    state: rein_sessions::Recorded::Typed(Box::new(state)),
                    text,
                    groups_covered: Some((groups.len() - tail) as u64),
                    groups_kept: Some(tail as u64),
                    tail_tokens: Some(tail_tokens),
                    summary_check: Some(rein_sessions::Recorded::Typed(Box::new(checked))),
                    trigger: Some(trigger.as_str().to_owned()),
                    pressure: Some(share),
                    window: Some(window),
                    policy: Some(CompactPolicy {
                        soft: policy.soft,
                        hard: policy.hard,
                        target: policy.target,
                        tail_share: policy.tail_share,
                        tail_max_tokens: policy.tail_max_tokens,
                        keep_groups: policy.keep_groups,
                    }),
                    rest: serde_json::Map::new(),
                })),
                target_tokens: (agent.context.target * window as f64) as u64,
            }])
            .await?;
        Ok(())
    }
}

/// The events on the current path that no compaction covers, and the
/// compactions that apply to it.
pub(super) fn uncovered(events: &crate::Log) -> (Vec<&StoredEvent>, rein_context::project::Edits) {
    let path = events.path();
    let path_set: std::collections::HashSet<&str> = path.iter().map(String::as_str).collect();
    let edits = rein_context::project::Edits::collect(events, &path_set);
    let visible = rein_context::window::on_path(events, path)
        .into_iter()
        .filter(|e| edits.covering(e.seq).is_none())
        .collect();
    (visible, edits)
}

/// Why and under what pressure read results are set aside.
pub(super) struct Prune {
    /// What set it off (`soft_line`, `over_target`).
    pub(super) trigger: &'static str,
    /// The request's share of the window before.
    pub(super) share: f64,
    /// The window, in tokens.
    pub(super) window: u64,
    /// The size aimed at, in tokens.
    pub(super) target_tokens: u64,
    /// Set aside from the newest results, asked for in one step with more
    /// than the window holds (the model is told to read them again, fewer
    /// at a time).
    pub(super) at_once: bool,
}

/// Why and under what pressure a compaction runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pressed {
    /// The window, in tokens.
    pub(crate) window: u64,
    /// The request's share of it before (0 when a person asked).
    pub(crate) share: f64,
    /// Tokens the request holds besides its history: the prefix and the
    /// output kept free.
    pub(crate) reserve: u64,
    /// What set it off.
    pub(crate) trigger: Trigger,
}

/// What set a compaction off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// The request was over the hard line.
    HardLine,
    /// A person or a product asked (`compact_now`).
    Asked,
    /// The provider refused the request as longer than its window.
    Refused,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Trigger::HardLine => "hard_line",
            Trigger::Asked => "asked",
            Trigger::Refused => "refused",
        }
    }
}

/// Tokens `request` holds besides its history: its prefix (system and
/// tools) by the local estimate and the output it keeps free.
pub(crate) fn reserve_of(request: &Request) -> u64 {
    rein_cache::estimate_tokens(&request.system, &request.tools)
        + u64::from(request.max_output_tokens)
}
