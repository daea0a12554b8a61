//! The session host: every hosted session owns a terminal, and — when the
//! agent speaks a protocol — a separate inbound channel for its framed
//! messages. A person can watch from several surfaces at once and take the
//! session over by typing.
//!
//! Two channels because a terminal is not a byte pipe: it is free to
//! re-render `\r\n\r\n` as a cursor move and `\n` as `\r\n`, which breaks a
//! byte-counted protocol. So [`SessionPty`] (what a person reads and types
//! into) and [`ProtocolChannel`] (what the agent says, inbound only — no
//! `send`: a prompt, a steer or an approval each has its own path) are
//! distinct types with no conversion, and "send the JSON-RPC through the
//! terminal" cannot be written.
//!
//! The rules kept here:
//! - What renders is a mode, and the modes are exclusive, checked at
//!   [`SessionHost::open`] with named refusals: a `native-tui` session has
//!   no protocol channel, an `acp` or `stream` session must have one, the
//!   agent must support the mode, and an id is opened once.
//! - Attach is live and plural (not resume): each viewer gets the retained
//!   output as a bounded [`Snapshot`] that says when older output is gone,
//!   then every new chunk; attach and detach are events with viewer counts.
//! - A protocol session takes words, not keystrokes: a surface's line goes
//!   to the session's driver while it listens ([`SessionHost::listen`],
//!   [`SessionHost::route_input`]), with a named result ([`InputResult`]);
//!   while a person holds the session it is refused, naming the holder;
//!   with nobody listening it is `not_heard`. Words never take the input.
//! - **Takeover by typing** (a terminal session): a person's keystroke takes
//!   the input at once (no request and wait); a second person's is
//!   refused, naming the holder, and the refusal is recorded. A keystroke
//!   into a protocol session is not heard and takes nothing; a viewer's
//!   terminal answering the program by itself ([`replies`]) takes nothing
//!   either ([`SessionHost::typed`]).
//! - Each viewer's terminal size is kept; the holder's is the terminal's,
//!   and with nobody holding it, the latest one sent. While a person holds it, the
//!   agent's side may not write input ([`SessionHost::agent_input`]); the
//!   agent's output is never gated. Only the holder releases.
//! - Interventions (takeover, release, refused takeover) go to the durable
//!   record with what was typed; the live feed ([`SessionEvent`]) is
//!   content-free.
//!
//! Not here: spawning the process (`pty.rs`), the protocol itself (ACP).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

pub mod replies;
mod state;
mod vocab;

use state::Session;

pub use vocab::*;

/// Output retained per session for a new viewer.
pub const SNAPSHOT_BYTES: usize = 256 * 1024;

/// Viewers' words a driver has not taken yet, at most; more are not heard.
pub const MAX_WAITING_WORDS: usize = 16;

/// Viewers' terminal sizes kept per session, at most.
const MAX_SIZES: usize = 64;

/// What a takeover records of the keystrokes that made it, at most.
pub const MAX_RECORDED_INPUT: usize = 4096;

/// The sessions of a host. Cheap to clone; all clones share them.
#[derive(Clone, Default)]
pub struct SessionHost {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    sessions: BTreeMap<String, Session>,
    events: Option<Box<dyn FnMut(SessionEvent) + Send>>,
    record: Option<Box<dyn FnMut(Intervention) + Send>>,
}

impl Inner {
    fn emit(&mut self, event: SessionEvent) {
        if let Some(sink) = self.events.as_mut() {
            sink(event);
        }
    }

    fn record(&mut self, entry: Intervention) {
        if let Some(sink) = self.record.as_mut() {
            sink(entry);
        }
    }
}

/// What opening a session needs.
pub struct OpenRequest {
    /// Its id.
    pub session: String,
    /// The modes the agent supports.
    pub supports: Vec<RenderMode>,
    /// The mode asked for.
    pub mode: RenderMode,
    /// Its terminal.
    pub pty: Box<dyn SessionPty>,
    /// Its protocol channel: required for `acp`, refused for `native-tui`.
    pub protocol: Option<Box<dyn ProtocolChannel>>,
}

impl SessionHost {
    /// A host with no sessions.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A viewer that panicked mid-write leaves plain data behind.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Where the live, content-free events go.
    pub fn on_event(&self, sink: impl FnMut(SessionEvent) + Send + 'static) {
        self.lock().events = Some(Box::new(sink));
    }

    /// Where interventions go to become a durable record.
    pub fn on_intervention(&self, sink: impl FnMut(Intervention) + Send + 'static) {
        self.lock().record = Some(Box::new(sink));
    }

