//! [`Conversation`]: one session, its turns, and the step loop.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use rein_approvals::{Answer, Leases, PermissionClass, Policy, Said, Surface, Verdict, gate};
use rein_gateway::Provider;
use rein_sessions::recovery::dangling;
use rein_sessions::{
    Event, Lease, NewEvent, ResultSource, Store, StoredEvent, ToolStatus, history,
};
use rein_tools::{Bounds, Outcome, ResultCache, ToolBackend, ToolContext, bound};
use rein_wire::{
    AgentError, AssembledMessage, AssembledToolCall, Assembler, PriceTable, Request, StreamEvent,
    SystemBlock, error::codes,
};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::outcome::{TurnOutcome, UiEvent, UiKind};
use crate::project::project;
use crate::steering::Steering;

/// The agent path of the conversation itself.
const MAIN: &str = "main";
/// UI events a slow subscriber may fall behind by before it misses some.
const UI_BUFFER: usize = 1024;
/// How long the conversation's hold on its session lasts between renewals.
const LEASE_TTL: Duration = Duration::from_secs(120);

/// The product's words: its prompt, names and wording.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The product's name for its assistant.
    pub name: String,
    /// System prompt blocks, in order.
    pub system: Vec<String>,
    /// The model to call.
    pub model: String,
    /// The output limit per call.
    pub max_output_tokens: u32,
    /// How the model gets the tools.
    pub tools: ToolLoading,
    /// What rein itself says to the model, in the product's words.
    pub wording: Wording,
}

/// The sentences rein says to the model on the product's behalf. `{tool}`,
/// `{decision}`, `{command}` and `{report}` are filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wording {
    /// A call a person did not approve (denied, let expire, stopped).
    pub not_approved: String,
    /// The nudge when the model repeats a call without progress.
    pub loop_nudge: String,
    /// A verification check that failed.
    pub check_failed: String,
    /// The header of the deferred tool catalog.
    pub tool_catalog: String,
    /// The header of the skills list.
    pub skills: String,
}

impl Default for Wording {
    fn default() -> Self {
        Wording {
            not_approved: "The person {decision} the call to `{tool}`. It was not run. Do not try to reach the same result another way; ask the person what they want instead.".into(),
            loop_nudge: "(rein) You have made the same call with the same arguments and got the same result three times. Try a different approach or answer with what you have.".into(),
            check_failed: "(rein) The check `{command}` failed, so the task is not done yet:\n{report}\nFix the cause, then answer again.".into(),
            tool_catalog: "Tools: call load_tool with a name to get its arguments, then call_tool with the name and arguments.".into(),
            skills: "Skills: read one with read_skill when it applies to the task.".into(),
        }
    }
}

impl Wording {
    fn not_approved(&self, tool: &str, decision: &str) -> String {
        self.not_approved
            .replace("{tool}", tool)
            .replace("{decision}", decision)
    }
}

/// How tools reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolLoading {
    /// Every tool's full definition in every request.
    Native,
    /// The stable prefix lists the catalog (name and purpose, sorted); the
    /// model fetches a schema with `load_tool` and calls with `call_tool`.
    Deferred,
    /// Native up to this many tools, deferred beyond.
    Auto {
        /// The largest catalog given natively.
        max_native: usize,
    },
}

impl Default for ToolLoading {
    fn default() -> Self {
        ToolLoading::Auto { max_native: 16 }
    }
}

/// Limits on one turn. Every one is finite by default except cost and
/// tokens, which have no sensible universal default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budgets {
    /// Model calls per turn.
    pub max_steps: u32,
    /// Tokens (prompt + output) per turn.
    pub max_tokens: Option<u64>,
    /// Cost per turn in micro-USD.
    pub max_cost_micro_usd: Option<u64>,
    /// Wall time per turn.
    pub max_wall: Duration,
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            max_steps: 100,
            max_tokens: None,
            max_cost_micro_usd: None,
            max_wall: Duration::from_secs(30 * 60),
        }
    }
}

/// A command that must exit 0 for a turn to count as a success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// The program and its arguments (run directly, not through a shell).
    pub command: Vec<String>,
    /// Where to run it.
    pub cwd: Option<std::path::PathBuf>,
    /// How many failed checks the model gets to fix before the turn fails.
    pub attempts: u32,
    /// How long one check may run.
    pub timeout: Duration,
}

impl Verification {
    /// Run `command` (at most 2 fixes, 5 minutes per check).
    pub fn new(command: &[&str]) -> Self {
        Verification {
            command: command.iter().map(|s| (*s).to_owned()).collect(),
            cwd: None,
            attempts: 2,
            timeout: Duration::from_secs(300),
        }
    }
}

/// The same call repeated this many times with the same result earns a nudge…
const LOOP_NUDGE: u32 = 3;
/// …and this many ends the turn.
const LOOP_STOP: u32 = 5;

/// One session, driven turn by turn.
pub struct Conversation {
    store: Arc<dyn Store>,
    provider: Arc<dyn Provider>,
    backend: Arc<dyn ToolBackend>,
    profile: Profile,
    /// The conversation's policy.
    pub policy: Policy,
    /// The per-turn budgets.
    pub budgets: Budgets,
    /// Bounds on what a tool result shows the model.
    pub bounds: Bounds,
    /// How the context window is kept (soft pruning, hard compaction).
    pub context: crate::context::ContextPolicy,
    /// A check each turn must pass to count as finished.
    pub verification: Option<Verification>,
    /// Whether the model may hand tasks to sub-agents (`delegate`); set
    /// before the first turn (the tool is part of the frozen prefix).
    pub delegation: Option<crate::subagent::Delegation>,
    /// Sub-agents started in this turn.
    delegated: u32,
    /// This conversation's agent path (`main`, or `main/agent-N`).
    agent: String,
    /// How long a pending approval waits for a person before it expires
    /// (checked when the turn resumes).
    pub approval_ttl: Duration,
    prices: PriceTable,
    session_id: String,
    holder: String,
    lease: Lease,
    cache: ResultCache,
    leases: Leases,
    /// Verdicts on the prompt cache, call by call.
    monitor: rein_cache::CacheMonitor,
    /// Model calls made by this conversation (the first is cold).
    model_calls: u64,
    /// The stable prefix (system blocks and tools), frozen at the first
    /// request so it stays byte-identical for the whole conversation.
    frozen: Option<(Vec<SystemBlock>, Vec<rein_wire::ToolSpec>)>,
    /// The transcript so far, extended step by step.
    projector: Option<crate::project::Projector>,
    /// JSON size and digest of each message of the transcript but the last
    /// (the projector only ever extends the last one), so a step measures
    /// only what is new; cleared whenever the projector is rebuilt.
    sealed: Vec<(u64, blake3::Hash)>,
    /// The log as far as this conversation has read it.
    known: std::sync::Mutex<Arc<Vec<StoredEvent>>>,
    /// This conversation's own appends not yet added to `known`. While the
    /// lease is held nobody else can append, so when `in_sync` is set these
    /// are all that is new and the next read of the log needs no query.
    written: std::sync::Mutex<Vec<StoredEvent>>,
    /// Whether `known` and `written` together hold the whole log.
    in_sync: std::sync::atomic::AtomicBool,
    /// The schema of a structured answer being asked for.
    answer_schema: Option<rein_wire::OutputSchema>,
    /// Revision guards moved by this message's own writes: (scope, before) -> after.
    carried: HashMap<(String, String), String>,
    /// Made at the first subscription: its buffer is the largest part of
    /// an idle conversation, and most conversations are not watched.
    ui: std::sync::OnceLock<broadcast::Sender<UiEvent>>,
    steering: Steering,
}

fn tool_error_content(code: &str, message: &str) -> Value {
    json!({"error": {"code": code, "message": message}})
}

impl Conversation {
    /// Open a new session (or continue `existing`), take its lock, and
    /// recover what a crashed process left: every tool call recorded
    /// without a result gets an `interrupted` result (it is never re-run).
    pub async fn open(
        store: Arc<dyn Store>,
        provider: Arc<dyn Provider>,
        backend: Arc<dyn ToolBackend>,
        profile: Profile,
        existing: Option<&str>,
    ) -> Result<Self, AgentError> {
        let metadata = json!({"assistant": profile.name, "model": profile.model});
        Conversation::open_with(store, provider, backend, profile, existing, metadata).await
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
        let info = match existing {
            Some(id) => store.session(id).await?,
            None => store.create_session(metadata).await?,
        };
        let holder = format!("rein runner (pid {})", std::process::id());
        let lease = store.acquire(&info.id, &holder, LEASE_TTL).await?;
        let mut conversation = Conversation {
            store,
            provider,
            backend,
            profile,
            policy: Policy::default(),
            budgets: Budgets::default(),
            bounds: Bounds::default(),
            verification: None,
            delegation: None,
            delegated: 0,
            agent: MAIN.into(),
            context: crate::context::ContextPolicy::default(),
            approval_ttl: Duration::from_secs(24 * 60 * 60),
            prices: PriceTable::builtin(),
            session_id: info.id,
            holder,
            lease,
            cache: ResultCache::default(),
            leases: Leases::default(),
            carried: HashMap::new(),
            answer_schema: None,
            known: std::sync::Mutex::new(Arc::new(Vec::new())),
            written: std::sync::Mutex::new(Vec::new()),
            in_sync: std::sync::atomic::AtomicBool::new(false),
            projector: None,
            sealed: Vec::new(),
            monitor: rein_cache::CacheMonitor::new(),
            model_calls: 0,
            frozen: None,
            ui: std::sync::OnceLock::new(),
            steering: Steering::default(),
        };
        conversation.recover().await?;
        Ok(conversation)
    }

