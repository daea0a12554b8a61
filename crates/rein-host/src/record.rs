//! A hosted run recorded in an ordinary rein session, so `rein trace
//! report`, `rein sessions` and every surface that reads a log cover it.
//!
//! The mapping: the session's metadata names the hosted agent
//! (`{"hosted": "claude", "program": "claude"}`); the person's prompt is a
//! `turn.started`; the run a `run.started`; each hosted turn's result a
//! `model.completed` (its model, final text, tokens, cost in micro-USD,
//! duration); each tool call a `tool.called` whose arguments are only the
//! reducer's one allowed detail, and its one `tool.result` (content `{}`:
//! the hosted tool's output stays the hosted agent's). A call still open
//! when the run ends gets an `interrupted` result, so every call has
//! exactly one. The run ends with `turn.finished` and `run.finished`
//! (outcome, the reducer's summary, the refused requests). In a session
//! that stays for more turns, each turn a person's words start is a
//! `turn.started` (those words its prompt, the turn before its parent)
//! with its own run; the turn before finishes with its reply.
//!
//! The metadata also carries the driver's process mark: a run whose driver
//! was killed outright (and so could not close it) is closed `failed` by
//! the next rein that looks ([`close_dead`]), never left "running": a
//! question it left waiting is decided `stopped` (nobody is left to act on
//! a yes) and a call it left open is recorded as interrupted.
//!
//! Not here: what a record means (the reducers) or the process (`driver.rs`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use rein_sessions::{Event, NewEvent, ResultSource, SessionLock, Store, ToolStatus};
use rein_wire::{AgentError, ContentBlock, Message, Role};
use serde_json::json;

use crate::child::Driven;
use crate::reducer::Step;

/// How long the recorder's hold on the session lasts between writes, by
/// default.
pub const LOCK_TTL: Duration = Duration::from_secs(60);

/// Who holds the session while the run is recorded.
const HOLDER: &str = "rein-host";

/// Who stops a question whose run's driver died.
pub const DEAD_DRIVER: &str = "rein (the hosted run's driver died)";

/// Open tool calls tracked at most (past it a call's result is recorded as
/// interrupted at the end rather than matched).
const MAX_OPEN: usize = 4096;

/// Writes one hosted run into a new session.
pub struct Recorder {
    store: Arc<dyn Store>,
    lock: SessionLock,
    session: String,
    turn_id: String,
    run_id: String,
    open: BTreeSet<String>,
    ttl: Duration,
    /// The run's profile (`{"hosted": kind, "program": program}`), for
    /// each turn's run.
    profile: serde_json::Value,
}

impl Recorder {
    /// A new session for a run of `kind` (`claude`, `codex`, `acp`) whose
    /// program is `program`, started by a person's `prompt`.
    pub async fn start(
        store: Arc<dyn Store>,
        kind: &str,
        program: &str,
        prompt: &str,
    ) -> Result<Self, AgentError> {
        let info = store
            .create_session(json!({
                "hosted": kind,
                "program": program,
                "driver": rein_sessions::ProcessMark::current(),
            }))
            .await?;
        Recorder::start_in(store, &info.id, kind, program, prompt).await
    }

    /// The same, in `session`, a session made already (a sub-agent's,
    /// named in its parent's `agent.started`).
    pub async fn start_in(
        store: Arc<dyn Store>,
        session: &str,
        kind: &str,
        program: &str,
        prompt: &str,
    ) -> Result<Self, AgentError> {
        let info = store.session(session).await?;
        let lock = store.acquire(&info.id, HOLDER, LOCK_TTL).await?;
        let turn_id = rein_wire::ids::new_prefixed("turn");
        let run_id = rein_wire::ids::new_prefixed("run");
        let mut recorder = Recorder {
            store,
            lock,
            session: info.id,
            turn_id: turn_id.clone(),
            run_id: run_id.clone(),
            open: BTreeSet::new(),
            ttl: LOCK_TTL,
            profile: json!({"hosted": kind, "program": program}),
        };
        recorder
            .append(vec![
                Event::TurnStarted {
                    turn_id: turn_id.clone(),
                    parent: None,
                    prompt: prompt.to_owned(),
                },
                Event::RunStarted {
                    run_id,
                    turn_id,
                    budgets: json!({}),
                    profile: recorder.profile.clone(),
                },
            ])
            .await?;
        Ok(recorder)
    }