    /// Open a session, or say by name why not.
    pub fn open(&self, request: OpenRequest) -> Result<(), OpenRefusal> {
        let mut inner = self.lock();
        if inner.sessions.contains_key(&request.session) {
            return Err(OpenRefusal::SessionExists);
        }
        let (id, mode) = (request.session.clone(), request.mode);
        inner.sessions.insert(id.clone(), Session::open(request)?);
        inner.emit(SessionEvent::Opened { session: id, mode });
        Ok(())
    }

    /// The agent's output (never gated): retained and sent to every viewer.
    pub fn output(&self, session: &str, chunk: &[u8]) {
        let mut inner = self.lock();
        if let Some(s) = inner.sessions.get_mut(session) {
            s.retain(chunk);
            for viewer in s.viewers.values_mut() {
                viewer(chunk);
            }
        }
    }

    /// Add a live viewer: the snapshot now, every chunk after. `None` when
    /// there is no such session.
    pub fn attach(
        &self,
        session: &str,
        viewer: &str,
        sink: impl FnMut(&[u8]) + Send + 'static,
    ) -> Option<Snapshot> {
        let mut inner = self.lock();
        let s = inner.sessions.get_mut(session)?;
        s.viewers.insert(viewer.to_owned(), Box::new(sink));
        let snapshot = Snapshot {
            output: s.retained.iter().copied().collect(),
            truncated: s.truncated,
        };
        let viewers = s.viewers.len();
        inner.emit(SessionEvent::Attached {
            session: session.to_owned(),
            viewer: viewer.to_owned(),
            viewers,
        });
        Some(snapshot)
    }

    /// Remove a viewer (a holder's lease stays until released).
    pub fn detach(&self, session: &str, viewer: &str) -> bool {
        let mut inner = self.lock();
        let Some(s) = inner.sessions.get_mut(session) else {
            return false;
        };
        if s.viewers.remove(viewer).is_none() {
            return false;
        }
        let viewers = s.viewers.len();
        inner.emit(SessionEvent::Detached {
            session: session.to_owned(),
            viewer: viewer.to_owned(),
            viewers,
        });
        true
    }

    /// The retained output (the read half of attach, for a surface that polls).
    pub fn snapshot(&self, session: &str) -> Option<Snapshot> {
        let inner = self.lock();
        let s = inner.sessions.get(session)?;
        Some(Snapshot {
            output: s.retained.iter().copied().collect(),
            truncated: s.truncated,
        })
    }

    /// The session's driver hears viewers' words from now on (a protocol
    /// session whose agent takes them mid-run); the words come here, at
    /// most [`MAX_WAITING_WORDS`] unheard at once. `None` for a terminal
    /// session or no such session. Dropping the receiver stops listening.
    pub fn listen(&self, session: &str) -> Option<tokio::sync::mpsc::Receiver<Said>> {
        let mut inner = self.lock();
        let s = inner.sessions.get_mut(session)?;
        if s.delivery() != Delivery::Protocol {
            return None;
        }
        let (ears, words) = tokio::sync::mpsc::channel(MAX_WAITING_WORDS);
        s.ears = Some(ears);
        Some(words)
    }

    /// The session's driver says where its program is in its turns; a
    /// line said from now on is routed by it ([`Turning::routing`]).
    pub fn turning(&self, session: &str, turning: Turning) {
        if let Some(s) = self.lock().sessions.get_mut(session) {
            s.turning = turning;
        }
    }

    /// A surface's line of words for a protocol session's agent: sent to its
    /// driver, which records it and, by where the program is in its turns,
    /// steers the running turn with it, queues it for the next turn or
    /// starts a turn with it. It never takes the input; while a person
    /// holds the session only they may speak, and with no driver listening
    /// (or a program that takes no more words) nothing is sent.
    pub fn route_input(&self, session: &str, viewer: &str, text: &str) -> InputResult {
        let mut inner = self.lock();
        let Some(s) = inner.sessions.get(session) else {
            return InputResult::NoSuchSession;
        };
        if let InputHolder::Person { viewer: holder, .. } = &s.input
            && holder != viewer
        {
            return InputResult::Held {
                holder: holder.clone(),
            };
        }
        let Some(routing) = s.turning.routing() else {
            return InputResult::NotHeard;
        };
        let said = Said {
            viewer: viewer.to_owned(),
            text: text.to_owned(),
        };
        let heard = s
            .ears
            .as_ref()
            .is_some_and(|ears| ears.try_send(said).is_ok());
        if !heard {
            return InputResult::NotHeard;
        }
        inner.emit(SessionEvent::Input {
            session: session.to_owned(),
            routing,
        });
        InputResult::Routed {
            routing,
            delivery: Delivery::Protocol,
        }
    }

