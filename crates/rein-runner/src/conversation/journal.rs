//! The conversation's hold on its session: appends under the lease
//! (renewed at half-life, retaken if it lapsed), events staged to go with
//! the next append, the log read incrementally, UI events, and recovery of
//! calls a crash left without a result.
//!
//! Commit points: an append returns once its events are durable, so the
//! loop appends exactly where the next thing depends on durability — a
//! tool's `tool.called` before it runs, a decision before the write it
//! approves, a write's result as soon as it ran. What nothing depends on
//! yet is staged instead ([`Journal::stage`]): `model.requested` and
//! `model.completed` go with the step's first `tool.called` (or the turn's
//! end), and reads' results with the next commit, so a step of reads is
//! one commit, not four. A crash loses staged events only: a model call
//! is made again (as a crash during it always did) and a read whose result
//! was lost is answered `interrupted` by recovery, as a crash during the
//! read was.
//!
//! Not here: what the events mean (the loop and the folds).

use std::sync::Arc;
use std::time::Duration;

use rein_sessions::{Event, NewEvent, ResultSource, SessionLock, Store, StoredEvent, ToolStatus};
use rein_wire::{AgentError, error::codes};
use tokio::sync::broadcast;

use super::folds::{now_ms, tool_error_content};
use super::log::Log;
use rein_wire::{AgentPath, UiEvent, UiKind};

/// UI events a slow subscriber may fall behind by before it misses some.
const UI_BUFFER: usize = 1024;

/// How long the conversation's hold on its session lasts between renewals.
const LEASE_TTL: Duration = Duration::from_secs(120);

/// The conversation's hold on its session: the store, the lease, the log
/// as far as it has been read, and the UI channel. Every write the
/// conversation makes goes through [`Journal::append`].
pub(super) struct Journal {
    store: Arc<dyn Store>,
    session_id: String,
    holder: String,
    lease: SessionLock,
    /// This conversation's agent path (`main`, or `main/agent-N`): its
    /// events and UI events carry it.
    agent: AgentPath,
    known: Known,
    /// Events to write with the next append, already in the known log under
    /// the sequence numbers they will get (nobody else appends while the
    /// lease is held).
    staged: Vec<NewEvent>,
    /// Made at the first subscription: its buffer is the largest part of
    /// an idle conversation, and most conversations are not watched.
    ui: std::sync::OnceLock<broadcast::Sender<UiEvent>>,
    /// How far the log is imported history (evidence, never authority;
    /// `rein_sessions::recovery::imported_through`): 0 for none.
    evidence_through: u64,
    /// Whether the lease was given back (by `release`).
    released: bool,
}

/// A conversation dropped without `close()` gives its session's lease back
/// all the same — on the runtime it was dropped in, at once, rather than
/// leaving the session locked until the lease runs out. Best effort (a
/// runtime shutting down may not run it); `close()` is the sure way, and
/// the one that writes bookkeeping still staged.
impl Drop for Journal {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let store = self.store.clone();
            let lease = self.lease.clone();
            runtime.spawn(async move {
                if let Err(err) = store.release(&lease).await {
                    tracing::debug!(code = %err.code, "a dropped conversation's lease was not given back");
                }
            });
        }
    }
}

/// The log as far as the conversation has read it. Owned by the
/// conversation and driven through `&mut self`: no locks.
#[derive(Debug, Default)]
pub(super) struct Known {
    /// The events read so far and the folds kept over them, shared
    /// cheaply with each step.
    events: Arc<Log>,
    /// The conversation's own appends not yet in `events`. While the lease
    /// is held nobody else can append, so when `in_sync` is set these are
    /// all that is new and the next read of the log needs no query.
    written: Vec<StoredEvent>,
    /// Whether `events` and `written` together hold the whole log.
    in_sync: bool,
    /// How many of the last known events are staged, not yet written.
    provisional: usize,
    /// Whether `events` came from an earlier conversation ([`KeptEvents`])
    /// and its last event is still to be checked against the store.
    unchecked: bool,
    /// Whether `events` came from an earlier conversation and its check
    /// passed (what it carried besides is of this log).
    kept_held: bool,
}

