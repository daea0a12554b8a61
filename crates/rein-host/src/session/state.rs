//! One hosted session's state and the rules that are its own: what it
//! renders and may render, its terminal and protocol halves, its retained
//! output, who holds its input, where its program is in its turns, and how
//! it is opened and switched between its modes.
//!
//! Not here: the host's map of sessions, its live feed and durable records
//! (`session`), which every rule here reports through its caller.

use std::collections::{BTreeMap, VecDeque};

use super::{
    Delivery, InputHolder, OpenRefusal, OpenRequest, ProtocolChannel, RenderMode, SNAPSHOT_BYTES,
    Said, SessionPty, SwitchResult, Turning,
};

/// A viewer's sink for the session's output.
pub(super) type Viewer = Box<dyn FnMut(&[u8]) + Send>;

/// One session of a host.
pub(super) struct Session {
    pub(super) mode: RenderMode,
    /// The modes its program supports (more than one: switchable).
    pub(super) supports: Vec<RenderMode>,
    /// Where a viewer's request to switch goes (its owner switches it).
    pub(super) switches: Option<tokio::sync::mpsc::Sender<RenderMode>>,
    pub(super) opened_at_ms: i64,
    pub(super) pty: Box<dyn SessionPty>,
    pub(super) protocol: Option<Box<dyn ProtocolChannel>>,
    pub(super) viewers: BTreeMap<String, Viewer>,
    pub(super) retained: VecDeque<u8>,
    pub(super) truncated: bool,
    pub(super) input: InputHolder,
    pub(super) interventions: u32,
    /// Where viewers' words go (a protocol session whose driver listens).
    pub(super) ears: Option<tokio::sync::mpsc::Sender<Said>>,
    /// Where its program is in its turns (what a line does now).
    pub(super) turning: Turning,
    /// Each viewer's terminal size (cols, rows).
    pub(super) sizes: BTreeMap<String, (u16, u16)>,
}

/// A mode's rules: supported by the program, and a protocol channel
/// exactly when the mode is a protocol's (a terminal UI is not also
/// serving a protocol).
fn allowed(supports: &[RenderMode], mode: RenderMode, protocol: bool) -> Result<(), OpenRefusal> {
    if !supports.contains(&mode) {
        return Err(OpenRefusal::ModeUnavailable);
    }
    match (mode, protocol) {
        (RenderMode::Acp | RenderMode::Stream, false) => Err(OpenRefusal::ProtocolChannelRequired),
        (RenderMode::NativeTui, true) => Err(OpenRefusal::ProtocolChannelForbidden),
        _ => Ok(()),
    }
}

impl Session {
    /// A session as `request` opens it, or why not by the mode's rules.
    pub(super) fn open(request: OpenRequest) -> Result<Session, OpenRefusal> {
        allowed(&request.supports, request.mode, request.protocol.is_some())?;
        Ok(Session {
            mode: request.mode,
            supports: request.supports,
            switches: None,
            opened_at_ms: rein_wire::clock::now_ms(),
            pty: request.pty,
            protocol: request.protocol,
            viewers: BTreeMap::new(),
            retained: VecDeque::new(),
            truncated: false,
            input: InputHolder::Agent,
            interventions: 0,
            ears: None,
            turning: Turning::default(),
            sizes: BTreeMap::new(),
        })
    }

    /// Keep `chunk` for a new viewer, the oldest dropped past the bound.
    pub(super) fn retain(&mut self, chunk: &[u8]) {
        self.retained.extend(chunk);
        let over = self.retained.len().saturating_sub(SNAPSHOT_BYTES);
        if over > 0 {
            self.retained.drain(..over);
            self.truncated = true;
        }
    }

    /// Where its input goes in its mode.
    pub(super) fn delivery(&self) -> Delivery {
        match self.mode {
            RenderMode::NativeTui => Delivery::Pty,
            RenderMode::Acp | RenderMode::Stream => Delivery::Protocol,
        }
    }

    /// `viewer` asks to switch it to its other mode: the mode its owner was
    /// asked to switch to, or why not (someone else holds it, it has one
    /// mode or no owner hears, a stream's turn runs).
    pub(super) fn ask_switch(&self, viewer: &str) -> Result<RenderMode, SwitchResult> {
        if let InputHolder::Person { viewer: holder, .. } = &self.input
            && holder != viewer
        {
            return Err(SwitchResult::Held {
                holder: holder.clone(),
            });
        }
        let Some(to) = self.supports.iter().copied().find(|m| *m != self.mode) else {
            return Err(SwitchResult::NotSwitchable);
        };
        if self.delivery() == Delivery::Protocol && self.turning != Turning::Waits {
            return Err(SwitchResult::TurnRunning);
        }
        let asked = self.switches.as_ref().is_some_and(|tx| {
            !matches!(
                tx.try_send(to),
                Err(tokio::sync::mpsc::error::TrySendError::Closed(_))
            )
        });
        if asked {
            Ok(to)
        } else {
            Err(SwitchResult::NotSwitchable)
        }
    }

    /// Switch it to `mode` with the halves of the program now running in
    /// it (the old ones dropped unclosed: their program has ended), its
    /// viewers told; the person who held it, released.
    pub(super) fn switch(
        &mut self,
        mode: RenderMode,
        pty: Box<dyn SessionPty>,
        protocol: Option<Box<dyn ProtocolChannel>>,
    ) -> Result<Option<String>, OpenRefusal> {
        allowed(&self.supports, mode, protocol.is_some())?;
        self.mode = mode;
        self.pty = pty;
        self.protocol = protocol;
        self.turning = Turning::default();
        let note = format!("\r\n[rein] now in {}\r\n", mode.as_str());
        self.retain(note.as_bytes());
        for viewer in self.viewers.values_mut() {
            viewer(note.as_bytes());
        }
        Ok(
            match std::mem::replace(&mut self.input, InputHolder::Agent) {
                InputHolder::Person { viewer, .. } => Some(viewer),
                InputHolder::Agent => None,
            },
        )
    }
}