    /// Run as a sub-agent with this path (its events and UI events carry it).
    pub(crate) fn set_agent_path(&mut self, path: &str) {
        self.agent = path.to_owned();
    }

    /// The session's id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Watch what happens.
    pub fn subscribe(&self) -> broadcast::Receiver<UiEvent> {
        self.ui
            .get_or_init(|| broadcast::channel(UI_BUFFER).0)
            .subscribe()
    }

    /// The request the next step would send (prefix, projected history,
    /// breakpoints), without sending it or recording anything.
    pub async fn next_request(&mut self) -> Result<Request, AgentError> {
        let events = self.log().await?;
        let mut request = self.request(&events)?;
        rein_cache::plan(&mut request, &self.provider.capabilities());
        Ok(request)
    }

    /// Compact the history now (a person asked, or a product decided), as
    /// hard compaction would: older complete groups become a derived state
    /// and a model-written summary; the recent tail stays raw.
    pub async fn compact_now(&mut self) -> Result<(), AgentError> {
        let window = self
            .context
            .window
            .unwrap_or_else(|| u64::from(self.provider.capabilities().context_window));
        self.compact(window).await
    }

    /// The prompt-cache monitor: verdict counts, read share, logged misses.
    pub fn cache_monitor(&self) -> &rein_cache::CacheMonitor {
        &self.monitor
    }

    /// A handle to steer from anywhere.
    pub fn steering(&self) -> Steering {
        self.steering.clone()
    }

    /// Give the session's lock back.
    pub async fn close(self) -> Result<(), AgentError> {
        self.store.release(&self.lease).await
    }

    fn emit(&self, kind: UiKind) {
        if let Some(ui) = self.ui.get() {
            let _ = ui.send(UiEvent {
                agent: self.agent.clone(),
                kind,
            });
        }
    }

    async fn append(&mut self, events: Vec<Event>) -> Result<Vec<StoredEvent>, AgentError> {
        // Renew the lease once half of it has run (not on every append: that
        // would double the writes); take it again if it lapsed meanwhile.
        let half = i64::try_from(LEASE_TTL.as_millis() / 2).unwrap_or(i64::MAX);
        if now_ms() > self.lease.expires_ms.saturating_sub(half) {
            match self.store.renew(&self.lease, LEASE_TTL).await {
                Ok(lease) => self.lease = lease,
                Err(err) if err.code == codes::LEASE_LOST => {
                    self.lease = self
                        .store
                        .acquire(&self.session_id, &self.holder, LEASE_TTL)
                        .await?;
                    // Someone may have written while the lease had lapsed.
                    self.in_sync
                        .store(false, std::sync::atomic::Ordering::Relaxed);
                }
                Err(err) => return Err(err),
            }
        }
        let batch = events
            .into_iter()
            .map(|event| NewEvent {
                agent_path: self.agent.clone(),
                event,
            })
            .collect();
        let stored = match self.store.append(&self.lease, batch).await {
            Ok(stored) => stored,
            Err(err) => {
                self.in_sync
                    .store(false, std::sync::atomic::Ordering::Relaxed);
                return Err(err);
            }
        };
        // What was just written extends the known log at the next read, so
        // it is not read back from the store.
        let known_len = self.known.lock().unwrap_or_else(|p| p.into_inner()).len() as u64;
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        let next = known_len + written.len() as u64 + 1;
        let contiguous = stored.first().is_some_and(|first| first.seq == next);
        if contiguous && self.in_sync.load(std::sync::atomic::Ordering::Relaxed) {
            written.extend(stored.iter().cloned());
        } else {
            written.clear();
            self.in_sync
                .store(false, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(stored)
    }

    /// The session's whole log.
    pub async fn log_events(&self) -> Result<Vec<StoredEvent>, AgentError> {
        Ok(self.log().await?.as_ref().clone())
    }

    /// The log, read incrementally: only events after the last one known
    /// are fetched from the store.
    async fn log(&self) -> Result<Arc<Vec<StoredEvent>>, AgentError> {
        if self.in_sync.load(std::sync::atomic::Ordering::Relaxed) {
            let fresh =
                std::mem::take(&mut *self.written.lock().unwrap_or_else(|p| p.into_inner()));
            let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            if !fresh.is_empty() {
                Arc::make_mut(&mut known).extend(fresh);
            }
            return Ok(Arc::clone(&known));
        }
        self.written
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        let known_len = self.known.lock().unwrap_or_else(|p| p.into_inner()).len() as u64;
        let mut fresh: Vec<StoredEvent> = Vec::new();
        loop {
            let page = self
                .store
                .read(&self.session_id, known_len + fresh.len() as u64 + 1, 10_000)
                .await?;
            if page.is_empty() {
                break;
            }
            fresh.extend(page);
        }
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if !fresh.is_empty() {
            // Cheap when no earlier snapshot is still held (the usual case).
            let events = Arc::make_mut(&mut known);
            for event in fresh {
                if event.seq == events.len() as u64 + 1 {
                    events.push(event);
                }
            }
        }
        self.in_sync
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(Arc::clone(&known))
    }

    async fn recover(&mut self) -> Result<(), AgentError> {
        let events = self.log().await?;
        let open = dangling(&events);
        let mut results = Vec::new();
        for call in open.tool_calls {
            tracing::warn!(call = %call.call_id, tool = %call.tool, "recording an interrupted tool call");
            results.push(Event::ToolResult {
                call_id: call.call_id,
                status: ToolStatus::Error,
                source: ResultSource::Interrupted,
                content: tool_error_content(
                    "interrupted",
                    "The process stopped while this call ran. It was not run again; check its effect before repeating it.",
                ),
                artifact: None,
                operation_id: None,
                undo: false,
                duration_ms: 0,
            });
        }
        if !results.is_empty() {
            self.append(results).await?;
        }
        Ok(())
    }

    /// Decide a pending approval from a person's surface in this process
    /// (the terminal's y/N). Other processes use [`rein_approvals::decide`].
    pub async fn decide(
        &mut self,
        approval_id: &str,
        answer: Answer,
        surface: &Surface,
    ) -> Result<(), AgentError> {
        let control = self.store.control(&self.session_id).await?;
        if !control.pending.iter().any(|p| p.approval_id == approval_id) {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                format!("approval `{approval_id}` is not pending"),
            ));
        }
        let (decision, lease) = match answer {
            Answer::Approve(scope) => ("approved", Some(scope.as_str().to_owned())),
            Answer::Deny => ("denied", None),
        };
        self.append(vec![Event::ApprovalDecided {
            approval_id: approval_id.to_owned(),
            decision: decision.into(),
            by: surface.name().to_owned(),
            lease,
        }])
        .await?;
        self.emit(UiKind::ApprovalDecided {
            approval_id: approval_id.to_owned(),
            decision: decision.into(),
        });
        Ok(())
    }

    /// Stop the open turn from a person's surface: every pending approval
    /// is decided `stopped` (its call gets an error result telling the model
    /// not to work around it) and the turn ends as `interrupted`.
    pub async fn stop(&mut self, surface: &Surface) -> Result<TurnOutcome, AgentError> {
        let control = self.store.control(&self.session_id).await?;
        let events = self.log().await?;
        let mut stopping = vec![Event::Stopped {
            by: surface.name().to_owned(),
        }];
        for pending in &control.pending {
            stopping.push(Event::ApprovalDecided {
                approval_id: pending.approval_id.clone(),
                decision: "stopped".into(),
                by: surface.name().to_owned(),
                lease: None,
            });
            let arguments = events
                .iter()
                .find_map(|e| match &e.event {
                    Event::ApprovalRequested {
                        approval_id,
                        arguments,
                        ..
                    } if *approval_id == pending.approval_id => Some(arguments.clone()),
                    _ => None,
                })
                .unwrap_or(Value::Null);
            stopping.extend(refused(
                pending.call_id.clone(),
                pending.tool.clone(),
                arguments,
                &pending.permission,
                "not_approved",
                &self.profile.wording.not_approved(&pending.tool, "stopped"),
            ));
        }
        // Calls of the same message that never ran get a result too, so the
        // history stays well formed.
        if let Some((calls, _)) = last_calls(&events) {
            for (call_id, tool, arguments) in calls {
                if control.pending.iter().any(|p| p.call_id == call_id) {
                    continue;
                }
                stopping.extend(refused(
                    call_id,
                    tool,
                    arguments,
                    "none",
                    "stopped",
                    "The turn was stopped before this call ran.",
                ));
            }
        }
        self.append(stopping).await?;
        self.finish(TurnOutcome::Interrupted).await
    }

