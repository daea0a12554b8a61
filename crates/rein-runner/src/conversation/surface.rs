//! The conversation as a product and a person's surface hold it, besides
//! the turn itself: opening it, watching it, its settings, its report, and
//! where it goes between turns (a branch, an undo recorded). Deciding and
//! stopping are `deciding.rs`, structured answers and contracted turns
//! `contracted.rs`.
//!
//! Not here: the turn and its step loop (`mod.rs`).

use std::sync::Arc;

use rein_gateway::Provider;
use rein_sessions::{Store, StoredEvent};
use rein_tools::ToolBackend;
use rein_wire::{AgentError, PriceTable, Request};
use serde_json::Value;
use tokio::sync::broadcast;

use super::{Conversation, window};
use crate::agent::Agent;
use crate::settings::Profile;
use rein_wire::{UiEvent, UiKind};

impl Conversation {
    /// Open a new session (or continue `existing`), take its lock, and
    /// recover what a crashed process left: every tool call recorded
    /// without a result gets an `interrupted` result (it is never re-run).
    /// The same as [`Agent::open_session`] of `Agent::new(provider,
    /// backend, profile)`; build an [`Agent`] to set more.
    pub async fn open(
        store: Arc<dyn Store>,
        provider: Arc<dyn Provider>,
        backend: Arc<dyn ToolBackend>,
        profile: Profile,
        existing: Option<&str>,
    ) -> Result<Self, AgentError> {
        Agent::new(provider, backend, profile)
            .open_session(store, existing, Value::Null)
            .await
    }

    /// Like [`Conversation::open`], with the application's metadata for a
    /// new session.
    pub async fn open_with(
        store: Arc<dyn Store>,
        provider: Arc<dyn Provider>,
        backend: Arc<dyn ToolBackend>,
        profile: Profile,
        existing: Option<&str>,
        metadata: Value,
    ) -> Result<Self, AgentError> {
        Agent::new(provider, backend, profile)
            .open_session(store, existing, metadata)
            .await
    }

    /// Run as a sub-agent with this path (its events and UI events carry it).
    pub(crate) fn set_agent_path(&mut self, path: &str) {
        self.journal.set_agent(path);
    }

    /// Run as graph task `task`: each request says so where the
    /// provider's API has a place for it.
    pub(crate) fn serve_task(&mut self, task: &str) {
        self.window.serve_task(task.to_owned());
    }

    /// Send UI events to a parent's watchers.
    pub(crate) fn share_ui(&mut self, sender: broadcast::Sender<UiEvent>) {
        self.journal.share_ui(sender);
    }

    /// Tell watchers something (a sub-agent's pause, from its spawner).
    pub(crate) fn announce(&self, kind: UiKind) {
        self.journal.emit(kind);
    }

    /// What the step loop used since it last started or resumed.
    pub(crate) fn spent(&self) -> crate::settings::Spent {
        self.spend.spent()
    }

    /// The store the session lives in (a surface decides a sub-agent's
    /// approval there with [`rein_approvals::decide`]).
    pub fn store(&self) -> Arc<dyn Store> {
        self.journal.store().clone()
    }

    /// Use these prices for cost (default: rein's built-in table, looked up
    /// by the model name the provider reports, else the profile's model; a
    /// model missing from the table has no cost, never a cost of zero).
    /// Better set on the [`Agent`], which every reopen takes.
    pub fn set_prices(&mut self, prices: PriceTable) {
        self.agent.prices = prices;
    }

    /// Mask these secret values (the provider's key, say) in every tool
    /// result before it is recorded or shown to the model (see
    /// [`crate::Guards::secrets`]).
    pub fn mask_secrets(&mut self, secrets: Vec<String>) {
        self.agent.guards.secrets = secrets;
    }

    /// The session's id.
    pub fn session_id(&self) -> &str {
        self.journal.session_id()
    }

    /// Watch what happens.
    pub fn subscribe(&self) -> broadcast::Receiver<UiEvent> {
        self.journal.subscribe()
    }

    /// The request the next step would send (prefix, projected history,
    /// breakpoints), without sending it or recording anything.
    pub async fn next_request(&mut self) -> Result<Request, AgentError> {
        let events = self.journal.log().await?;
        let sees = window::Sees {
            agent: &self.agent,
            tools: self.gate.tools(),
            words_only: false,
        };
        let mut request = self.window.request(sees, &events)?;
        rein_cache::plan(&mut request, &self.agent.provider.capabilities());
        Ok(request)
    }

