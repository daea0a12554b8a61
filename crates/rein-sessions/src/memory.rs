//! [`MemoryStore`]: the [`Store`] semantics in memory, for tests and
//! short-lived embedding. Nothing survives the process.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use rein_wire::{AgentError, error::codes};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::artifact::{check_hash, hash_hex, slice_of};
use crate::event::{Event, NewEvent, StoredEvent};
use crate::projection::{Numbered, number, replay};
use crate::store::{ArtifactRef, ControlRecord, SessionInfo, SessionLock, Slice, Store, TurnInfo};
use crate::validate::{already_there, check_append, check_import, now_ms};

#[derive(Default)]
struct Session {
    info: Option<SessionInfo>,
    events: Vec<StoredEvent>,
    turns: Vec<TurnInfo>,
    control: ControlRecord,
    lease: Option<SessionLock>,
    /// The inbox: (entry, taken).
    inbox: Vec<(crate::InboxEntry, bool)>,
}

#[derive(Default)]
struct Inner {
    sessions: HashMap<String, Session>,
    /// The last inbox number given (across sessions, like SQLite's).
    next_inbox: u64,
    order: Vec<String>,
    artifacts: HashMap<String, (ArtifactRef, Vec<u8>)>,
    /// Turn id -> session id.
    turn_owner: HashMap<String, String>,
    /// Appends committed (each a durable point in a real store).
    commits: u64,
    /// Events handed out by `read`.
    events_read: u64,
}

/// An in-memory [`Store`].
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    channels: crate::subscribe::Channels,
}

impl MemoryStore {
    /// Post `item` to `session`'s inbox (see [`Store::post`]).
    fn post_locked(&self, session: &str, item: crate::InboxItem) -> Result<u64, AgentError> {
        let mut inner = self.lock();
        let next = inner.next_inbox + 1;
        let s = inner
            .sessions
            .get_mut(session)
            .ok_or_else(|| not_found(session))?;
        if let Some(approval) = item.approval_id()
            && s.inbox
                .iter()
                .any(|(e, _)| e.item.approval_id() == Some(approval))
        {
            return Err(crate::validate::already_decided(approval));
        }
        s.inbox.push((
            crate::InboxEntry {
                id: next,
                at_ms: now_ms(),
                item,
            },
            false,
        ));
        inner.next_inbox = next;
        Ok(next)
    }

    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    /// How many appends it has committed (sessions created, appends,
    /// inbox takes): in a durable store, each is a commit and an fsync.
    pub fn commits(&self) -> u64 {
        self.lock().commits
    }