    /// Hold the session for `ttl` between writes from now on (default
    /// [`LOCK_TTL`]); a hold that lapsed while the agent was quiet is taken
    /// again.
    pub async fn lock_ttl(mut self, ttl: Duration) -> Result<Self, AgentError> {
        self.lock = self.store.renew(&self.lock, ttl).await?;
        self.ttl = ttl;
        Ok(self)
    }

    /// The session written to.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The store written to.
    pub(crate) fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// Append `events` and mark the session's inbox taken up to `upto`, in
    /// one transaction (what the items asked, recorded as they are taken).
    pub(crate) async fn take_inbox(
        &mut self,
        upto: u64,
        events: Vec<Event>,
    ) -> Result<(), AgentError> {
        self.renewed().await?;
        self.store
            .take_inbox(
                &self.lock,
                upto,
                events.into_iter().map(NewEvent::main).collect(),
            )
            .await?;
        Ok(())
    }

    async fn append(&mut self, events: Vec<Event>) -> Result<(), AgentError> {
        self.renewed().await?;
        self.store
            .append(&self.lock, events.into_iter().map(NewEvent::main).collect())
            .await?;
        Ok(())
    }

    /// How often a run renews its hold while the program is quiet, so
    /// that the session stays its own (no other writer takes it) however
    /// long a turn thinks or the program waits for its next turn.
    pub(crate) fn hold_every(&self) -> Duration {
        self.ttl / 3
    }

    /// Keep the hold on the session (renewed once half of it has run).
    pub(crate) async fn hold(&mut self) -> Result<(), AgentError> {
        self.renewed().await
    }

    async fn renewed(&mut self) -> Result<(), AgentError> {
        // Renew once half the lock has run; a hosted agent can be quiet
        // for longer than the lock (thinking), so one that lapsed is taken
        // again (the session is this run's own: nobody else writes to it).
        let half = i64::try_from(self.ttl.as_millis() / 2).unwrap_or(i64::MAX);
        if rein_wire::clock::now_ms() > self.lock.expires_ms.saturating_sub(half) {
            self.lock = match self.store.renew(&self.lock, self.ttl).await {
                Ok(lock) => lock,
                Err(e) if e.code == rein_wire::error::codes::LOCK_LOST => {
                    self.store.acquire(&self.session, HOLDER, self.ttl).await?
                }
                Err(e) => return Err(e),
            };
        }
        Ok(())
    }

    /// Record what a step says happened (progress is not recorded).
    pub async fn step(&mut self, step: &Step) -> Result<(), AgentError> {
        match step {
            Step::ToolCalled { id, tool, detail } => {
                if self.open.len() >= MAX_OPEN || !self.open.insert(id.clone()) {
                    return Ok(());
                }
                self.append(vec![Event::ToolCalled {
                    call_id: id.clone(),
                    tool: tool.clone(),
                    arguments: json!({"detail": detail}),
                    permission: None,
                }])
                .await
            }
            Step::ToolDone { id, ok } => {
                if !self.open.remove(id) {
                    return Ok(());
                }
                self.append(vec![result(id, *ok, ResultSource::Live)]).await
            }
            Step::TurnClosed(turn) => {
                let text = turn.text.clone().unwrap_or_default();
                self.append(vec![Event::ModelCompleted {
                    call_id: format!("{}-{}", self.run_id, turn.index),
                    model: turn.model.clone(),
                    message: Message {
                        role: Role::Assistant,
                        content: vec![ContentBlock::Text { text }],
                    },
                    usage: turn.usage,
                    cost_micro_usd: turn.cost_micro_usd,
                    reasoning_cost_micro_usd: None,
                    stop_reason: None,
                    cache_verdict: None,
                    latency_ms: turn.duration_ms.unwrap_or(0),
                    repaired: Vec::new(),
                }])
                .await
            }
            Step::Progress(_) | Step::Loop(_) => Ok(()),
        }
    }