/// What a closed conversation had read of its log, for the next open of
/// the same session in this process (the events of a [`super::KeptLog`]):
/// only what came after it is read from the store. A log only grows, so it
/// is the start of the log still; the open checks its last event against
/// the store and reads the whole log when they differ.
#[derive(Debug, Clone)]
pub(super) struct KeptEvents {
    session: String,
    events: Arc<Log>,
}

impl KeptEvents {
    /// The session it is the log of.
    pub(super) fn session(&self) -> &str {
        &self.session
    }

    /// How many events it holds.
    pub(super) fn len(&self) -> usize {
        self.events.len()
    }
}

impl Journal {
    /// Take the session's lease (`session_locked` while another holds it).
    /// What `kept` holds of this session's log is not read again.
    pub(super) async fn open(
        store: Arc<dyn Store>,
        session: &rein_sessions::SessionInfo,
        kept: Option<KeptEvents>,
    ) -> Result<Self, AgentError> {
        let session_id = session.id.clone();
        let holder = format!("rein runner (pid {})", std::process::id());
        let lease = store.acquire(&session_id, &holder, LEASE_TTL).await?;
        let known = match kept {
            Some(kept) if kept.session == session_id && !kept.events.is_empty() => Known {
                events: kept.events,
                unchecked: true,
                ..Known::default()
            },
            _ => Known::default(),
        };
        Ok(Journal {
            store,
            session_id,
            holder,
            lease,
            agent: AgentPath::main(),
            known,
            staged: Vec::new(),
            ui: std::sync::OnceLock::new(),
            evidence_through: rein_sessions::recovery::imported_through(&session.metadata),
            released: false,
        })
    }

    /// Whether the log was kept from an earlier conversation and checked
    /// to be the store's (false until the first read of the log).
    pub(super) fn kept_held(&self) -> bool {
        self.known.kept_held
    }

    /// How far the log is imported history, never acted on: its decisions,
    /// leases and acceptances count for nothing (0: none of it is).
    pub(super) fn evidence_through(&self) -> u64 {
        self.evidence_through
    }

    /// The store the session lives in.
    pub(super) fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The session's id.
    pub(super) fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The agent path this conversation writes as.
    pub(super) fn agent(&self) -> &str {
        self.agent.as_str()
    }

    pub(super) fn set_agent(&mut self, path: &str) {
        self.agent = AgentPath::from(path);
    }

    /// Watch what happens.
    pub(super) fn subscribe(&self) -> broadcast::Receiver<UiEvent> {
        self.ui
            .get_or_init(|| broadcast::channel(UI_BUFFER).0)
            .subscribe()
    }

    /// Where UI events go, when someone watches.
    pub(super) fn ui_sender(&self) -> Option<broadcast::Sender<UiEvent>> {
        self.ui.get().cloned()
    }

    /// Send UI events to `sender` (a sub-agent's go to its parent's
    /// watchers, each carrying the sub-agent's path).
    pub(super) fn share_ui(&mut self, sender: broadcast::Sender<UiEvent>) {
        let _ = self.ui.set(sender);
    }

    /// Give the lease back (after writing what is staged).
    pub(super) async fn release(self) -> Result<(), AgentError> {
        self.release_keeping().await.map(drop)
    }

    /// Give the lease back, keeping what was read of the log (staged
    /// bookkeeping written first, so all of it is committed).
    pub(super) async fn release_keeping(mut self) -> Result<KeptEvents, AgentError> {
        if !self.staged.is_empty() {
            self.append(Vec::new()).await?;
        }
        self.released = true;
        self.store.release(&self.lease).await?;
        let known = &mut self.known;
        let mut events = std::mem::take(&mut known.events);
        if known.in_sync && known.provisional == 0 && !known.written.is_empty() {
            let log = Arc::make_mut(&mut events);
            for stored in known.written.drain(..) {
                log.push(stored);
            }
        }
        Ok(KeptEvents {
            session: self.session_id.clone(),
            events,
        })
    }

