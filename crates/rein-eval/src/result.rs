//! What one case did and whether it passed, and one result of several
//! tries of it.
//!
//! Not here: running a case (`run.rs`) or filling a result in from its
//! log (`concluded.rs`).

use serde::{Deserialize, Serialize};

/// What one case did and whether it passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// The suite.
    pub suite: String,
    /// The case.
    pub name: String,
    /// The area it covers.
    pub covers: String,
    /// Not run against this model (the case is scripted-only).
    pub skipped: bool,
    /// Every check held.
    pub passed: bool,
    /// The checks that did not hold, in words.
    pub failures: Vec<String>,
    /// How the last turn ended.
    pub outcome: String,
    /// The final answer (or structured answer as JSON).
    pub answer: String,
    /// Model calls, all turns.
    pub steps: u64,
    /// Prompt and output tokens, all calls.
    pub tokens: u64,
    /// Cost in micro-USD (calls with a known price).
    pub cost_micro_usd: u64,
    /// Share of prompt tokens read from the cache.
    pub cache_read_share: f64,
    /// Compactions recorded.
    pub compactions: u64,
    /// How each compaction's summary fared against the log (`kept`,
    /// `rewritten`, `dropped`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary_checks: Vec<String>,
    /// How full its requests were and the cache after each compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressures: Option<crate::pressure::Pressures>,
    /// Approvals requested.
    pub approvals: u64,
    /// Sub-agents started.
    #[serde(default)]
    pub agents: u64,
    /// Tool results.
    pub tool_results: u64,
    /// A failed try's calls in the order they were made, each with how it
    /// ended (`edit_file calc.py: not_read`), so it shows which of rein's
    /// rules fired.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trail: Vec<String>,
    /// Wall time of the case in milliseconds.
    pub ms: u64,
    /// How many times it ran (`--repeat`); the details above are of the
    /// first try that failed, else of the last.
    #[serde(default = "one")]
    pub tries: u64,
    /// How many of those passed.
    #[serde(default = "one")]
    pub passes: u64,
    /// Of several tries, every one that failed, in order (the first is
    /// the one the fields above describe): so each shows which of rein's
    /// rules fired or failed to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_tries: Vec<FailedTry>,
}

/// One failed try of a case run several times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedTry {
    /// Which try (1 is the first).
    pub try_number: u64,
    /// How its last turn ended.
    pub outcome: String,
    /// The checks that did not hold.
    pub failures: Vec<String>,
    /// Its calls, each with how it ended.
    pub trail: Vec<String>,
    /// The start of its answer (at most [`FailedTry::ANSWER_CHARS`]).
    pub answer: String,
}

impl FailedTry {
    /// The most characters of an answer a failed try keeps.
    pub const ANSWER_CHARS: usize = 400;

    fn of(try_number: u64, result: &CaseResult) -> FailedTry {
        FailedTry {
            try_number,
            outcome: result.outcome.clone(),
            failures: result.failures.clone(),
            trail: result.trail.clone(),
            answer: result.answer.chars().take(Self::ANSWER_CHARS).collect(),
        }
    }
}

fn one() -> u64 {
    1
}

impl CaseResult {
    /// One result of several tries of a case: passed only when every try
    /// did, with the count of each.
    pub fn of_tries(tries: Vec<CaseResult>) -> Option<CaseResult> {
        let count = tries.len() as u64;
        let passes = tries.iter().filter(|t| t.passed).count() as u64;
        let failed_tries: Vec<FailedTry> = if count > 1 {
            (1..=count)
                .zip(&tries)
                .filter(|(_, t)| !t.passed)
                .map(|(n, t)| FailedTry::of(n, t))
                .collect()
        } else {
            Vec::new()
        };
        let mut shown = match tries.iter().position(|t| !t.passed) {
            Some(at) => tries.into_iter().nth(at)?,
            None => tries.into_iter().last()?,
        };
        shown.tries = count;
        shown.passes = passes;
        shown.passed = passes == count;
        shown.failed_tries = failed_tries;
        Some(shown)
    }
}