    /// Compact the history now (a person asked, or a product decided), as
    /// hard compaction would: older complete groups become a derived state
    /// and a model-written summary; the recent tail stays raw.
    pub async fn compact_now(&mut self) -> Result<(), AgentError> {
        let request = self.next_request().await?;
        let tokens = self.window.tokens(&self.agent);
        let bytes = rein_wire::canonical::to_string(&request).map_or(0, |s| s.len() as u64);
        let estimate = rein_context::window::estimate_from_bytes(bytes, request.max_output_tokens);
        let pressed = window::Pressed {
            window: tokens,
            share: estimate as f64 / tokens.max(1) as f64,
            reserve: window::reserve_of(&request),
            trigger: window::Trigger::Asked,
        };
        window::Window::compact(&self.agent, &mut self.journal, pressed).await
    }

    /// The prompt-cache monitor: verdict counts, read share, logged misses.
    pub fn cache_monitor(&self) -> &rein_cache::CacheMonitor {
        self.window.monitor()
    }

    /// A handle to steer from anywhere.
    pub fn steering(&self) -> crate::Steering {
        self.inbox.steering().clone()
    }

    /// The session's whole log.
    pub async fn log_events(&mut self) -> Result<Vec<StoredEvent>, AgentError> {
        Ok(self.journal.log().await?.to_events())
    }

    /// What the session did and cost so far (tokens, cost, tools, per
    /// run), read from its log, with its sub-agents rolled up.
    pub async fn report(&mut self) -> Result<rein_trace::TraceReport, AgentError> {
        crate::report_with_agents(self.journal.store().as_ref(), self.journal.session_id()).await
    }

    /// Make the next turn continue from `turn_id`, an earlier turn of this
    /// session (the turns after it stay in the log, on their own branch).
    /// Refused while a turn is open (`invalid_input`), and for a turn of
    /// another session or none (`turn_not_in_session`, `turn_not_found`).
    pub async fn branch_from(&mut self, turn_id: &str) -> Result<(), AgentError> {
        self.journal.branch_from(turn_id).await
    }

    /// Record that a person undid `operation_id` (the product or the
    /// terminal has reverted its effect), and tell the model in `told` —
    /// it reads that at its next step. Between turns only: a running turn
    /// is steered instead. The undo itself is the product's or the file
    /// tools'.
    pub async fn record_undone(
        &mut self,
        operation_id: &str,
        surface: &rein_approvals::Surface,
        told: &str,
    ) -> Result<(), AgentError> {
        let by = surface.name();
        self.journal.record_undone(operation_id, by, told).await
    }

    /// A person undoes a change this conversation's tools made —
    /// `operation_id`, or the newest one still undoable — through the tool
    /// that made it (the file tools put a file back only when it is still
    /// what the change left: `changed_since` otherwise, and nothing moves),
    /// then it is recorded and the model told. The thing put back (a path).
    /// Only an operation this session's log names as undoable and not yet
    /// undone is accepted (`invalid_input` otherwise). Between turns.
    pub async fn undo(
        &mut self,
        operation_id: Option<&str>,
        surface: &rein_approvals::Surface,
    ) -> Result<String, AgentError> {
        let events = self.log_events().await?;
        let open = rein_sessions::recovery::undoable(&events);
        let op = match operation_id {
            Some(op) if open.contains(&op) => op.to_owned(),
            Some(op) => {
                return Err(AgentError::new(
                    rein_wire::error::codes::INVALID_INPUT,
                    format!("`{op}` is no change of this conversation that can still be undone"),
                ));
            }
            None => open.first().map(|op| (*op).to_owned()).ok_or_else(|| {
                AgentError::new(
                    rein_wire::error::codes::INVALID_INPUT,
                    "nothing to undo in this conversation",
                )
            })?,
        };
        let put_back = self.agent.tools.undo(&op).await.unwrap_or_else(|| {
            Err(AgentError::new(
                rein_wire::error::codes::INVALID_INPUT,
                format!("the change `{op}` was made by a tool this conversation no longer has; undo it where it was made"),
            ))
        })?;
        let told = format!(
            "(The person undid your change to `{put_back}`: it is back as it was before that call. Do not make it again unless they ask.)"
        );
        self.record_undone(&op, surface, &told).await?;
        Ok(put_back)
    }

    /// Give the session's lock back.
    pub async fn close(self) -> Result<(), AgentError> {
        self.journal.release().await
    }

    /// Give the session's lock back, keeping what was read of its log for
    /// the next [`crate::Agent::reopen_kept`] in this process.
    pub async fn close_keeping(mut self) -> Result<super::KeptLog, AgentError> {
        let transcript = self.window.carried();
        let events = self.journal.release_keeping().await?;
        Ok(super::KeptLog { events, transcript })
    }
}