    /// How many events `read` has handed out, over all sessions: what a
    /// durable store would have fetched from its file or server.
    pub fn events_read(&self) -> u64 {
        self.lock().events_read
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `Ok` while `lease` is still held (`lock_lost` otherwise).
fn held(inner: &Inner, lease: &SessionLock) -> Result<(), AgentError> {
    let session = inner
        .sessions
        .get(&lease.session_id)
        .ok_or_else(|| not_found(&lease.session_id))?;
    let live = session
        .lease
        .as_ref()
        .is_some_and(|l| l.token == lease.token && l.expires_ms > now_ms());
    if live {
        Ok(())
    } else {
        Err(crate::validate::lock_lost(&lease.session_id))
    }
}

fn not_found(id: &str) -> AgentError {
    AgentError::new(
        codes::SESSION_NOT_FOUND,
        format!("no session has the id `{id}`"),
    )
}

fn append_locked(
    inner: &mut Inner,
    session_id: &str,
    events: Vec<NewEvent>,
) -> Result<Vec<StoredEvent>, AgentError> {
    let Inner {
        sessions,
        turn_owner,
        commits,
        ..
    } = inner;
    let session = sessions
        .get_mut(session_id)
        .ok_or_else(|| not_found(session_id))?;
    let info = session.info.as_mut().ok_or_else(|| not_found(session_id))?;
    let owner = |turn: &str| turn_owner.get(turn).cloned();
    check_append(session_id, &events, &owner)?;
    let Numbered {
        stored,
        changes,
        head_turn,
        control,
    } = number(
        session_id,
        info.head_seq,
        info.head_turn.clone(),
        session.control.clone(),
        events,
        now_ms(),
    );
    let mut turns = session.turns.clone();
    for change in changes {
        change.apply_to(&mut turns);
    }
    // All checks passed: commit.
    *commits += 1;
    for turn in &turns[session.turns.len()..] {
        turn_owner.insert(turn.id.clone(), session_id.to_owned());
    }
    info.head_seq += stored.len() as u64;
    info.head_turn = head_turn;
    session.control = control;
    session.turns = turns;
    session.events.extend(stored.iter().cloned());
    Ok(stored)
}

#[async_trait]
impl Store for MemoryStore {
    async fn create_session(&self, metadata: Value) -> Result<SessionInfo, AgentError> {
        let id = rein_wire::ids::new_id();
        let stored = {
            let mut inner = self.lock();
            inner.sessions.insert(
                id.clone(),
                Session {
                    info: Some(SessionInfo {
                        id: id.clone(),
                        created_ms: now_ms(),
                        metadata: metadata.clone(),
                        head_seq: 0,
                        head_turn: None,
                    }),
                    ..Session::default()
                },
            );
            inner.order.push(id.clone());
            append_locked(
                &mut inner,
                &id,
                vec![NewEvent::main(Event::SessionCreated { metadata })],
            )?
        };
        self.channels.publish(&id, &stored);
        self.session(&id).await
    }

    async fn session(&self, id: &str) -> Result<SessionInfo, AgentError> {
        self.lock()
            .sessions
            .get(id)
            .and_then(|s| s.info.clone())
            .ok_or_else(|| not_found(id))
    }

    async fn list_sessions(&self, limit: usize) -> Result<Vec<SessionInfo>, AgentError> {
        let inner = self.lock();
        Ok(inner
            .order
            .iter()
            .rev()
            .take(limit)
            .filter_map(|id| inner.sessions.get(id).and_then(|s| s.info.clone()))
            .collect())
    }

    async fn sessions_where(
        &self,
        key: &str,
        value: &str,
        limit: usize,
    ) -> Result<Vec<SessionInfo>, AgentError> {
        let key = crate::store::metadata_key(key)?;
        let inner = self.lock();
        Ok(inner
            .order
            .iter()
            .rev()
            .filter_map(|id| inner.sessions.get(id).and_then(|s| s.info.clone()))
            .filter(|info| info.metadata.get(key).and_then(Value::as_str) == Some(value))
            .take(limit)
            .collect())
    }

    async fn append(
        &self,
        lease: &SessionLock,
        events: Vec<NewEvent>,
    ) -> Result<Vec<StoredEvent>, AgentError> {
        let stored = {
            let mut inner = self.lock();
            held(&inner, lease)?;
            append_locked(&mut inner, &lease.session_id, events)?
        };
        self.channels.publish(&lease.session_id, &stored);
        Ok(stored)
    }

    async fn post(&self, session: &str, item: crate::InboxItem) -> Result<u64, AgentError> {
        let posted = self.post_locked(session, item)?;
        self.channels.notify_posted(session);
        Ok(posted)
    }

    fn posted(&self, session: &str) -> crate::Posted {
        self.channels.posted(session)
    }

    async fn inbox(&self, session: &str) -> Result<Vec<crate::InboxEntry>, AgentError> {
        let inner = self.lock();
        let s = inner
            .sessions
            .get(session)
            .ok_or_else(|| not_found(session))?;
        Ok(s.inbox
            .iter()
            .filter(|(_, taken)| !taken)
            .map(|(e, _)| e.clone())
            .collect())
    }

    async fn take_inbox(
        &self,
        lease: &SessionLock,
        upto: u64,
        events: Vec<NewEvent>,
    ) -> Result<Vec<StoredEvent>, AgentError> {
        let stored = {
            let mut inner = self.lock();
            held(&inner, lease)?;
            let stored = append_locked(&mut inner, &lease.session_id, events)?;
            if let Some(s) = inner.sessions.get_mut(&lease.session_id) {
                for (entry, taken) in &mut s.inbox {
                    if entry.id <= upto {
                        *taken = true;
                    }
                }
            }
            stored
        };
        self.channels.publish(&lease.session_id, &stored);
        Ok(stored)
    }

    async fn read(
        &self,
        session: &str,
        from: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, AgentError> {
        let mut inner = self.lock();
        let s = inner
            .sessions
            .get(session)
            .ok_or_else(|| not_found(session))?;
        let start = usize::try_from(from.saturating_sub(1))
            .unwrap_or(usize::MAX)
            .min(s.events.len());
        let events: Vec<StoredEvent> = s.events[start..].iter().take(limit).cloned().collect();
        inner.events_read += events.len() as u64;
        Ok(events)
    }

    fn subscribe(&self, session: &str) -> broadcast::Receiver<StoredEvent> {
        self.channels.subscribe(session)
    }

    async fn turns(&self, session: &str) -> Result<Vec<TurnInfo>, AgentError> {
        let inner = self.lock();
        Ok(inner
            .sessions
            .get(session)
            .ok_or_else(|| not_found(session))?
            .turns
            .clone())
    }

    async fn control(&self, session: &str) -> Result<ControlRecord, AgentError> {
        let inner = self.lock();
        Ok(inner
            .sessions
            .get(session)
            .ok_or_else(|| not_found(session))?
            .control
            .clone())
    }

    async fn acquire(
        &self,
        session: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<SessionLock, AgentError> {
        let mut inner = self.lock();
        let s = inner
            .sessions
            .get_mut(session)
            .ok_or_else(|| not_found(session))?;
        let now = now_ms();
        if let Some(current) = &s.lease
            && !crate::validate::may_take_over(current, now)
        {
            return Err(crate::validate::locked(current));
        }
        let lease = crate::validate::new_lease(session, holder, ttl, now);
        s.lease = Some(lease.clone());
        Ok(lease)
    }

    async fn renew(&self, lease: &SessionLock, ttl: Duration) -> Result<SessionLock, AgentError> {
        let mut inner = self.lock();
        let s = inner
            .sessions
            .get_mut(&lease.session_id)
            .ok_or_else(|| not_found(&lease.session_id))?;
        let now = now_ms();
        match &mut s.lease {
            Some(current) if current.token == lease.token && current.expires_ms > now => {
                current.expires_ms = now + crate::validate::ttl_ms(ttl);
                Ok(current.clone())
            }
            _ => Err(crate::validate::lock_lost(&lease.session_id)),
        }
    }

    async fn release(&self, lease: &SessionLock) -> Result<(), AgentError> {
        let mut inner = self.lock();
        if let Some(s) = inner.sessions.get_mut(&lease.session_id)
            && s.lease.as_ref().is_some_and(|l| l.token == lease.token)
        {
            s.lease = None;
        }
        Ok(())
    }

    async fn put_artifact(
        &self,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<ArtifactRef, AgentError> {
        let hash = hash_hex(bytes);
        let mut inner = self.lock();
        let entry = inner.artifacts.entry(hash.clone()).or_insert_with(|| {
            (
                ArtifactRef {
                    hash,
                    size: bytes.len() as u64,
                    media_type: media_type.to_owned(),
                },
                bytes.to_vec(),
            )
        });
        Ok(entry.0.clone())
    }

    async fn read_artifact(&self, hash: &str, slice: Slice) -> Result<Vec<u8>, AgentError> {
        check_hash(hash)?;
        let inner = self.lock();
        let (_, bytes) = inner.artifacts.get(hash).ok_or_else(|| {
            AgentError::new(
                codes::ARTIFACT_NOT_FOUND,
                format!("no artifact has the hash {hash}"),
            )
        })?;
        Ok(slice_of(bytes, slice))
    }

    async fn artifacts(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ArtifactRef>, AgentError> {
        let inner = self.lock();
        let mut refs: Vec<ArtifactRef> = inner
            .artifacts
            .values()
            .map(|(artifact, _)| artifact.clone())
            .filter(|artifact| after.is_none_or(|after| artifact.hash.as_str() > after))
            .collect();
        refs.sort_by(|a, b| a.hash.cmp(&b.hash));
        refs.truncate(limit);
        Ok(refs)
    }

    async fn import(&self, info: &SessionInfo, events: Vec<StoredEvent>) -> Result<(), AgentError> {
        check_import(info, &events)?;
        let (head_turn, turns, control) = replay(&events);
        let mut inner = self.lock();
        if inner
            .sessions
            .get(&info.id)
            .is_some_and(|s| s.info.is_some())
        {
            return Err(already_there(&info.id));
        }
        if let Some(turn) = turns.iter().find(|t| inner.turn_owner.contains_key(&t.id)) {
            return Err(already_there(&info.id).with_field("turn_id", turn.id.clone()));
        }
        for turn in &turns {
            inner.turn_owner.insert(turn.id.clone(), info.id.clone());
        }
        let at = inner.order.partition_point(|id| id < &info.id);
        inner.order.insert(at, info.id.clone());
        inner.commits += 1;
        inner.sessions.insert(
            info.id.clone(),
            Session {
                info: Some(SessionInfo {
                    head_seq: events.len() as u64,
                    head_turn,
                    ..info.clone()
                }),
                events,
                turns,
                control,
                ..Session::default()
            },
        );
        Ok(())
    }
}