    /// A person typed into a terminal session. The first keystroke takes
    /// the input and the terminal takes its size; the keystrokes go to the
    /// terminal. Another person holding it refuses, naming them; a protocol
    /// session hears no keystrokes (`not_heard`, nothing taken).
    pub fn take_over(
        &self,
        session: &str,
        viewer: &str,
        data: &[u8],
    ) -> Result<(InputHolder, Delivery), InputResult> {
        let mut inner = self.lock();
        let Some(s) = inner.sessions.get_mut(session) else {
            return Err(InputResult::NoSuchSession);
        };
        if s.delivery() == Delivery::Protocol {
            return Err(InputResult::NotHeard);
        }
        if let InputHolder::Person { viewer: holder, .. } = &s.input
            && holder != viewer
        {
            let holder = holder.clone();
            inner.emit(SessionEvent::TakeoverRefused {
                session: session.to_owned(),
                viewer: viewer.to_owned(),
                holder: holder.clone(),
            });
            inner.record(Intervention {
                session: session.to_owned(),
                viewer: viewer.to_owned(),
                kind: InterventionKind::Refused,
                holder: Some(holder.clone()),
                data: None,
            });
            return Err(InputResult::Held { holder });
        }
        let took = s.input == InputHolder::Agent;
        if took {
            s.interventions = s.interventions.saturating_add(1);
            s.input = InputHolder::Person {
                viewer: viewer.to_owned(),
                interventions: s.interventions,
            };
            if let Some(&(cols, rows)) = s.sizes.get(viewer) {
                let _ = s.pty.resize(cols, rows);
            }
        }
        let delivery = s.delivery();
        // A write the terminal refuses (the process is gone) changes
        // nothing about who holds it.
        let _ = s.pty.write(data);
        let input = s.input.clone();
        if took {
            let interventions = s.interventions;
            inner.emit(SessionEvent::Takeover {
                session: session.to_owned(),
                viewer: viewer.to_owned(),
                interventions,
            });
            let cut = &data[..data.len().min(MAX_RECORDED_INPUT)];
            inner.record(Intervention {
                session: session.to_owned(),
                viewer: viewer.to_owned(),
                kind: InterventionKind::Takeover,
                holder: None,
                data: Some(String::from_utf8_lossy(cut).into_owned()),
            });
        }
        Ok((input, delivery))
    }

    /// A viewer's keystrokes into a terminal session, its terminal's own
    /// answers among them ([`replies`]): the answers reach the program
    /// while nobody holds the session or this viewer does (dropped while
    /// another holds it) and never take it over; what was typed is a
    /// [`SessionHost::take_over`]. `Ok(None)`: only answers, nothing taken.
    pub fn typed(
        &self,
        session: &str,
        viewer: &str,
        data: &[u8],
    ) -> Result<Option<(InputHolder, Delivery)>, InputResult> {
        let (answers, typed) = replies::split(data);
        if !answers.is_empty() {
            let mut inner = self.lock();
            let Some(s) = inner.sessions.get_mut(session) else {
                return Err(InputResult::NoSuchSession);
            };
            let heard = match &s.input {
                InputHolder::Agent => true,
                InputHolder::Person { viewer: holder, .. } => holder == viewer,
            };
            if heard && s.delivery() == Delivery::Pty {
                let _ = s.pty.write(&answers);
            }
        }
        if typed.is_empty() {
            return Ok(None);
        }
        self.take_over(session, viewer, &typed).map(Some)
    }

    /// The person hands the session back. Only the holder may.
    pub fn release(&self, session: &str, viewer: &str) -> bool {
        let mut inner = self.lock();
        let Some(s) = inner.sessions.get_mut(session) else {
            return false;
        };
        if !matches!(&s.input, InputHolder::Person { viewer: holder, .. } if holder == viewer) {
            return false;
        }
        s.input = InputHolder::Agent;
        inner.emit(SessionEvent::Released {
            session: session.to_owned(),
            viewer: viewer.to_owned(),
        });
        inner.record(Intervention {
            session: session.to_owned(),
            viewer: viewer.to_owned(),
            kind: InterventionKind::Released,
            holder: None,
            data: None,
        });
        true
    }

    /// Whether the agent's side may write input now (no person holds it).
    pub fn agent_may_write(&self, session: &str) -> bool {
        let inner = self.lock();
        inner
            .sessions
            .get(session)
            .is_some_and(|s| s.input == InputHolder::Agent)
    }