    /// Start a turn with what the person said, and run it.
    pub async fn turn(&mut self, text: &str) -> Result<TurnOutcome, AgentError> {
        let info = self.store.session(&self.session_id).await?;
        let turn_id = rein_wire::ids::new_id();
        let run_id = rein_wire::ids::new_id();
        self.leases = Leases::default();
        self.delegated = 0;
        self.append(vec![
            Event::TurnStarted { turn_id: turn_id.clone(), parent: info.head_turn, prompt: text.to_owned() },
            Event::RunStarted {
                run_id,
                turn_id,
                budgets: json!({"max_steps": self.budgets.max_steps, "max_tokens": self.budgets.max_tokens,
                                "max_cost_micro_usd": self.budgets.max_cost_micro_usd, "max_wall_s": self.budgets.max_wall.as_secs()}),
                profile: json!({"name": self.profile.name, "model": self.profile.model}),
            },
        ])
        .await?;
        self.run().await
    }

    /// Ask for a structured answer: the reply must be JSON following `T`'s
    /// schema. The provider's native structured output is used where it has
    /// one; otherwise the schema is given in the prompt. An answer that does
    /// not validate gets one repair turn; then `structured_answer_invalid`.
    pub async fn ask<T: schemars::JsonSchema + serde::de::DeserializeOwned>(
        &mut self,
        text: &str,
    ) -> Result<T, AgentError> {
        let value = self
            .ask_with_schema(text, rein_tools::schema_for::<T>())
            .await?;
        serde_json::from_value::<T>(value).map_err(|e| {
            AgentError::new(
                codes::STRUCTURED_ANSWER_INVALID,
                format!("the answer does not fit: {e}"),
            )
        })
    }

    /// [`Conversation::ask`] with the schema given as JSON (a product or an
    /// eval that has no Rust type for it): the validated answer.
    pub async fn ask_with_schema(
        &mut self,
        text: &str,
        schema: Value,
    ) -> Result<Value, AgentError> {
        let validator = jsonschema::validator_for(&schema).map_err(|e| {
            AgentError::new(
                codes::INVALID_INPUT,
                format!("the answer schema does not compile: {e}"),
            )
        })?;
        let native = self.provider.capabilities().structured_output;
        self.answer_schema = native.then(|| rein_wire::OutputSchema {
            name: "answer".into(),
            schema: schema.clone(),
        });
        let mut prompt = text.to_owned();
        if !native {
            prompt.push_str(&format!("\n\nAnswer with only a JSON value that follows this JSON schema, and nothing else:\n{schema}"));
        }
        let result = async {
            let mut problem = String::new();
            for attempt in 0..2 {
                let outcome = if attempt == 0 {
                    self.turn(&prompt).await?
                } else {
                    self.turn(&format!(
                        "Your answer did not follow the schema: {problem}. Answer again with only the JSON value."
                    ))
                    .await?
                };
                let reply = match outcome {
                    TurnOutcome::Finished { reply } => reply,
                    TurnOutcome::Error { error } => return Err(error),
                    other => {
                        return Err(AgentError::new(
                            codes::STRUCTURED_ANSWER_INVALID,
                            format!("the turn ended without an answer ({})", other.name()),
                        ));
                    }
                };
                match parse_answer(&reply) {
                    Ok(value) => {
                        let errors: Vec<String> = validator.iter_errors(&value).take(5).map(|e| e.to_string()).collect();
                        if errors.is_empty() {
                            return Ok(value);
                        }
                        problem = errors.join("; ");
                    }
                    Err(e) => problem = e,
                }
            }
            Err(AgentError::new(
                codes::STRUCTURED_ANSWER_INVALID,
                format!("the answer did not follow the schema after one repair: {problem}"),
            ))
        }
        .await;
        self.answer_schema = None;
        result
    }

