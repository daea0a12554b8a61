//! The window: what the model sees at each step and keeping it inside the
//! context window — the request built from the log (`request`: the frozen
//! prefix, the projected transcript), the model call (`call`), context
//! pressure (`pressure`: measure, prune, compact, summarise) and the
//! schema a structured answer is asked in. [`Window`] owns their state.
//!
//! Not here: what the answer's calls do (`calls`), the log (`journal`).

mod call;
mod pressure;
mod request;

pub(crate) use request::Transcript;

use crate::agent::Agent;
use crate::conversation::builtins::WithBuiltins;

/// What the model sees, step by step: the transcript the next request is
/// built from, the prompt cache's verdicts, and the schema of a
/// structured answer being asked for.
#[derive(Default)]
pub(crate) struct Window {
    /// What the next request is built from.
    pub(crate) transcript: Transcript,
    /// Verdicts on the prompt cache, call by call.
    pub(crate) monitor: rein_cache::CacheMonitor,
    /// The schema of a structured answer being asked for.
    pub(crate) answer_schema: Option<rein_wire::OutputSchema>,
}

/// What the window reads and never changes: the definition, and the tools
/// on offer (the product's with rein's own).
#[derive(Clone, Copy)]
pub(crate) struct Sees<'a> {
    /// The definition the conversation runs.
    pub(crate) agent: &'a Agent,
    /// The tools on offer.
    pub(crate) tools: &'a WithBuiltins,
}

impl Window {
    /// The context window in tokens: the definition's, else the provider's.
    pub(crate) fn tokens(agent: &Agent) -> u64 {
        agent
            .context
            .window
            .unwrap_or_else(|| u64::from(agent.provider.capabilities().context_window))
    }
}
