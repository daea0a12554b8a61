//! [`Run`]: what one run of the step loop keeps between steps — the calls
//! repeated while their results are in the model's view (the loop rule),
//! whether a loop nudge asks the next call for words, the verification
//! checks failed in a row. A run starts afresh with each `turn`; one that
//! goes on with an open turn (`resume`: after an approval, a crash, a
//! restart) counts that turn's calls so far again from the log.
//!
//! Not here: the step loop (`mod.rs`), the loop rule's counting
//! (`rein_wire::loops`), what a nudge says (`gate`).

use rein_sessions::{Event, StoredEvent};
use rein_wire::loops::Repeats;

#[derive(Default)]
pub(super) struct Run {
    /// Calls repeated, counted while their results are in view.
    pub(super) repeats: Repeats,
    /// Verification checks failed in a row.
    pub(super) failed_checks: u32,
    /// The last sequence number looked at for compactions.
    looked: u64,
}

impl Run {
    /// A run going on with the open turn: the calls of that turn that ran
    /// (or were decided) counted again from the log, so a repeat before a
    /// pause counts with the ones after it — a model repeating a failing
    /// command between approved writes is nudged at the third and stopped
    /// at the fifth, as within one run. A nudge already given is not given
    /// again; calls refused before the gate (no class recorded) are not
    /// counted here.
    pub(super) fn resumed(events: &[StoredEvent]) -> Run {
        let mut run = Run::default();
        let start = events
            .iter()
            .rposition(|e| matches!(e.event, Event::TurnStarted { .. }))
            .unwrap_or(0);
        let mut called = std::collections::HashMap::new();
        for stored in &events[start..] {
            match &stored.event {
                Event::ToolCalled {
                    call_id,
                    tool,
                    arguments,
                    permission: Some(_),
                } => {
                    called.insert(call_id.as_str(), (tool.as_str(), arguments));
                }
                Event::ToolResult { call_id, .. } => {
                    if let Some((tool, arguments)) = called.get(call_id.as_str()) {
                        let fp = super::folds::fingerprint(tool, arguments, &stored.event);
                        run.repeats.observe_call(fp, call_id);
                    }
                }
                _ => {}
            }
        }
        run.repeats.take_nudged();
        run.forget_hidden_repeats(events);
        run
    }

    /// Whether the next model call is asked for words: a loop nudge was
    /// earned since the last call (taken once).
    pub(super) fn words_next(&mut self) -> bool {
        self.repeats.take_nudged()
    }

    /// A repeat counts only while the model can still see the result it
    /// repeats: the calls whose results pruning or a compaction (both
    /// `compaction.created`) took out of its view stop counting — reading
    /// a file again is recalling it, not looping — while a call repeated
    /// beside its own earlier results in view still counts (a model going
    /// round in circles while pruning sets aside other reads, as a small
    /// one did after compacting). Budgets still bound the turn. Only the
    /// events since the last look are read for compactions.
    pub(super) fn forget_hidden_repeats(&mut self, events: &[StoredEvent]) {
        let since = events.partition_point(|e| e.seq <= self.looked);
        for stored in &events[since..] {
            let Event::CompactionCreated {
                from_seq,
                to_seq,
                summary,
                ..
            } = &stored.event
            else {
                continue;
            };
            if let rein_sessions::Compaction::Prune(prune) = &**summary {
                let calls = prune.calls.iter().map(|c| c.call_id.as_str());
                self.repeats.forget_calls(calls);
            } else {
                let start = events.partition_point(|e| e.seq < *from_seq);
                let covered = events[start..]
                    .iter()
                    .take_while(|e| e.seq <= *to_seq)
                    .filter_map(|e| match &e.event {
                        Event::ToolResult { call_id, .. } => Some(call_id.as_str()),
                        _ => None,
                    });
                self.repeats.forget_calls(covered);
            }
        }
        self.looked = events.last().map_or(self.looked, |e| e.seq);
    }
}