    /// Continue the open turn: after an approval was decided, or after a
    /// crash. Without an open turn there is nothing to do (`invalid_input`).
    pub async fn resume(&mut self) -> Result<TurnOutcome, AgentError> {
        let events = self.log().await?;
        let open = dangling(&events);
        if open.turns.is_empty() {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "there is no unfinished turn to resume",
            ));
        }
        // Leases granted earlier in this run still hold; none from before it.
        let log: Vec<Event> = events.iter().map(|e| e.event.clone()).collect();
        self.leases = Leases::of_open_run(&log);
        self.run().await
    }

    /// The step loop of the open turn.
    async fn run(&mut self) -> Result<TurnOutcome, AgentError> {
        let started = Instant::now();
        let mut steps: u32 = 0;
        let mut tokens: u64 = 0;
        let mut cost: u64 = 0;
        let mut repeats: HashMap<String, u32> = HashMap::new();
        let mut failed_checks: u32 = 0;
        loop {
            let events = self.log().await?;
            // Tool calls of the last message that still need running.
            if let Some((message_calls, _)) = last_calls(&events) {
                match self.run_calls(&events, message_calls, &mut repeats).await? {
                    Some(outcome) => return self.finish(outcome).await,
                    None => continue,
                }
            }
            // The step boundary: interrupts, what was said, budgets.
            if self.steering.take_interrupt() {
                self.append(vec![Event::SteerInterrupted { reason: None }])
                    .await?;
                return self.finish(TurnOutcome::Interrupted).await;
            }
            let said = self.steering.take_said();
            if !said.is_empty() {
                self.append(
                    said.into_iter()
                        .map(|text| Event::SteerSaid { text })
                        .collect(),
                )
                .await?;
                continue;
            }
            if let Some(which) = self.over_budget(steps, tokens, cost, started) {
                return self
                    .finish(TurnOutcome::Budget {
                        which: which.into(),
                    })
                    .await;
            }
            steps += 1;
            let message = match self.call_model(&events).await {
                Ok(message) => message,
                Err(err) => {
                    self.emit(UiKind::Error {
                        code: err.code.to_string(),
                        message: err.message.clone(),
                    });
                    return self.finish(TurnOutcome::Error { error: err }).await;
                }
            };
            if let Some(usage) = &message.usage {
                tokens = tokens.saturating_add(usage.prompt_total() + usage.output);
                let model = message.model.as_deref().unwrap_or(&self.profile.model);
                cost = cost.saturating_add(self.prices.cost_micro_usd(model, usage).unwrap_or(0));
            }
            if message.tool_calls.is_empty() {
                if let Some(check) = self.verification.clone() {
                    match run_check(&check).await {
                        Ok(()) => {}
                        Err(report) => {
                            failed_checks += 1;
                            if failed_checks > check.attempts {
                                let error = AgentError::new(
                                    codes::VERIFICATION_FAILED,
                                    format!(
                                        "`{}` still fails after {} fixes",
                                        check.command.join(" "),
                                        check.attempts
                                    ),
                                )
                                .with_field("output", report.clone());
                                return self.finish(TurnOutcome::Error { error }).await;
                            }
                            self.append(vec![Event::SteerSaid {
                                text: self
                                    .profile
                                    .wording
                                    .check_failed
                                    .replace("{command}", &check.command.join(" "))
                                    .replace("{report}", &report),
                            }])
                            .await?;
                            continue;
                        }
                    }
                }
                return self
                    .finish(TurnOutcome::Finished {
                        reply: message.text(),
                    })
                    .await;
            }
        }
    }

    fn over_budget(
        &self,
        steps: u32,
        tokens: u64,
        cost: u64,
        started: Instant,
    ) -> Option<&'static str> {
        if steps >= self.budgets.max_steps {
            return Some("steps");
        }
        if self.budgets.max_tokens.is_some_and(|max| tokens >= max) {
            return Some("tokens");
        }
        if self
            .budgets
            .max_cost_micro_usd
            .is_some_and(|max| cost >= max)
        {
            return Some("cost");
        }
        if started.elapsed() >= self.budgets.max_wall {
            return Some("wall_time");
        }
        None
    }

    async fn finish(&mut self, outcome: TurnOutcome) -> Result<TurnOutcome, AgentError> {
        if let TurnOutcome::AwaitingApproval { .. } = outcome {
            // The turn stays open; the log and control record say why.
            self.emit(UiKind::Paused);
            return Ok(outcome);
        }
        let events = self.log().await?;
        let open = dangling(&events);
        let reply = match &outcome {
            TurnOutcome::Finished { reply } => Some(reply.clone()),
            _ => None,
        };
        let mut closing = Vec::new();
        for turn_id in &open.turns {
            closing.push(Event::TurnFinished {
                turn_id: turn_id.clone(),
                outcome: outcome.name().into(),
                reply: reply.clone(),
            });
        }
        for run_id in open.runs {
            let totals = match &outcome {
                TurnOutcome::Error { error } => json!({"error": error.code}),
                TurnOutcome::Budget { which } => json!({"budget": which}),
                _ => json!({}),
            };
            closing.push(Event::RunFinished {
                run_id,
                outcome: outcome.name().into(),
                totals,
            });
        }
        // A failed turn stays in the log, but the next turn grows from the
        // turn before it, so the failure is not part of later context.
        if let TurnOutcome::Error { .. } = outcome
            && let Some(failed) = open.turns.last()
        {
            let parent = events.iter().find_map(|e| match &e.event {
                Event::TurnStarted {
                    turn_id, parent, ..
                } if turn_id == failed => Some(parent.clone()),
                _ => None,
            });
            closing.push(Event::BranchCreated {
                from_turn: parent.flatten(),
            });
        }
        self.append(closing).await?;
        self.emit(UiKind::TurnFinished {
            outcome: outcome.name().into(),
        });
        Ok(outcome)
    }

    fn request(&mut self, events: &[StoredEvent]) -> Result<Request, AgentError> {
        let turns_path = current_path(events);
        let mut request = Request::new(
            self.profile.model.clone(),
            self.messages(events, &turns_path),
        );
        let (system, tools) = match self.frozen.clone() {
            Some(frozen) => {
                // The stability guard (debug builds): the prefix must not
                // drift within a conversation (no timestamps, sorted maps
                // and tools).
                if cfg!(debug_assertions) {
                    let fresh = self.prefix();
                    debug_assert!(
                        frozen == fresh,
                        "the stable prefix changed within a conversation: {} -> {}",
                        rein_cache::fingerprint(&frozen.0, &frozen.1),
                        rein_cache::fingerprint(&fresh.0, &fresh.1)
                    );
                }
                frozen
            }
            None => {
                let fresh = self.prefix();
                self.frozen = Some(fresh.clone());
                fresh
            }
        };
        request.system = system;
        request.tools = tools;
        request.max_output_tokens = self.profile.max_output_tokens;
        if let Some(schema) = &self.answer_schema {
            request.output_schema = Some(schema.clone());
        }
        Ok(request)
    }

    /// The transcript for `path`, fed only what is new since the last step
    /// when the path merely grew and nothing was compacted; rebuilt otherwise.
    fn messages(&mut self, events: &[StoredEvent], path: &[String]) -> Vec<rein_wire::Message> {
        let mut projector = match self.projector.take() {
            Some(mut p) if p.covers(events, path) => {
                p.extend_path(path);
                p
            }
            _ => {
                self.sealed.clear();
                crate::project::Projector::new(events, path)
            }
        };
        let start = events.partition_point(|e| e.seq <= projector.seen);
        for stored in &events[start..] {
            projector.feed(stored);
        }
        debug_assert_eq!(
            projector.messages,
            project(events, path),
            "the incremental projection drifted from the full one"
        );
        let messages = projector.messages.clone();
        self.projector = Some(projector);
        messages
    }

    /// The request's JSON size and a digest of it, computed from the sealed
    /// messages' cached sizes and digests plus what is new: the last
    /// message and the rest of the request. The size is exactly that of the
    /// request's JSON; the digest is blake3 over the parts' digests.
    fn size_and_digest(&mut self, request: &mut Request) -> (u64, String) {
        let n = request.messages.len();
        self.sealed.truncate(n.saturating_sub(1));
        while self.sealed.len() + 1 < n {
            let message = &request.messages[self.sealed.len()];
            self.sealed.push(crate::context::size_and_hash(message));
        }
        let mut hasher = blake3::Hasher::new();
        let mut bytes: u64 = 0;
        for (size, hash) in &self.sealed {
            bytes += size;
            hasher.update(hash.as_bytes());
        }
        if let Some(last) = request.messages.last() {
            let (size, hash) = crate::context::size_and_hash(last);
            bytes += size;
            hasher.update(hash.as_bytes());
        }
        // `"messages":[]` in the rest becomes `[m1,m2,...]`: add the commas.
        bytes += n.saturating_sub(1) as u64;
        let messages = std::mem::take(&mut request.messages);
        let (size, hash) = crate::context::size_and_hash(&*request);
        request.messages = messages;
        bytes += size;
        hasher.update(hash.as_bytes());
        debug_assert_eq!(
            Some(bytes),
            serde_json::to_vec(&*request).ok().map(|b| b.len() as u64),
            "the incremental request size drifted from the request's JSON"
        );
        (bytes, hasher.finalize().to_hex().to_string())
    }

    /// The stable prefix as the profile and backend give it now.
    fn prefix(&self) -> (Vec<SystemBlock>, Vec<rein_wire::ToolSpec>) {
        let mut system: Vec<SystemBlock> = self
            .profile
            .system
            .iter()
            .map(|text| SystemBlock { text: text.clone() })
            .collect();
        let mut tools = Vec::new();
        let catalog = self.backend.catalog(&self.policy);
        if self.deferred(catalog.len()) {
            // The catalog is sorted by name and has no volatile parts.
            let mut lines = format!("{}\n", self.profile.wording.tool_catalog);
            for tool in &catalog {
                lines.push_str(&format!("- {}: {}\n", tool.name, tool.purpose));
            }
            system.push(SystemBlock { text: lines });
            tools = vec![load_tool_spec(), call_tool_spec()];
        } else {
            tools.extend(
                catalog
                    .into_iter()
                    .filter_map(|t| self.backend.definition(&t.name)),
            );
        }
        tools.push(read_result_spec());
        if self.delegation.is_some() {
            tools.push(crate::subagent::delegate_spec());
        }
        let mut skills = self.backend.skills();
        if !skills.is_empty() {
            skills.sort_by(|a, b| a.name.cmp(&b.name));
            let mut lines = format!("{}\n", self.profile.wording.skills);
            for skill in &skills {
                lines.push_str(&format!("- {}: {}\n", skill.name, skill.purpose));
            }
            system.push(SystemBlock { text: lines });
            tools.push(read_skill_spec());
        }
        (system, tools)
    }

    /// A backend's `tool_not_found` lists only the backend's tools; the
    /// model was also offered rein's own, so they are named too.
    fn naming_builtins(&self, mut err: AgentError) -> AgentError {
        if err.code.as_str() != rein_tools::NOT_FOUND {
            return err;
        }
        let mut own = vec![READ_RESULT];
        if self.deferred(self.backend.catalog(&self.policy).len()) {
            own.extend([LOAD_TOOL, CALL_TOOL]);
        }
        if self.delegation.is_some() {
            own.push(crate::subagent::DELEGATE);
        }
        if !self.backend.skills().is_empty() {
            own.push(READ_SKILL);
        }
        err.message = format!("{}; rein's own: {}", err.message, own.join(", "));
        err
    }

    fn deferred(&self, tools: usize) -> bool {
        match self.profile.tools {
            ToolLoading::Native => false,
            ToolLoading::Deferred => true,
            ToolLoading::Auto { max_native } => tools > max_native,
        }
    }

    async fn call_model(&mut self, events: &[StoredEvent]) -> Result<AssembledMessage, AgentError> {
        let mut request = self.request(events)?;
        let window = self
            .context
            .window
            .unwrap_or_else(|| u64::from(self.provider.capabilities().context_window));
        // One pass over the request gives its size (for the estimate) and its
        // digest (for the record); it is redone only when the request changes.
        let (mut bytes, mut digest) = self.size_and_digest(&mut request);
        let mut share = self.measure(&request, bytes, window).await;
        if share > self.context.soft && self.soft_prune(window).await? {
            request = self.request(&self.log().await?)?;
            (bytes, digest) = self.size_and_digest(&mut request);
            share = self.measure(&request, bytes, window).await;
        }
        if share > self.context.hard {
            self.compact(window).await?;
            request = self.request(&self.log().await?)?;
            (bytes, digest) = self.size_and_digest(&mut request);
            if self.measure(&request, bytes, window).await > self.context.hard {
                return Err(AgentError::new(
                    codes::CONTEXT_WINDOW_EXCEEDED,
                    "the conversation does not fit the context window even after compaction",
                )
                .with_field(
                    "estimated_tokens",
                    crate::context::estimate_from_bytes(bytes, request.max_output_tokens),
                )
                .with_field("window", window));
            }
        }
        let call_id = rein_wire::ids::new_id();
        let fingerprint = rein_cache::fingerprint(&request.system, &request.tools);
        let prefix_tokens = rein_cache::estimate_tokens(&request.system, &request.tools);
        // The digest covers what the model sees before breakpoints are
        // planned (they follow from it) and without the routing metadata.
        rein_cache::plan(&mut request, &self.provider.capabilities());
        request.metadata.session_id = Some(self.session_id.clone());
        self.append(vec![Event::ModelRequested {
            call_id: call_id.clone(),
            prefix_fingerprint: fingerprint.clone(),
            request_digest: digest,
            estimated_tokens: (bytes * 2).div_ceil(7),
        }])
        .await?;
        let started = Instant::now();
        let mut stream = self.provider.stream(request);
        let mut assembler = Assembler::new();
        while let Some(item) = stream.next().await {
            let event = item?;
            match &event {
                StreamEvent::TextDelta { text } => {
                    self.emit(UiKind::TextDelta { text: text.clone() });
                }
                StreamEvent::TextReplaced { streamed, text } => {
                    self.emit(UiKind::TextReplaced {
                        streamed: streamed.clone(),
                        text: text.clone(),
                    });
                }
                _ => {}
            }
            assembler.push(&event);
        }
        let message = assembler.finish();
        if let Some(err) = &message.error {
            return Err(err.clone());
        }
        self.carried.clear();
        let model = message
            .model
            .clone()
            .unwrap_or_else(|| self.profile.model.clone());
        let verdict = self.monitor.observe(
            &fingerprint,
            prefix_tokens,
            &message.usage.unwrap_or_default(),
            self.model_calls > 0,
        );
        self.model_calls += 1;
        let cost = message
            .usage
            .as_ref()
            .and_then(|u| self.prices.cost_micro_usd(&model, u));
        if let Some(usage) = message.usage {
            self.emit(UiKind::Usage {
                usage,
                cost_micro_usd: cost,
            });
        }
        self.append(vec![Event::ModelCompleted {
            call_id,
            model,
            message: message.to_message(),
            usage: message.usage,
            cost_micro_usd: cost,
            stop_reason: message.stop_reason.clone(),
            cache_verdict: Some(verdict.as_str().to_owned()),
            latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }])
        .await?;
        // Malformed calls are answered at once with an error the model can read.
        let broken: Vec<&AssembledToolCall> = message
            .tool_calls
            .iter()
            .filter(|c| c.error.is_some())
            .collect();
        if !broken.is_empty() {
            let mut results = Vec::new();
            for call in broken {
                let err = call
                    .error
                    .as_ref()
                    .map(|e| (e.code.to_string(), e.message.clone()))
                    .unwrap_or_default();
                results.extend(refused(
                    call.id.clone(),
                    call.name.clone(),
                    Value::Null,
                    "none",
                    &err.0,
                    &err.1,
                ));
            }
            self.append(results).await?;
        }
        Ok(message)
    }

    /// The request's share of the window: the local estimate, or — near a
    /// threshold, where precision matters — the provider's own count when it
    /// has one (falling back to the estimate if counting fails), else the
    /// model's tokenizer where one is known locally.
    async fn measure(&self, request: &Request, bytes: u64, window: u64) -> f64 {
        let local = crate::context::estimate_from_bytes(bytes, request.max_output_tokens);
        let near = (local as f64) >= 0.9 * self.context.soft * window as f64;
        let reserved = u64::from(request.max_output_tokens);
        let tokens = if !near {
            local
        } else if self.provider.capabilities().token_counting {
            match self.provider.count_tokens(request.clone()).await {
                Ok(Some(counted)) => counted + reserved,
                Ok(None) => local,
                Err(err) => {
                    tracing::warn!(code = %err.code, "counting tokens failed; using the local estimate");
                    local
                }
            }
        } else {
            // The model's own tokenizer, where one is known locally.
            let text = rein_wire::canonical::to_string(request).unwrap_or_default();
            crate::context::count_local(&request.model, &text).map_or(local, |n| n + reserved)
        };
        tokens as f64 / window.max(1) as f64
    }

    /// Set old read results aside as artifacts. `true` when a batch was made.
    async fn soft_prune(&mut self, window: u64) -> Result<bool, AgentError> {
        use crate::context::{group_starts, on_path, prunable};
        let events = self.log().await?;
        let path = current_path(&events);
        let path_set: std::collections::HashSet<&str> = path.iter().map(String::as_str).collect();
        let edits = crate::project::Edits::collect(&events, &path_set);
        let visible: Vec<&StoredEvent> = on_path(&events, &path)
            .into_iter()
            .filter(|e| edits.covering(e.seq).is_none())
            .collect();
        let groups = group_starts(&visible);
        if groups.len() <= self.context.keep_groups {
            return Ok(false);
        }
        let tail_start = groups[groups.len() - self.context.keep_groups];
        let already: std::collections::HashSet<String> = edits.pruned.keys().cloned().collect();
        let candidates = prunable(&visible, tail_start, &already);
        let reclaimed: u64 = candidates.iter().map(|c| c.2).sum();
        if candidates.is_empty() || reclaimed < self.context.min_reclaim {
            return Ok(false);
        }
        let mut calls = Vec::new();
        for (call_id, content, _, _) in &candidates {
            let artifact = self
                .store
                .put_artifact(content.to_string().as_bytes(), "application/json")
                .await?;
            calls.push(json!({"call_id": call_id, "artifact": artifact.hash}));
        }
        let from_seq = candidates.iter().map(|c| c.3).min().unwrap_or(0);
        let to_seq = candidates.iter().map(|c| c.3).max().unwrap_or(0);
        tracing::info!(
            results = calls.len(),
            reclaimed,
            "soft pruning old read results"
        );
        self.append(vec![Event::CompactionCreated {
            from_seq,
            to_seq,
            summary: json!({"kind": "prune", "calls": calls, "reclaimed_tokens": reclaimed}),
            target_tokens: (self.context.soft * window as f64) as u64,
        }])
        .await?;
        Ok(true)
    }

    /// Replace older complete groups by a structured state and a summary the
    /// model writes, keeping a raw recent tail.
    async fn compact(&mut self, window: u64) -> Result<(), AgentError> {
        use crate::context::{group_starts, on_path, state};
        let events = self.log().await?;
        let path = current_path(&events);
        let visible = on_path(&events, &path);
        let groups = group_starts(&visible);
        let by_share = (groups.len() as f64 * self.context.tail_share).ceil() as usize;
        let tail = by_share
            .min(self.context.tail_cap)
            .max(self.context.keep_groups);
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
        let pending: Vec<String> = self
            .store
            .control(&self.session_id)
            .await?
            .pending
            .into_iter()
            .map(|p| p.approval_id)
            .collect();
        let state = state(&covered, &pending);
        let before: Vec<StoredEvent> = events.iter().filter(|e| e.seq <= to_seq).cloned().collect();
        let transcript = serde_json::to_string(&project(&before, &path)).unwrap_or_default();
        let written = self.summarise(&transcript).await;
        let text = format!(
            "[Earlier conversation, summarised to save room]\nState: {state}\nSummary: {written}"
        );
        tracing::info!(
            from_seq,
            to_seq,
            groups = groups.len() - tail,
            "compacting older history"
        );
        self.append(vec![Event::CompactionCreated {
            from_seq,
            to_seq,
            summary: json!({
                "kind": "compact",
                "state": state,
                "text": text,
                "groups_covered": groups.len() - tail,
                "groups_kept": tail,
            }),
            target_tokens: (self.context.target * window as f64) as u64,
        }])
        .await?;
        Ok(())
    }

    /// The model's summary of a transcript ("" when the call fails: the
    /// structured state still stands).
    async fn summarise(&self, transcript: &str) -> String {
        let shown: String = transcript.chars().take(60_000).collect();
        let mut request = Request::new(
            self.profile.model.clone(),
            vec![rein_wire::Message::user(shown)],
        );
        request.system = vec![SystemBlock {
            text: SUMMARY_INSTRUCTIONS.into(),
        }];
        request.max_output_tokens = 1024;
        let mut stream = self.provider.stream(request);
        let mut assembler = Assembler::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => assembler.push(&event),
                Err(err) => {
                    tracing::warn!(code = %err.code, "the summary call failed; compacting with the state alone");
                    return String::new();
                }
            }
        }
        assembler.finish().text()
    }

    /// Run the calls of the last assistant message that have no result
    /// yet. `Some(outcome)` ends (or pauses) the turn.
    async fn run_calls(
        &mut self,
        events: &[StoredEvent],
        calls: Vec<(String, String, Value)>,
        repeats: &mut HashMap<String, u32>,
    ) -> Result<Option<TurnOutcome>, AgentError> {
        let mut reads: Vec<(String, String, Value)> = Vec::new();
        for (call_id, tool, args) in calls {
            // `call_tool` is the deferred form of a direct call.
            let (tool, args) = if tool == CALL_TOOL {
                match (
                    args.get("name").and_then(Value::as_str),
                    args.get("arguments"),
                ) {
                    (Some(name), Some(inner)) => (name.to_owned(), inner.clone()),
                    (Some(name), None) => (name.to_owned(), json!({})),
                    _ => (tool, args),
                }
            } else {
                (tool, args)
            };
            let checked = builtin_permission(&tool, &args)
                .unwrap_or_else(|| self.backend.permission(&tool, &args))
                .map_err(|err| self.naming_builtins(err));
            let class = match checked {
                Ok(class) => class,
                Err(err) => {
                    self.append(
                        refused(
                            call_id.clone(),
                            tool.clone(),
                            args.clone(),
                            "none",
                            err.code.as_str(),
                            &err.message,
                        )
                        .into(),
                    )
                    .await?;
                    self.emit(UiKind::ToolResult {
                        call_id,
                        ok: false,
                        source: "live".into(),
                        undo: None,
                    });
                    continue;
                }
            };
            if class.is_read() {
                reads.push((call_id, tool, args));
                continue;
            }
            // A write: first the reads before it, then it, in order.
            self.run_reads(std::mem::take(&mut reads), repeats).await?;
            // What the person said about this call comes first: their "no"
            // wins over any lease.
            let state = if class.needs_approval() {
                approval_state(events, &call_id)
            } else {
                ApprovalState::None
            };
            let said = match state {
                ApprovalState::Approved { .. } => Said::Yes,
                ApprovalState::Refused { .. } => Said::No,
                ApprovalState::Pending { .. } | ApprovalState::None => Said::Nothing,
            };
            let elevated = match gate(class, &tool, &self.policy, &self.leases, said) {
                Verdict::Run { elevated } => {
                    if let ApprovalState::Approved { scope } = state {
                        self.leases.grant(&tool, scope);
                    }
                    elevated
                }
                Verdict::Denied => {
                    let decision = match &state {
                        ApprovalState::Refused { decision } => decision.as_str(),
                        _ => "denied",
                    };
                    self.append(
                        refused(
                            call_id.clone(),
                            tool.clone(),
                            args.clone(),
                            class.as_str(),
                            "not_approved",
                            &self.profile.wording.not_approved(&tool, decision),
                        )
                        .into(),
                    )
                    .await?;
                    self.emit(UiKind::ToolResult {
                        call_id,
                        ok: false,
                        source: "live".into(),
                        undo: None,
                    });
                    continue;
                }
                Verdict::Refuse { reason } => {
                    self.append(
                        refused(
                            call_id.clone(),
                            tool.clone(),
                            args.clone(),
                            class.as_str(),
                            "policy_refused",
                            &reason,
                        )
                        .into(),
                    )
                    .await?;
                    continue;
                }
                Verdict::Ask => match state {
                    ApprovalState::Pending { approval_id } => {
                        let asked_ms = events.iter().find_map(|e| match &e.event {
                            Event::ApprovalRequested { approval_id: a, .. }
                                if *a == approval_id =>
                            {
                                Some(e.at_ms)
                            }
                            _ => None,
                        });
                        let age_ms = now_ms().saturating_sub(asked_ms.unwrap_or(i64::MAX));
                        if age_ms > i64::try_from(self.approval_ttl.as_millis()).unwrap_or(i64::MAX)
                        {
                            // Nobody decided in time: the call is refused.
                            self.append(
                                vec![Event::ApprovalDecided {
                                    approval_id,
                                    decision: "expired".into(),
                                    by: "rein".into(),
                                    lease: None,
                                }]
                                .into_iter()
                                .chain(refused(
                                    call_id.clone(),
                                    tool.clone(),
                                    args.clone(),
                                    class.as_str(),
                                    "not_approved",
                                    &self.profile.wording.not_approved(&tool, "let expire"),
                                ))
                                .collect(),
                            )
                            .await?;
                            continue;
                        }
                        return Ok(Some(TurnOutcome::AwaitingApproval { approval_id, tool }));
                    }
                    // Nothing asked yet (an approved or refused call never
                    // reaches here: the gate runs the one, the other was
                    // refused above).
                    _ => {
                        let approval_id = rein_wire::ids::new_id();
                        self.append(vec![Event::ApprovalRequested {
                            approval_id: approval_id.clone(),
                            call_id: call_id.clone(),
                            tool: tool.clone(),
                            arguments: args.clone(),
                            permission: class.as_str().into(),
                        }])
                        .await?;
                        self.emit(UiKind::ApprovalRequested {
                            approval_id: approval_id.clone(),
                            tool: tool.clone(),
                            arguments: args,
                            permission: class.as_str().into(),
                        });
                        return Ok(Some(TurnOutcome::AwaitingApproval { approval_id, tool }));
                    }
                },
            };
            let result = self.run_one(call_id, tool, args, class, elevated).await?;
            if let Some(outcome) = self.note_repeat(repeats, &result).await? {
                return Ok(Some(outcome));
            }
        }
        self.run_reads(reads, repeats).await
    }

    /// Run reads in parallel: one `tool.called` batch, the invocations at
    /// once, then the results in call order.
    async fn run_reads(
        &mut self,
        reads: Vec<(String, String, Value)>,
        repeats: &mut HashMap<String, u32>,
    ) -> Result<Option<TurnOutcome>, AgentError> {
        if reads.is_empty() {
            return Ok(None);
        }
        let revision = self.backend.revision();
        let mut called = Vec::new();
        // Each delegate call gets its sub-agent's path, or none past the bound.
        let mut agents: Vec<Option<String>> = Vec::with_capacity(reads.len());
        for (call_id, tool, args) in &reads {
            called.push(Event::ToolCalled {
                call_id: call_id.clone(),
                tool: tool.clone(),
                arguments: args.clone(),
                permission: PermissionClass::Read.as_str().into(),
            });
            let agent = match (&self.delegation, tool == crate::subagent::DELEGATE) {
                (Some(delegation), true) if self.delegated < delegation.max_per_turn => {
                    self.delegated += 1;
                    let path = format!("{}/agent-{}", self.agent, self.delegated);
                    called.push(Event::AgentStarted {
                        agent_path: path.clone(),
                        task: crate::subagent::task_of(args)
                            .unwrap_or_default()
                            .to_owned(),
                    });
                    Some(path)
                }
                _ => None,
            };
            agents.push(agent);
            self.emit(UiKind::ToolCall {
                call_id: call_id.clone(),
                tool: tool.clone(),
                arguments: args.clone(),
            });
        }
        self.append(called).await?;
        let backend = self.backend.clone();
        let policy = self.policy.clone();
        let cached: Vec<Option<Value>> = reads
            .iter()
            .map(|(_, tool, args)| {
                if backend.cacheable(tool) {
                    self.cache.get(tool, args, &revision).cloned()
                } else {
                    None
                }
            })
            .collect();
        let runs = reads
            .iter()
            .zip(&cached)
            .zip(&agents)
            .map(|(((call_id, tool, args), hit), agent)| {
                let backend = backend.clone();
                let store = self.store.clone();
                let sub = match (agent, &self.delegation) {
                    (Some(path), Some(delegation)) => Some((
                        crate::subagent::Parent {
                            store: self.store.clone(),
                            provider: self.provider.clone(),
                            backend: self.backend.clone(),
                            profile: self.profile.clone(),
                            session_id: self.session_id.clone(),
                            delegation: delegation.clone(),
                        },
                        path.clone(),
                    )),
                    _ => None,
                };
                let ctx = ToolContext {
                    call_id: call_id.clone(),
                    elevated: false,
                    policy: policy.clone(),
                };
                let hit = hit.clone();
                async move {
                    let started = Instant::now();
                    let outcome = match hit {
                        Some(result) => Outcome::ok(result),
                        None if tool == crate::subagent::DELEGATE => match sub {
                            Some((parent, path)) => {
                                let task = crate::subagent::task_of(args).unwrap_or_default();
                                crate::subagent::run(parent, path, task.to_owned()).await
                            }
                            None => Outcome::failed(
                                "delegation_refused",
                                "no more sub-agents can be started in this turn (or delegation is off); do the task yourself",
                            ),
                        },
                        None if tool == READ_RESULT => read_result(store.as_ref(), args).await,
                        None if tool == LOAD_TOOL => load_tool(backend.as_ref(), args),
                        None if tool == READ_SKILL => {
                            let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
                            match backend.read_skill(name) {
                                Some(text) => Outcome::ok(json!({"skill": name, "text": text})),
                                None => Outcome::failed(
                                    "skill_not_found",
                                    format!("there is no skill `{name}`"),
                                ),
                            }
                        }
                        None => backend.invoke(tool, args.clone(), &ctx).await,
                    };
                    (outcome, started.elapsed())
                }
            });
        let outcomes = futures::future::join_all(runs).await;
        let mut results = Vec::new();
        let mut fingerprints = Vec::new();
        for ((((call_id, tool, args), hit), (outcome, took)), agent) in
            reads.iter().zip(cached).zip(outcomes).zip(agents)
        {
            if let Some(agent_path) = agent {
                results.push(Event::AgentFinished {
                    agent_path,
                    outcome: match &outcome {
                        Outcome::Ok { .. } => "finished".into(),
                        Outcome::Failed { code, .. } => code.clone(),
                    },
                });
            }
            let source = if hit.is_some() {
                ResultSource::Cache
            } else {
                ResultSource::Live
            };
            if hit.is_none()
                && backend.cacheable(tool)
                && let Outcome::Ok { result, .. } = &outcome
            {
                self.cache.put(tool, args, &revision, result.clone());
            }
            let event = self.result_event(call_id, outcome, source, took).await?;
            fingerprints.push(fingerprint(tool, args, &event));
            results.push(event);
        }
        self.append(results).await?;
        for fp in fingerprints {
            if let Some(outcome) = self.count_repeat(repeats, fp).await? {
                return Ok(Some(outcome));
            }
        }
        Ok(None)
    }

    async fn run_one(
        &mut self,
        call_id: String,
        tool: String,
        args: Value,
        class: PermissionClass,
        elevated: bool,
    ) -> Result<String, AgentError> {
        let args = self.carry_revision(args);
        self.append(vec![Event::ToolCalled {
            call_id: call_id.clone(),
            tool: tool.clone(),
            arguments: args.clone(),
            permission: class.as_str().into(),
        }])
        .await?;
        self.emit(UiKind::ToolCall {
            call_id: call_id.clone(),
            tool: tool.clone(),
            arguments: args.clone(),
        });
        let ctx = ToolContext {
            call_id: call_id.clone(),
            elevated,
            policy: self.policy.clone(),
        };
        let started = Instant::now();
        let outcome = self.backend.invoke(&tool, args.clone(), &ctx).await;
        if let Outcome::Ok {
            advanced: Some(moved),
            ..
        } = &outcome
        {
            self.carried.insert(
                (moved.scope.clone(), moved.before.clone()),
                moved.after.clone(),
            );
        }
        let event = self
            .result_event(&call_id, outcome, ResultSource::Live, started.elapsed())
            .await?;
        let fp = fingerprint(&tool, &args, &event);
        self.append(vec![event]).await?;
        Ok(fp)
    }

    /// Carry a write's expected revision past the revisions this message's
    /// own earlier writes moved it through (and only those).
    fn carry_revision(&self, mut args: Value) -> Value {
        let Some(guard) = self.backend.revision_guard() else {
            return args;
        };
        let scope = guard
            .scope_arg
            .as_ref()
            .and_then(|a| args.get(a))
            .map_or_else(
                || "default".to_owned(),
                |v| v.as_str().map_or_else(|| v.to_string(), str::to_owned),
            );
        let Some(expected) = args.get(&guard.expected_arg).cloned() else {
            return args;
        };
        let as_text = expected
            .as_str()
            .map_or_else(|| expected.to_string(), str::to_owned);
        let mut current = as_text.clone();
        let mut hops = 0;
        while let Some(next) = self.carried.get(&(scope.clone(), current.clone())) {
            current = next.clone();
            hops += 1;
            if hops > self.carried.len() {
                break;
            }
        }
        if current != as_text
            && let Some(map) = args.as_object_mut()
        {
            // Keep the argument's JSON type: a number stays a number.
            let carried = if expected.is_number() {
                current
                    .parse::<u64>()
                    .map_or(Value::String(current.clone()), Value::from)
            } else {
                Value::String(current)
            };
            map.insert(guard.expected_arg.clone(), carried);
        }
        args
    }

    async fn note_repeat(
        &mut self,
        repeats: &mut HashMap<String, u32>,
        fp: &str,
    ) -> Result<Option<TurnOutcome>, AgentError> {
        self.count_repeat(repeats, fp.to_owned()).await
    }

    async fn count_repeat(
        &mut self,
        repeats: &mut HashMap<String, u32>,
        fp: String,
    ) -> Result<Option<TurnOutcome>, AgentError> {
        let n = repeats.entry(fp).or_insert(0);
        *n += 1;
        if *n >= LOOP_STOP {
            return Ok(Some(TurnOutcome::LoopDetected));
        }
        if *n == LOOP_NUDGE {
            self.steering.say(self.profile.wording.loop_nudge.clone());
        }
        Ok(None)
    }

    /// The `tool.result` for an outcome, bounded (offloaded when too big).
    async fn result_event(
        &self,
        call_id: &str,
        outcome: Outcome,
        source: ResultSource,
        took: Duration,
    ) -> Result<Event, AgentError> {
        let duration_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        let event = match outcome {
            Outcome::Ok {
                result,
                operation_id,
                undo,
                ..
            } => {
                let (content, artifact) = bound(
                    &crate::artifacts::StoreArtifacts(self.store.as_ref()),
                    result,
                    &self.bounds,
                )
                .await?;
                let source = if artifact.is_some() {
                    ResultSource::Offload
                } else {
                    source
                };
                self.emit(UiKind::ToolResult {
                    call_id: call_id.to_owned(),
                    ok: true,
                    source: format!("{source:?}").to_lowercase(),
                    undo: if undo { operation_id.clone() } else { None },
                });
                Event::ToolResult {
                    call_id: call_id.to_owned(),
                    status: ToolStatus::Ok,
                    source,
                    content,
                    artifact,
                    operation_id,
                    undo,
                    duration_ms,
                }
            }
            Outcome::Failed { code, message, .. } => {
                self.emit(UiKind::ToolResult {
                    call_id: call_id.to_owned(),
                    ok: false,
                    source: "live".into(),
                    undo: None,
                });
                Event::ToolResult {
                    call_id: call_id.to_owned(),
                    status: ToolStatus::Error,
                    source,
                    content: tool_error_content(&code, &message),
                    artifact: None,
                    operation_id: None,
                    undo: false,
                    duration_ms,
                }
            }
        };
        Ok(event)
    }
}

