//! A request the provider refused as longer than its window
//! (`context_window_exceeded`, in any API's words: `rein_gateway::too_long`):
//! the window rein works in is lowered to what the refusal says, and the
//! request is compacted and sent once more. A second refusal ends the turn,
//! naming the setting that says the window.
//!
//! Not here: the compaction itself (`pressure`), the send and its single
//! retry (`call`).

use rein_sessions::Refused;
use rein_wire::AgentError;

use super::Window;

impl Window {
    /// Take in a too-long refusal `err` of a request whose prompt rein
    /// counted at `counted` tokens (`estimated`: by its own estimate): from
    /// now on the conversation works in the window it states — or, where
    /// none is stated, in nine tenths of the refused prompt — never more
    /// than `before`; and where the provider counted the prompt higher than
    /// rein's estimate, that estimate is scaled up by as much.
    pub(super) fn take_refusal(
        &mut self,
        err: &AgentError,
        counted: u64,
        estimated: bool,
        before: u64,
    ) -> Refused {
        let field = |key: &str| {
            err.detail
                .as_ref()
                .and_then(|d| d.get(key))
                .and_then(serde_json::Value::as_u64)
        };
        let stated = rein_gateway::too_long::recognise(None, &err.message).unwrap_or_default();
        let limit = field("limit").or(stated.limit);
        let requested = field("requested").or(stated.requested);
        let window = limit.unwrap_or(counted - counted / 10).min(before).max(1);
        self.refused_window = Some(window);
        if let Some(scale) = requested
            .filter(|_| estimated)
            .map(|r| scale_of(r, counted))
        {
            self.estimate_scale = self.estimate_scale.max(scale);
        }
        Refused {
            message: rein_wire::visible::visible(&err.message)
                .chars()
                .take(500)
                .collect(),
            limit,
            requested,
            window,
            estimate_scale: self.estimate_scale,
        }
    }
}

/// How many of the provider's tokens one of rein's estimated tokens is, by
/// a prompt the provider counted at `requested` and rein at `counted`;
/// never below 1 (rein counting more only leaves more room), never above 4.
fn scale_of(requested: u64, counted: u64) -> f64 {
    (requested as f64 / counted.max(1) as f64).clamp(1.0, 4.0)
}

/// The error a turn ends with after a refusal — a second refusal, or a
/// conversation that does not fit the window it stated: what was said and
/// what to set.
pub(super) fn refused_again(err: AgentError, refused: &Refused) -> AgentError {
    let mut again = AgentError::new(
        err.code.clone(),
        format!(
            "{} — after the provider refused the request as too long and it was compacted to a {}-token window; set `[agent.compaction] window` (or `rein chat --window N`) to the window the server really has",
            err.message, refused.window
        ),
    );
    again.detail = err.detail;
    again.with_field("window", refused.window)
}

#[cfg(test)]
mod tests {
    use super::scale_of;

    #[test]
    fn the_estimate_is_scaled_only_up_and_within_bounds() {
        // llama.cpp counted 8,231 where rein estimated 7,000.
        assert!((scale_of(8231, 7000) - 1.1759).abs() < 1e-3);
        // rein counted more: its estimate stands.
        assert_eq!(scale_of(8000, 9000), 1.0);
        // A number that is not a count of this prompt is bounded.
        assert_eq!(scale_of(1_000_000, 10), 4.0);
        assert_eq!(scale_of(5, 0), 4.0);
    }
}
