//! A hosted program's question to a person, and the answers: what the
//! person is shown before a call runs ([`Question`]), what they said
//! ([`Answer`]), who is asked ([`Person`]), and what goes back to the
//! program ([`Verdict`]).
//!
//! Not here: how a question is recorded and decided from any surface
//! (`asks.rs`), how each program asks (the kinds' adapters).

use futures::future::BoxFuture;

/// What a person is asked before a hosted agent's call runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The rein approval it is recorded as ("" before it is recorded).
    pub approval_id: String,
    /// The agent's call id.
    pub call_id: String,
    /// The tool's kind (`edit`, `execute`, …).
    pub tool: String,
    /// Its one allowed detail (a path), "" for none: the progress line's.
    pub detail: String,
    /// Exactly what runs on a yes: the command line, a write's content, an
    /// edit's text, the URL, every argument (`crate::shown`); the agent's
    /// text, made visible by the surface that shows it.
    pub shows: String,
}

impl Question {
    /// What it shows, as the preview every surface draws (bounded there,
    /// the cut said).
    pub fn preview(&self) -> rein_wire::Preview {
        let subject = if self.detail.is_empty() {
            self.tool.clone()
        } else {
            format!("{} {}", self.tool, self.detail)
        };
        rein_wire::Preview::new(rein_wire::PreviewKind::Text, subject, &self.shows)
    }
}

/// A person's answer: yes or no, and who said it (their surface).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Run it (once).
    pub allow: bool,
    /// The person's surface, recorded as the decider.
    pub surface: rein_approvals::Surface,
}

/// A person's surface.
pub trait Person: Send + Sync {
    /// Ask. `None`: this surface gives no answer. In a recorded run the
    /// question still waits for any other person's surface (`rein
    /// approve`, the page) until the run's limit or its stop; in a run
    /// recorded nowhere, nobody else can reach it and the call is refused.
    fn ask(&self, question: Question) -> BoxFuture<'static, Option<Answer>>;
}

/// What the program is told of its question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A person said yes: the call runs, once.
    Allow,
    /// A person said no, or nobody could be asked.
    Deny,
    /// The run ends (a stop, its time limit) before anyone decided: the
    /// call is refused and the program told its turn is over.
    Cancel,
}