fn error_result(call_id: &str, code: &str, message: &str) -> Event {
    Event::ToolResult {
        call_id: call_id.to_owned(),
        status: ToolStatus::Error,
        source: ResultSource::Live,
        content: tool_error_content(code, message),
        artifact: None,
        operation_id: None,
        undo: false,
        duration_ms: 0,
    }
}

fn fingerprint(tool: &str, args: &Value, result: &Event) -> String {
    let args = rein_wire::canonical::to_string(args).unwrap_or_default();
    let content = match result {
        Event::ToolResult { content, .. } => content.to_string(),
        _ => String::new(),
    };
    blake3::hash(format!("{tool}\u{0}{args}\u{0}{content}").as_bytes())
        .to_hex()
        .to_string()
}

/// The turn ids from the root to the open (or last) turn.
fn current_path(events: &[StoredEvent]) -> Vec<String> {
    let mut turns: Vec<rein_sessions::TurnInfo> = Vec::new();
    let mut last: Option<String> = None;
    for stored in events {
        if let Event::TurnStarted {
            turn_id,
            parent,
            prompt,
        } = &stored.event
        {
            turns.push(rein_sessions::TurnInfo {
                id: turn_id.clone(),
                parent: parent.clone(),
                prompt: prompt.clone(),
                started_seq: stored.seq,
                finished_seq: None,
                outcome: None,
            });
            last = Some(turn_id.clone());
        }
    }
    last.map(|head| history(&turns, &head).into_iter().map(|t| t.id).collect())
        .unwrap_or_default()
}

