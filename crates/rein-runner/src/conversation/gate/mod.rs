//! The call gate: what an assistant message's calls go through — each
//! checked (hooks, arguments, permission), gated (a person's no, the
//! policy, leases, approvals), recorded before it runs, run, and given
//! exactly one result (`calls`, `results`); reads batched in parallel (`reads`), a
//! `delegate` call's sub-agent planned and started (`delegate`).
//! [`Gate`] owns the tools and what the gate keeps while a turn runs:
//! leases, carried revisions, the sub-agents started.
//!
//! Not here: the model call (`window`), asking hooks (`hooked`), the
//! authority check (`authority`).

mod calls;
mod delegate;
mod read_first;
mod reads;
mod results;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use rein_approvals::Leases;
use rein_sessions::Event;
use rein_tools::ResultCache;

use super::builtins::WithBuiltins;
use super::inbox::Inbox;
use super::journal::Journal;
use crate::agent::Agent;
use crate::settings::Spent;

/// The call gate and what it keeps: the tools (the product's with rein's
/// own), the result cache, and — made new when a turn starts or resumes,
/// so nothing outlives the turn it was granted in — the leases a person
/// granted, the revisions this message's own writes moved, and the
/// sub-agents started.
pub(crate) struct Gate {
    /// The product's tools with rein's own beside them.
    tools: Arc<WithBuiltins>,
    /// Read results by tool, arguments and the backend's revision.
    cache: ResultCache,
    /// Leases a person granted in this run ("always" for a tool).
    leases: Leases,
    /// Revision guards moved by this message's own writes: (scope, before) -> after.
    carried: HashMap<(String, String), String>,
    /// What this message's own writes left (a file at its new revision):
    /// seen, for the read-before-write rule (`revisions`).
    left: HashSet<rein_wire::Revision>,
    /// Sub-agents started in this turn.
    delegated: u32,
}

/// What the turn's step loop has used since it last started or resumed:
/// its own steps and calls, and what its sub-agents spent.
#[derive(Debug, Default)]
pub(crate) struct Spend {
    /// Steps, tokens and cost so far.
    spent: Spent,
    /// When the step loop last started or resumed.
    started: Option<Instant>,
}

/// The other parts a message's calls touch: the definition, the hold on
/// the session, the inbox (a loop nudge is said there; a stop cuts a
/// batch of sub-agents short), and the turn's spend (sub-agents draw on
/// it).
pub(crate) struct Around<'a> {
    pub(crate) agent: &'a Agent,
    pub(crate) journal: &'a mut Journal,
    pub(crate) inbox: &'a mut Inbox,
    pub(crate) spend: &'a mut Spend,
    /// The graph task the conversation runs (its sub-agents serve it too).
    pub(crate) task: Option<&'a str>,
}

impl Spend {
    /// A step loop starting now, nothing used yet.
    pub(crate) fn starting() -> Self {
        Spend {
            spent: Spent::default(),
            started: Some(Instant::now()),
        }
    }

    /// Steps, tokens and cost so far.
    pub(crate) fn spent(&self) -> Spent {
        self.spent
    }

    /// When the step loop last started or resumed (now, if it has not).
    pub(crate) fn started(&self) -> Instant {
        self.started.unwrap_or_else(Instant::now)
    }

    /// How long the step loop has run (nothing, if it has not).
    pub(crate) fn elapsed(&self) -> std::time::Duration {
        self.started
            .map_or(std::time::Duration::ZERO, |s| s.elapsed())
    }

    /// One more step taken.
    pub(crate) fn step(&mut self) {
        self.spent.steps += 1;
    }

    /// `more` used (a model call's tokens and cost, a sub-agent's spend).
    pub(crate) fn add(&mut self, more: Spent) {
        self.spent.add(more);
    }
}

impl Gate {
    /// The tools in force (the product's and rein's own).
    pub(crate) fn tools(&self) -> &Arc<WithBuiltins> {
        &self.tools
    }

    /// Put `with` in force in place of the tools, which are returned (a
    /// turn's contract narrows them, and gives them back at its end).
    pub(crate) fn swap_tools(&mut self, with: Arc<WithBuiltins>) -> Arc<WithBuiltins> {
        std::mem::replace(&mut self.tools, with)
    }

    /// A gate in front of `tools`.
    pub(crate) fn new(tools: Arc<WithBuiltins>) -> Self {
        Gate {
            tools,
            cache: ResultCache::default(),
            leases: Leases::default(),
            carried: HashMap::new(),
            left: HashSet::new(),
            delegated: 0,
        }
    }

    /// A turn starts: nothing from before it carries.
    pub(crate) fn new_turn(&mut self) {
        self.leases = Leases::default();
        self.delegated = 0;
        self.answered();
    }

    /// The open turn of `events` goes on (after a decision, or a
    /// restart): leases granted earlier in its run still hold — none from
    /// before it, none from imported history (up to `evidence`); the
    /// sub-agents it started count against its bound (and keep their
    /// paths); revisions carried in this process still hold.
    pub(crate) fn resume_turn(&mut self, events: &crate::Log, evidence: u64) {
        let log: Vec<Event> = events
            .iter()
            .filter(|e| e.seq > evidence)
            .map(|e| e.event.clone())
            .collect();
        self.leases = Leases::of_open_run(&log);
        self.delegated = events.agents_in_open_turn();
    }

    /// The model answered: revisions carried for the message before are
    /// spent.
    pub(crate) fn answered(&mut self) {
        self.carried.clear();
        self.left.clear();
    }
}