    /// Stage `events` to be written with the next append: they are in the
    /// log the conversation reads at once, and durable with whatever is
    /// appended next. Only for events nothing outside depends on until then
    /// (see the module's doc). When the known log is not in step with the
    /// store they are appended now instead.
    pub(super) async fn stage(&mut self, events: Vec<Event>) -> Result<(), AgentError> {
        if !self.known.in_sync {
            self.append(events).await?;
            return Ok(());
        }
        let known = &mut self.known;
        let next = known.events.len() as u64 + known.written.len() as u64 + 1;
        let at_ms = now_ms();
        known.provisional += events.len();
        for (i, event) in events.into_iter().enumerate() {
            known.written.push(StoredEvent {
                session_id: self.session_id.clone(),
                seq: next + i as u64,
                at_ms,
                agent_path: self.agent.to_string(),
                event: event.clone(),
            });
            self.staged.push(NewEvent {
                agent_path: self.agent.to_string(),
                event,
            });
        }
        Ok(())
    }

    /// Take the staged events out of the known log (they were never
    /// written, or will be written under other numbers) and read the log
    /// from the store next time.
    fn unstage(&mut self) {
        let known = &mut self.known;
        let staged = std::mem::take(&mut known.provisional);
        let from_written = staged.min(known.written.len());
        known.written.truncate(known.written.len() - from_written);
        let rest = staged - from_written;
        if rest > 0 {
            let events = Arc::make_mut(&mut known.events);
            events.truncate(events.len().saturating_sub(rest));
        }
        known.in_sync = false;
    }

    /// The session's control record (head, pending approvals).
    pub(super) async fn control(&self) -> Result<rein_sessions::ControlRecord, AgentError> {
        self.store.control(&self.session_id).await
    }

    /// Where call `call_id` reports its progress: live UI events for
    /// whoever watches (nothing when nobody does).
    pub(super) fn progress(&self, call_id: &str) -> rein_tools::Progress {
        let Some(ui) = self.ui.get().cloned() else {
            return rein_tools::Progress::none();
        };
        let agent = self.agent.clone();
        let call_id = call_id.to_owned();
        rein_tools::Progress::to(move |report| {
            let _ = ui.send(UiEvent {
                agent: agent.clone(),
                kind: UiKind::ToolProgress {
                    call_id: call_id.clone(),
                    done: report.done,
                    total: report.total,
                    message: report.message,
                },
            });
        })
    }

    pub(super) fn emit(&self, kind: UiKind) {
        if let Some(ui) = self.ui.get() {
            let _ = ui.send(UiEvent {
                agent: self.agent.clone(),
                kind,
            });
        }
    }

    pub(super) async fn append(
        &mut self,
        events: Vec<Event>,
    ) -> Result<Vec<StoredEvent>, AgentError> {
        self.append_taking(events, None).await
    }

    /// Append `events`; with `inbox` set, also mark the session's inbox
    /// taken up to that number in the same transaction.
    pub(super) async fn append_taking(
        &mut self,
        events: Vec<Event>,
        inbox: Option<u64>,
    ) -> Result<Vec<StoredEvent>, AgentError> {
        // Renew the lease once half of it has run (not on every append: that
        // would double the writes); take it again if it lapsed meanwhile.
        let half = i64::try_from(LEASE_TTL.as_millis() / 2).unwrap_or(i64::MAX);
        if now_ms() > self.lease.expires_ms.saturating_sub(half) {
            match self.store.renew(&self.lease, LEASE_TTL).await {
                Ok(lease) => self.lease = lease,
                Err(err) if err.code == codes::LOCK_LOST => {
                    self.lease = self
                        .store
                        .acquire(&self.session_id, &self.holder, LEASE_TTL)
                        .await?;
                    // Someone may have written while the lease had lapsed:
                    // what is staged may be numbered otherwise.
                    self.unstage();
                }
                Err(err) => return Err(err),
            }
        }
        debug_assert!(
            self.known.provisional == 0 || self.known.provisional == self.staged.len(),
            "the known log holds staged events that are not staged"
        );
        let staged = self.staged.len();
        let mut batch = std::mem::take(&mut self.staged);
        batch.extend(events.into_iter().map(|event| NewEvent {
            agent_path: self.agent.to_string(),
            event,
        }));
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let written = match inbox {
            Some(upto) => self.store.take_inbox(&self.lease, upto, batch).await,
            None => self.store.append(&self.lease, batch).await,
        };
        let mut stored = match written {
            Ok(stored) => stored,
            Err(err) => {
                self.unstage();
                return Err(err);
            }
        };
        // What was just written extends the known log at the next read, so
        // it is not read back from the store. The staged part is there
        // already, under the numbers the store gave it.
        let known = &mut self.known;
        let next = known.events.len() as u64 + known.written.len() as u64 + 1;
        let fresh = stored.split_off(staged.min(stored.len()));
        let first = stored.first().or(fresh.first());
        let contiguous = first.is_some_and(|first| first.seq + staged as u64 == next);
        if contiguous && known.in_sync {
            known.written.extend(fresh.iter().cloned());
            known.provisional = 0;
        } else {
            // Another writer came between (a sub-agent on the same
            // session): the staged part sits elsewhere; read it back.
            self.unstage();
            self.known.written.clear();
        }
        stored.extend(fresh);
        Ok(stored)
    }