/// The tool calls of the last assistant message of the open turn that have
/// no result yet: (call id, tool, arguments), in order.
#[allow(clippy::type_complexity)] // A private helper's tuple; named fields would add nothing.
fn last_calls(events: &[StoredEvent]) -> Option<(Vec<(String, String, Value)>, u64)> {
    let (seq, message) = events.iter().rev().find_map(|e| match &e.event {
        Event::ModelCompleted { message, .. } => Some((e.seq, message)),
        Event::TurnStarted { .. } => Some((0, &EMPTY)),
        _ => None,
    })?;
    if seq == 0 {
        return None;
    }
    let done: std::collections::HashSet<&str> = events
        .iter()
        .filter(|e| e.seq > seq)
        .filter_map(|e| match &e.event {
            Event::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let calls: Vec<(String, String, Value)> = message
        .content
        .iter()
        .filter_map(|b| match b {
            rein_wire::ContentBlock::ToolUse { id, name, input } if !done.contains(id.as_str()) => {
                Some((id.clone(), name.clone(), input.clone()))
            }
            _ => None,
        })
        .collect();
    if calls.is_empty() {
        None
    } else {
        Some((calls, seq))
    }
}

static EMPTY: rein_wire::Message = rein_wire::Message {
    role: rein_wire::Role::Assistant,
    content: Vec::new(),
};

enum ApprovalState {
    None,
    Pending { approval_id: String },
    Approved { scope: rein_approvals::LeaseScope },
    Refused { decision: String },
}

fn approval_state(events: &[StoredEvent], call_id: &str) -> ApprovalState {
    let Some(approval_id) = events.iter().rev().find_map(|e| match &e.event {
        Event::ApprovalRequested {
            approval_id,
            call_id: c,
            ..
        } if c == call_id => Some(approval_id.clone()),
        _ => None,
    }) else {
        return ApprovalState::None;
    };
    for e in events {
        if let Event::ApprovalDecided {
            approval_id: a,
            decision,
            lease,
            ..
        } = &e.event
            && *a == approval_id
        {
            if decision == "approved" {
                let scope = rein_approvals::LeaseScope::from_stored(lease.as_deref().unwrap_or(""));
                return ApprovalState::Approved { scope };
            }
            return ApprovalState::Refused {
                decision: decision.clone(),
            };
        }
    }
    ApprovalState::Pending { approval_id }
}

/// The built-in tool that pages through an offloaded result.
const READ_RESULT: &str = "read_result";

fn read_result_spec() -> rein_wire::ToolSpec {
    rein_wire::ToolSpec {
        name: READ_RESULT.into(),
        description: "Read part of a tool result that was too large to show whole (it was stored as an artifact).".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "artifact": {"type": "string", "description": "The artifact hash from the result's stub."},
                "offset": {"type": "integer", "minimum": 0, "description": "First character to read."},
                "length": {"type": "integer", "minimum": 1, "maximum": 8000, "description": "How many characters to read."}
            },
            "required": ["artifact", "offset", "length"],
            "additionalProperties": false
        }),
        strict: false,
    }
}