    /// The agent driver's input, written only while no person holds the
    /// session; `Err` names the holder otherwise.
    pub fn agent_input(&self, session: &str, data: &[u8]) -> Result<(), InputResult> {
        let mut inner = self.lock();
        let Some(s) = inner.sessions.get_mut(session) else {
            return Err(InputResult::NoSuchSession);
        };
        match &s.input {
            InputHolder::Person { viewer, .. } => Err(InputResult::Held {
                holder: viewer.clone(),
            }),
            InputHolder::Agent => {
                let _ = s.pty.write(data);
                Ok(())
            }
        }
    }

    /// The session as a list shows it: its mode, when it opened, who
    /// watches and who holds it; `None` when it is not open here.
    pub fn listed(&self, session: &str) -> Option<Listed> {
        let inner = self.lock();
        let s = inner.sessions.get(session)?;
        Some(Listed {
            session: session.to_owned(),
            mode: s.mode,
            switchable: s.supports.len() > 1 && s.switches.is_some(),
            opened_at_ms: s.opened_at_ms,
            viewers: s.viewers.keys().cloned().collect(),
            holder: s.input.clone(),
        })
    }

    /// A viewer's terminal is `cols` × `rows`. The session's terminal
    /// takes it when that viewer holds the session, or nobody does; a
    /// holder's size wins over everyone else's. `true` when it was applied.
    pub fn resize(&self, session: &str, viewer: &str, cols: u16, rows: u16) -> bool {
        let mut inner = self.lock();
        let Some(s) = inner.sessions.get_mut(session) else {
            return false;
        };
        if s.sizes.len() >= MAX_SIZES && !s.sizes.contains_key(viewer) {
            s.sizes.pop_first();
        }
        s.sizes.insert(viewer.to_owned(), (cols, rows));
        let applies = match &s.input {
            InputHolder::Agent => true,
            InputHolder::Person { viewer: holder, .. } => holder == viewer,
        };
        applies && s.pty.resize(cols, rows).is_ok()
    }

    /// The session's owner hears viewers' requests to switch its mode from
    /// now on (at most one waiting); `None` for a session of one mode or
    /// no such session. Dropping the receiver stops hearing them.
    pub fn on_switch(&self, session: &str) -> Option<tokio::sync::mpsc::Receiver<RenderMode>> {
        let mut inner = self.lock();
        let s = inner.sessions.get_mut(session)?;
        if s.supports.len() < 2 {
            return None;
        }
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        s.switches = Some(tx);
        Some(rx)
    }

    /// A viewer asks that the session switch to its other mode: from a
    /// protocol stream only between turns (never both at once, never a
    /// turn cut short), from the program's terminal UI at any time (it is
    /// ended, and its conversation resumed in the stream). Only the holder,
    /// if someone holds it, may ask.
    pub fn ask_switch(&self, session: &str, viewer: &str) -> SwitchResult {
        let mut inner = self.lock();
        let Some(s) = inner.sessions.get(session) else {
            return SwitchResult::NoSuchSession;
        };
        let to = match s.ask_switch(viewer) {
            Ok(to) => to,
            Err(refused) => return refused,
        };
        inner.record(Intervention {
            session: session.to_owned(),
            viewer: viewer.to_owned(),
            kind: InterventionKind::Switched,
            holder: None,
            data: Some(to.as_str().to_owned()),
        });
        SwitchResult::Asked { to }
    }

    /// The owner switches the session to `mode`, with the terminal and
    /// channel of the program now running in it (the old ones are dropped
    /// unclosed: their program has ended). The mode's rules hold as at
    /// open; viewers stay attached and are told; a person holding the old
    /// mode's input is released (recorded).
    pub fn switch(
        &self,
        session: &str,
        mode: RenderMode,
        pty: Box<dyn SessionPty>,
        protocol: Option<Box<dyn ProtocolChannel>>,
    ) -> Result<(), OpenRefusal> {
        let mut inner = self.lock();
        let Some(s) = inner.sessions.get_mut(session) else {
            return Err(OpenRefusal::NoSuchSession);
        };
        if let Some(viewer) = s.switch(mode, pty, protocol)? {
            inner.emit(SessionEvent::Released {
                session: session.to_owned(),
                viewer: viewer.clone(),
            });
            inner.record(Intervention {
                session: session.to_owned(),
                viewer,
                kind: InterventionKind::Released,
                holder: None,
                data: None,
            });
        }
        inner.emit(SessionEvent::Switched {
            session: session.to_owned(),
            mode,
        });
        Ok(())
    }

    /// Close a session: its terminal and channel closed, viewers dropped.
    pub fn close(&self, session: &str) -> bool {
        let mut inner = self.lock();
        let Some(mut s) = inner.sessions.remove(session) else {
            return false;
        };
        s.pty.close();
        if let Some(p) = s.protocol.as_mut() {
            p.close();
        }
        inner.emit(SessionEvent::Closed {
            session: session.to_owned(),
        });
        true
    }
}