    /// The log, read incrementally: only events after the last one known
    /// are fetched from the store.
    pub(super) async fn log(&mut self) -> Result<Arc<Log>, AgentError> {
        let known = &mut self.known;
        if known.in_sync {
            if !known.written.is_empty() {
                let log = Arc::make_mut(&mut known.events);
                for stored in known.written.drain(..) {
                    log.push(stored);
                }
            }
            return Ok(Arc::clone(&known.events));
        }
        known.written.clear();
        if std::mem::take(&mut known.unchecked) {
            let holds = match known.events.last() {
                Some(last) => {
                    rein_sessions::still_begins(&*self.store, &self.session_id, last).await?
                }
                None => false,
            };
            if holds {
                self.known.kept_held = true;
            } else {
                self.known.events = Arc::default();
            }
        }
        let from = self.known.events.len() as u64 + 1;
        let fresh = rein_sessions::read_from(&*self.store, &self.session_id, from).await?;
        let known = &mut self.known;
        if !fresh.is_empty() {
            // Cheap when no earlier snapshot is still held (the usual case).
            let events = Arc::make_mut(&mut known.events);
            for event in fresh {
                if event.seq == events.len() as u64 + 1 {
                    events.push(event);
                }
            }
        }
        known.in_sync = true;
        Ok(Arc::clone(&known.events))
    }

    /// Make the next turn continue from `turn_id` (a branch): refused
    /// while a turn is open. See `Conversation::branch_from`.
    pub(super) async fn branch_from(&mut self, turn_id: &str) -> Result<(), AgentError> {
        if self.log().await?.turn_open() {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "a turn is open: finish or stop it before branching",
            ));
        }
        let branch = Event::BranchCreated {
            from_turn: Some(turn_id.to_owned()),
        };
        self.append(vec![branch]).await?;
        Ok(())
    }

    /// Record that the surface named `by` undid `operation_id`, and the
    /// words `told` the model reads at its next step.
    pub(super) async fn record_undone(
        &mut self,
        operation_id: &str,
        by: &str,
        told: &str,
    ) -> Result<(), AgentError> {
        let undone = Event::OperationUndone {
            operation_id: operation_id.to_owned(),
            by: by.to_owned(),
        };
        let said = Event::SteerSaid {
            text: told.to_owned(),
        };
        self.append(vec![undone, said]).await?;
        Ok(())
    }

    pub(super) async fn recover(&mut self) -> Result<(), AgentError> {
        let events = self.log().await?;
        let open = events.dangling();
        let mut results = Vec::new();
        for call in open.tool_calls {
            // A sub-agent that began its turn lives on in its own session
            // (paused at a person's decision, cut short, or finished before
            // its answer reached this log): the resumed turn reattaches it,
            // and its answer is this call's one result.
            if call.tool == crate::delegation::DELEGATE
                && let Some((_, child, _)) = super::folds::agent_of_call(&events, &call.call_id)
                && self
                    .store
                    .read(&child, 0, 16)
                    .await?
                    .iter()
                    .any(|e| matches!(e.event, Event::TurnStarted { .. }))
            {
                continue;
            }
            tracing::warn!(call = %call.call_id, tool = %call.tool, "recording an interrupted tool call");
            results.push(Event::ToolResult {
                call_id: call.call_id,
                status: ToolStatus::Error,
                source: ResultSource::Interrupted,
                content: tool_error_content(
                    &codes::CALL_INTERRUPTED,
                    "The process stopped while this call ran. It was not run again; check its effect before repeating it.",
                ),
                artifact: None,
                operation_id: None,
                undo: false,
                duration_ms: 0,
                    seen: None,
            });
        }
        if !results.is_empty() {
            self.append(results).await?;
        }
        Ok(())
    }
}