fn check_read_result(args: &Value) -> Result<(String, usize, usize), AgentError> {
    let bad = |why: &str| {
        AgentError::new(
            rein_wire::ErrorCode::new("tool_arguments_invalid"),
            format!("the arguments for `read_result` are not valid: {why}"),
        )
    };
    let artifact = args
        .get("artifact")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("`artifact` must be a string"))?;
    let offset = args
        .get("offset")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("`offset` must be a non-negative integer"))?;
    let length = args
        .get("length")
        .and_then(Value::as_u64)
        .filter(|l| (1..=8000).contains(l))
        .ok_or_else(|| bad("`length` must be 1 to 8000"))?;
    Ok((
        artifact.to_owned(),
        usize::try_from(offset).unwrap_or(usize::MAX),
        usize::try_from(length).unwrap_or(8000),
    ))
}

async fn read_result(store: &dyn Store, args: &Value) -> Outcome {
    let (artifact, offset, length) = match check_read_result(args) {
        Ok(parts) => parts,
        Err(err) => return Outcome::from_error(&err),
    };
    match store
        .read_artifact(&artifact, rein_sessions::Slice::Whole)
        .await
    {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let total = text.chars().count();
            let start = offset.min(total);
            let part: String = text.chars().skip(start).take(length).collect();
            let end = start + part.chars().count();
            Outcome::ok(
                json!({"artifact": artifact, "offset": start, "end": end, "total_chars": total, "text": part}),
            )
        }
        Err(err) => Outcome::from_error(&err),
    }
}

