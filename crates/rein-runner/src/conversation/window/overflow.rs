//! The last resort before a turn ends `context_window_exceeded`: when a
//! request is still over the target after compaction — one step asked for
//! more at once than the window holds (a small model reading twenty files
//! in one message), which no compaction can cut — read results are set
//! aside newest first, only as many as the target needs — never the newest
//! step's first, so a lone result too large for the window still ends the
//! turn. The model sees which, and makes those calls again, fewer at a
//! time. A record in the log like any prune; nothing is rewritten.
//!
//! Not here: soft pruning of older results, compaction (`pressure`).

use rein_wire::AgentError;

use super::Window;
use super::pressure::{Prune, uncovered};
use crate::conversation::journal::Journal;

/// About what a set-aside call still costs, in tokens: its tool and
/// arguments named in its step's note (`project::set_aside_note`); the call
/// and its result leave the model's view. An estimate short of the truth
/// only means another round.
const NOTE_TOKENS: u64 = 20;

impl Window {
    /// Set aside read results on the path, newest first, until about `over`
    /// tokens are reclaimed. `true` when any were.
    pub(super) async fn set_aside_to_fit(
        journal: &mut Journal,
        window: u64,
        share: f64,
        target: f64,
        over: u64,
    ) -> Result<bool, AgentError> {
        let events = journal.log().await?;
        let (visible, edits) = uncovered(&events);
        let already = edits.pruned.keys().cloned().collect();
        let mut candidates = rein_context::window::prunable(&visible, u64::MAX, &already);
        // The newest step's first result stays: the model sees at least one
        // of what it asked for, and a lone result too large for the window
        // ends the turn as before (paged results are `read_result`'s job).
        let newest = rein_context::window::group_starts(&visible)
            .last()
            .copied()
            .unwrap_or(0);
        if let Some(first) = candidates
            .iter()
            .filter(|c| c.3 >= newest)
            .map(|c| c.3)
            .min()
        {
            candidates.retain(|c| c.3 != first);
        }
        candidates.sort_by_key(|c| std::cmp::Reverse(c.3));
        let mut reclaimed = 0u64;
        let chosen: Vec<_> = candidates
            .into_iter()
            .take_while(|c| {
                let more = reclaimed < over;
                reclaimed += c.2.saturating_sub(NOTE_TOKENS);
                more
            })
            .collect();
        if chosen.is_empty() {
            return Ok(false);
        }
        let record = Prune {
            trigger: "over_target",
            share,
            window,
            target_tokens: (target * window as f64) as u64,
            at_once: true,
        };
        Self::set_aside(journal, &chosen, record).await?;
        Ok(true)
    }
}
