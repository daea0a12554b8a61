//! The window: what the model sees at each step and keeping it inside the
//! context window — the request built from the log (`request`: the frozen
//! prefix, the projected transcript), the model call (`call`), context
//! pressure (`pressure`: measure, prune, compact; `summary`: the model's
//! summary, checked and tidied; `overflow`:
//! the last resort, setting aside what one step asked for at once;
//! `refused`: a request the provider refused as too long) and the
//! schema a structured answer is asked in. [`Window`] owns their state.
//!
//! Not here: what the answer's calls do (`calls`), the log (`journal`).

mod call;
mod overflow;
mod pressure;
mod refused;
mod request;
pub(crate) use request::Carried;
mod summary;

pub(crate) use pressure::{Pressed, Trigger, reserve_of};
pub(crate) use request::Transcript;

use rein_tools::ToolBackend;
use rein_wire::AgentError;

use crate::agent::Agent;
use crate::conversation::builtins::WithBuiltins;
use crate::conversation::journal::Journal;
use rein_wire::UiKind;

/// What the model sees, step by step: the transcript the next request is
/// built from, the prompt cache's verdicts, and the schema of a
/// structured answer being asked for.
pub(crate) struct Window {
    /// What the next request is built from.
    transcript: Transcript,
    /// Verdicts on the prompt cache, call by call.
    monitor: rein_cache::CacheMonitor,
    /// The schema of a structured answer being asked for.
    answer_schema: Option<rein_wire::OutputSchema>,
    /// The provider was asked the window it works in (once a conversation).
    window_asked: bool,
    /// The window a too-long refusal left the conversation in (`refused`).
    refused_window: Option<u64>,
    /// How many of the provider's tokens one of rein's estimated tokens
    /// is, where a refusal showed it counts more (1 until then).
    estimate_scale: f64,
    /// Texts the log holds that no request shows (`Standing::retracted`,
    /// asked at each turn's start).
    retracted: Vec<String>,
    /// The graph task this conversation runs, sent with each request
    /// where the provider's API has a place for it.
    task_id: Option<String>,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            transcript: Transcript::default(),
            monitor: rein_cache::CacheMonitor::default(),
            answer_schema: None,
            window_asked: false,
            refused_window: None,
            estimate_scale: 1.0,
            retracted: Vec::new(),
            task_id: None,
        }
    }
}

/// What the window reads and never changes: the definition, the tools on
/// offer (the product's with rein's own), and whether this call is asked
/// for words.
#[derive(Clone, Copy)]
pub(crate) struct Sees<'a> {
    /// The definition the conversation runs.
    pub(crate) agent: &'a Agent,
    /// The tools on offer.
    pub(crate) tools: &'a WithBuiltins,
    /// The call is asked for an answer in words (`tool_choice: none`),
    /// after a loop nudge; the tools stay offered, as part of the prefix.
    pub(crate) words_only: bool,
}

impl Window {
    /// The transcript the next open of this session can go on from.
    pub(crate) fn carried(&mut self) -> Option<request::Carried> {
        self.transcript.carried()
    }

    /// Go on from the transcript an earlier conversation over the same log
    /// carried (see `request::Carried`).
    pub(crate) fn carry(&mut self, carried: request::Carried) {
        self.transcript.carry(carried);
    }

    /// Send `task` as the graph task each request serves.
    pub(crate) fn serve_task(&mut self, task: String) {
        self.task_id = Some(task);
    }

    /// The graph task each request serves, if any.
    pub(crate) fn task(&self) -> Option<&str> {
        self.task_id.as_deref()
    }

    /// Whether the tools shown were fixed already (by a request sent).
    pub(crate) fn tools_frozen(&self) -> bool {
        self.transcript.is_frozen()
    }

    /// The tools changed: the next request shows them afresh.
    pub(crate) fn refreeze(&mut self) {
        self.transcript.refreeze();
    }

    /// Verdicts on the prompt cache, call by call.
    pub(crate) fn monitor(&self) -> &rein_cache::CacheMonitor {
        &self.monitor
    }

    /// Ask for a structured answer of `schema` from the next request on
    /// (`None`: a plain answer).
    pub(crate) fn ask_answer(&mut self, schema: Option<rein_wire::OutputSchema>) {
        self.answer_schema = schema;
    }

    /// The context window in tokens: the definition's, else the provider's,
    /// lowered by a too-long refusal when one came.
    pub(crate) fn tokens(&self, agent: &Agent) -> u64 {
        let said = agent
            .context
            .window
            .unwrap_or_else(|| u64::from(agent.provider.capabilities().context_window));
        self.refused_window.map_or(said, |w| w.min(said))
    }

    /// The first turn asks the provider the window it works in, where the
    /// definition does not say (an OpenAI-compatible server states its own);
    /// what it came to is one line for the person.
    async fn ask_window(&mut self, agent: &Agent) -> Option<String> {
        if std::mem::replace(&mut self.window_asked, true) || agent.context.window.is_some() {
            return None;
        }
        Some(
            match agent.provider.learn_window(&agent.profile.model).await? {
                rein_gateway::window::Asked::Stated(learned) => format!(
                    "the server's window: {} tokens ({})",
                    learned.tokens, learned.from
                ),
                rein_gateway::window::Asked::Unanswered { assumed } => format!(
                    "the server did not say its window: working in {assumed} tokens (set [agent.compaction] window, or --window)"
                ),
            },
        )
    }

    /// A turn is starting (or a fresh process resumes one): take in the
    /// tools' changes and the definition's standing text, the only two
    /// things that change the stable prefix, so it holds for the whole
    /// turn. What changed is told to the person, a line each.
    pub(crate) async fn turn_boundary(
        &mut self,
        agent: &Agent,
        tools: &WithBuiltins,
        journal: &mut Journal,
    ) -> Result<(), AgentError> {
        let mut changes = tools.turn_boundary();
        if !changes.is_empty() {
            self.transcript.refreeze();
        }
        if let Some(window) = self.ask_window(agent).await {
            changes.push(window);
        }
        if let Some(standing) = &agent.standing {
            let text = standing.read().await?;
            if self.transcript.stand(text) {
                changes.push(format!("{} changed", standing.name()));
            }
            let retracted = standing.retracted(journal.log().await?).await;
            if retracted != self.retracted {
                if retracted.len() > self.retracted.len() {
                    changes.push(format!(
                        "{} text(s) of {} forgotten since are left out of what the model is sent",
                        retracted.len(),
                        standing.name()
                    ));
                }
                self.retracted = retracted;
            }
        }
        if !changes.is_empty() {
            journal.emit(UiKind::CatalogChanged { changes });
        }
        Ok(())
    }
}