    /// A person's words start the program's next turn in a session that
    /// stays open: the turn done so far finishes with its `reply`, and a
    /// new turn (its child in the tree) and run begin with `prompt`.
    pub async fn next_turn(
        &mut self,
        prompt: &str,
        reply: Option<String>,
    ) -> Result<(), AgentError> {
        let mut events: Vec<Event> = std::mem::take(&mut self.open)
            .into_iter()
            .map(|id| result(&id, false, ResultSource::Interrupted))
            .collect();
        let finished = rein_wire::Ending::Finished;
        let turn_id = rein_wire::ids::new_prefixed("turn");
        let run_id = rein_wire::ids::new_prefixed("run");
        let parent = std::mem::replace(&mut self.turn_id, turn_id.clone());
        let done = std::mem::replace(&mut self.run_id, run_id.clone());
        events.extend([
            Event::TurnFinished {
                turn_id: parent.clone(),
                outcome: finished,
                reply,
            },
            Event::RunFinished {
                run_id: done,
                outcome: finished,
                totals: json!({"next_turn": turn_id}),
            },
            Event::TurnStarted {
                turn_id: turn_id.clone(),
                parent: Some(parent),
                prompt: prompt.to_owned(),
            },
            Event::RunStarted {
                run_id,
                turn_id,
                budgets: json!({}),
                profile: self.profile.clone(),
            },
        ]);
        self.append(events).await
    }

    /// Close the run: open calls interrupted, the turn and run finished.
    pub async fn finish(&mut self, driven: &Driven) -> Result<(), AgentError> {
        let mut events: Vec<Event> = std::mem::take(&mut self.open)
            .into_iter()
            .map(|id| result(&id, false, ResultSource::Interrupted))
            .collect();
        let outcome = driven.ended.ending();
        events.push(Event::TurnFinished {
            turn_id: self.turn_id.clone(),
            outcome,
            reply: driven.outcome.text.clone(),
        });
        events.push(Event::RunFinished {
            run_id: self.run_id.clone(),
            outcome,
            totals: json!({
                "summary": driven.summary,
                "failure": driven.outcome.failure,
                "refused": driven.outcome.refused,
                "refused_count": driven.outcome.refused_count,
                "cost_micro_usd": driven.outcome.cost_micro_usd,
                "exit_code": driven.exit_code,
                "duration_ms": driven.duration_ms,
            }),
        });
        self.append(events).await?;
        self.store.release(&self.lock).await
    }
}

impl Recorder {
    /// A hosted agent asks a person before its call runs: recorded before
    /// anyone is asked. Returns the approval's id.
    pub async fn approval_requested(
        &mut self,
        question: &crate::person::Question,
    ) -> Result<String, AgentError> {
        let approval_id = rein_wire::ids::new_prefixed("appr");
        self.append(vec![Event::ApprovalRequested {
            approval_id: approval_id.clone(),
            call_id: question.call_id.clone(),
            tool: question.tool.clone(),
            arguments: json!({"detail": question.detail}),
            permission: rein_wire::permission::PermissionClass::Destructive,
            preview: Some(question.preview()),
            bound_to: None,
        }])
        .await?;
        Ok(approval_id)
    }

    /// Nobody decided `approval_id` before the run's limit or its stop:
    /// closed `expired`. A person's decision is never recorded here: it
    /// goes through `rein_approvals::decide` (checked against what is
    /// pending) and is taken from the inbox (`heard`).
    pub async fn approval_expired(&mut self, approval_id: &str) -> Result<(), AgentError> {
        self.append(vec![Event::ApprovalDecided {
            approval_id: approval_id.to_owned(),
            decision: rein_wire::permission::Decision::Expired,
            by: "nobody".to_owned(),
            lease: None,
        }])
        .await
    }

    /// A person's intervention in the run's terminal (`host.intervened`).
    pub async fn intervention(
        &mut self,
        x: &crate::session::Intervention,
    ) -> Result<(), AgentError> {
        self.append(vec![Event::HostIntervened {
            viewer: x.viewer.clone(),
            intervention: x.kind,
            holder: x.holder.clone(),
            data: x.data.clone(),
        }])
        .await
    }