/// The built-in tool that fetches a deferred tool's definition.
const LOAD_TOOL: &str = "load_tool";
/// The built-in tool that calls a deferred tool.
const CALL_TOOL: &str = "call_tool";

fn load_tool_spec() -> rein_wire::ToolSpec {
    rein_wire::ToolSpec {
        name: LOAD_TOOL.into(),
        description: "Get a tool's description and the JSON schema of its arguments.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The tool's name, from the list."}},
            "required": ["name"],
            "additionalProperties": false
        }),
        strict: false,
    }
}

fn call_tool_spec() -> rein_wire::ToolSpec {
    rein_wire::ToolSpec {
        name: CALL_TOOL.into(),
        description: "Call a tool by name with arguments that follow its schema (get it with load_tool first).".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name."},
                "arguments": {"type": "object", "description": "Its arguments."}
            },
            "required": ["name", "arguments"],
            "additionalProperties": false
        }),
        strict: false,
    }
}

fn load_tool(backend: &dyn ToolBackend, args: &Value) -> Outcome {
    let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
    match backend.definition(name) {
        Some(spec) => Outcome::ok(
            json!({"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}),
        ),
        None => Outcome::failed("tool_not_found", format!("there is no tool `{name}`")),
    }
}

/// The JSON in a reply: the whole text, or the inside of a ``` fence.
fn parse_answer(reply: &str) -> Result<Value, String> {
    let text = reply.trim();
    let whole = serde_json::from_str::<Value>(text);
    let whole_error = match whole {
        Ok(value) => return Ok(value),
        Err(e) => e.to_string(),
    };
    // A fenced block anywhere in the reply (models often add a sentence).
    if let Some(start) = text.find("```") {
        let body = &text[start + 3..];
        let body = body.strip_prefix("json").unwrap_or(body);
        if let Some(end) = body.find("```")
            && let Ok(value) = serde_json::from_str::<Value>(body[..end].trim())
        {
            return Ok(value);
        }
    }
    // The first object or array that parses, with prose around it (a bounded
    // number of tries).
    for (at, _) in text
        .char_indices()
        .filter(|(_, c)| *c == '{' || *c == '[')
        .take(32)
    {
        let mut values = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
        if let Some(Ok(value)) = values.next() {
            return Ok(value);
        }
    }
    Err(format!("the answer is not JSON ({whole_error})"))
}

/// Run a verification command; `Err` carries the exit status and the tail
/// of its output.
async fn run_check(check: &Verification) -> Result<(), String> {
    let Some((program, args)) = check.command.split_first() else {
        return Err("no command was given".into());
    };
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .kill_on_drop(true)
        .stdin(std::process::Stdio::null());
    if let Some(dir) = &check.cwd {
        command.current_dir(dir);
    }
    let output = match tokio::time::timeout(check.timeout, command.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return Err(format!("it could not be started: {e}")),
        Err(_) => {
            return Err(format!(
                "it ran longer than {:?} and was stopped",
                check.timeout
            ));
        }
    };
    if output.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    let tail: String = text
        .chars()
        .rev()
        .take(2000)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    Err(format!(
        "exit status {}; output (last 2000 characters):\n{tail}",
        output
            .status
            .code()
            .map_or("signal".to_owned(), |c| c.to_string())
    ))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The built-in tool that reads one of the product's skills.
const READ_SKILL: &str = "read_skill";

fn read_skill_spec() -> rein_wire::ToolSpec {
    rein_wire::ToolSpec {
        name: READ_SKILL.into(),
        description: "Read one of the skills listed in the instructions.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The skill's name."}},
            "required": ["name"],
            "additionalProperties": false
        }),
        strict: false,
    }
}

/// The permission of a built-in tool's call (`None`: not a built-in).
fn builtin_permission(tool: &str, args: &Value) -> Option<Result<PermissionClass, AgentError>> {
    let invalid = |why: &str| {
        Err(AgentError::new(
            rein_wire::ErrorCode::new("tool_arguments_invalid"),
            format!("{tool} needs {why}"),
        ))
    };
    let named = || args.get("name").and_then(Value::as_str).is_some();
    Some(match tool {
        READ_RESULT => check_read_result(args).map(|_| PermissionClass::Read),
        READ_SKILL if named() => Ok(PermissionClass::Read),
        READ_SKILL => invalid("the `name` of a skill"),
        LOAD_TOOL if named() => Ok(PermissionClass::Read),
        LOAD_TOOL => invalid("the `name` of a tool"),
        CALL_TOOL => invalid("the `name` of a tool and its `arguments`"),
        crate::subagent::DELEGATE if crate::subagent::task_of(args).is_some() => {
            Ok(PermissionClass::Read)
        }
        crate::subagent::DELEGATE => invalid("a `task`"),
        _ => return None,
    })
}

/// What the model is asked when it summarises older history.
pub const SUMMARY_INSTRUCTIONS: &str = "Summarise this conversation for your own later use: what was asked, what was done and found, what was decided, and what remains. Be brief and concrete.";

/// A call that did not run: its `tool.called` and its one error result.
fn refused(
    call_id: impl Into<String>,
    tool: impl Into<String>,
    arguments: Value,
    permission: &str,
    code: &str,
    message: &str,
) -> [Event; 2] {
    let call_id = call_id.into();
    let result = error_result(&call_id, code, message);
    [
        Event::ToolCalled {
            call_id,
            tool: tool.into(),
            arguments,
            permission: permission.to_owned(),
        },
        result,
    ]
}