    /// Close a run whose program ran in a terminal: finished when it exited
    /// with 0, failed otherwise.
    pub async fn finish_exit(&mut self, exit_code: Option<i32>) -> Result<(), AgentError> {
        let outcome = if exit_code == Some(0) {
            rein_wire::Ending::Finished
        } else {
            rein_wire::Ending::Failed
        };
        self.append(vec![
            Event::TurnFinished {
                turn_id: self.turn_id.clone(),
                outcome,
                reply: None,
            },
            Event::RunFinished {
                run_id: self.run_id.clone(),
                outcome,
                totals: json!({"exit_code": exit_code}),
            },
        ])
        .await?;
        self.store.release(&self.lock).await
    }

    /// Close a run that could not start (the program is missing, say): the
    /// turn and run finished as `failed`, with the reason.
    pub async fn abandon(&mut self, reason: &str) -> Result<(), AgentError> {
        let outcome = rein_wire::Ending::Failed;
        self.append(vec![
            Event::TurnFinished {
                turn_id: self.turn_id.clone(),
                outcome,
                reply: None,
            },
            Event::RunFinished {
                run_id: self.run_id.clone(),
                outcome,
                totals: json!({"failure": crate::progress::clean(reason, crate::progress::MAX_REASON_CHARS)}),
            },
        ])
        .await?;
        self.store.release(&self.lock).await
    }
}

/// Close every hosted run among the newest `limit` sessions whose driver
/// provably died without closing it: its turn and run finished `failed`,
/// saying why. The sessions closed (their watch sockets can go too).
pub async fn close_dead(store: &dyn Store, limit: usize) -> Result<Vec<String>, AgentError> {
    let mut closed = Vec::new();
    for info in store.list_sessions(limit).await? {
        let driver = info
            .metadata
            .get("driver")
            .filter(|_| info.metadata.get("hosted").is_some())
            .and_then(|d| serde_json::from_value::<rein_sessions::ProcessMark>(d.clone()).ok());
        let Some(driver) = driver.filter(rein_sessions::ProcessMark::provably_dead) else {
            continue;
        };
        // Most such runs ended long ago: the turn tree says so without
        // reading their logs.
        let turns = store.turns(&info.id).await?;
        if turns.iter().all(|t| t.finished_seq.is_some()) {
            continue;
        }
        let events = rein_sessions::read_all(store, &info.id).await?;
        let open = rein_sessions::recovery::dangling(&events);
        if open.turns.is_empty() && open.runs.is_empty() {
            continue;
        }
        let lock = match store.acquire(&info.id, HOLDER, LOCK_TTL).await {
            Ok(lock) => lock,
            Err(e) if e.code == rein_wire::error::codes::SESSION_LOCKED => continue,
            Err(e) => return Err(e),
        };
        let outcome = rein_wire::Ending::Failed;
        let why = format!(
            "its driver (pid {}) ended without closing the run",
            driver.pid
        );
        // Its questions die with it: a "yes" given later would be recorded
        // for a call nobody can run. Every call it began gets its one
        // result.
        let mut closing: Vec<NewEvent> = open
            .approvals
            .into_iter()
            .map(|approval_id| {
                NewEvent::main(Event::ApprovalDecided {
                    approval_id,
                    decision: rein_wire::permission::Decision::Stopped,
                    by: DEAD_DRIVER.to_owned(),
                    lease: None,
                })
            })
            .collect();
        closing.extend(
            open.tool_calls.iter().map(|call| {
                NewEvent::main(result(&call.call_id, false, ResultSource::Interrupted))
            }),
        );
        closing.extend(open.turns.into_iter().map(|turn_id| {
            NewEvent::main(Event::TurnFinished {
                turn_id,
                outcome,
                reply: None,
            })
        }));
        closing.extend(open.runs.into_iter().map(|run_id| {
            NewEvent::main(Event::RunFinished {
                run_id,
                outcome,
                totals: json!({"failure": why}),
            })
        }));
        let appended = store.append(&lock, closing).await;
        store.release(&lock).await?;
        appended?;
        closed.push(info.id);
    }
    Ok(closed)
}

fn result(id: &str, ok: bool, source: ResultSource) -> Event {
    Event::ToolResult {
        call_id: id.to_owned(),
        status: if ok {
            ToolStatus::Ok
        } else {
            ToolStatus::Error
        },
        source,
        content: json!({}),
        artifact: None,
        operation_id: None,
        undo: false,
        duration_ms: 0,
        seen: None,
    }
}
