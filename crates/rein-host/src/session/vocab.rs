//! The session host's vocabulary: the two channels' traits, the modes and who
//! holds a session (`rein_wire::hosted`, shared with every surface), where
//! input went and why it was refused, and the
//! events and records a host gives out.
//!
//! Not here: the rules that use them (`session`).

use serde::Serialize;

pub use rein_wire::hosted::{InputHolder, Listed, RenderMode};

/// The human half: a terminal rein owns both ends of.
pub trait SessionPty: Send {
    /// Write a person's (or the agent driver's) input.
    fn write(&mut self, data: &[u8]) -> std::io::Result<()>;
    /// Resize the terminal.
    fn resize(&mut self, cols: u16, rows: u16) -> std::io::Result<()>;
    /// Close it (the process is ended).
    fn close(&mut self);
}

/// The framed half: what the agent says. Inbound only, on purpose.
pub trait ProtocolChannel: Send {
    /// Close it.
    fn close(&mut self);
}

/// Why a session was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpenRefusal {
    /// The agent does not support the mode asked for.
    ModeUnavailable,
    /// `acp` needs a protocol channel.
    ProtocolChannelRequired,
    /// `native-tui` cannot have one: a TUI is not also serving a protocol.
    ProtocolChannelForbidden,
    /// A session with this id is open.
    SessionExists,
    /// (A switch) no session with this id is open.
    NoSuchSession,
}

/// Where keystrokes went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// Written to the terminal.
    Pty,
    /// To be sent as a protocol message (a turn or a steer) by its owner.
    Protocol,
}

/// What asking a session to switch its mode did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum SwitchResult {
    /// Its owner was asked to switch it to `to`.
    Asked {
        /// The mode it switches to.
        to: RenderMode,
    },
    /// It has one mode (its program has no other, or nobody owns a switch).
    NotSwitchable,
    /// A turn runs: it switches only between turns.
    TurnRunning,
    /// Someone else holds the session.
    Held {
        /// The holder.
        holder: String,
    },
    /// No such session.
    NoSuchSession,
}

/// How a surface's input was routed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Routing {
    /// No turn was running: it starts one.
    StartTurn,
    /// A turn is running and takes steering: heard at its next step.
    Steer,
    /// A turn is running and does not take steering: held for the next.
    Queued,
}

/// Where a protocol session's program is in its turns, as its driver
/// says ([`SessionHost::turning`](super::SessionHost::turning)): what a
/// line said to it now does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Turning {
    /// A turn runs and hears words at its next step: a line steers it.
    #[default]
    Steers,
    /// A turn runs and hears no words: a line waits for its end and
    /// starts the next turn.
    Queues,
    /// No turn runs and the program stays for the next: a line starts it.
    Waits,
    /// It hears no words now (it takes one request, or its last turn is
    /// done): a line is recorded, not heard.
    Deaf,
}

impl Turning {
    /// How a line said now is routed; `None`: it is not heard.
    pub fn routing(self) -> Option<Routing> {
        match self {
            Turning::Steers => Some(Routing::Steer),
            Turning::Queues => Some(Routing::Queued),
            Turning::Waits => Some(Routing::StartTurn),
            Turning::Deaf => None,
        }
    }
}

/// The result of a surface's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum InputResult {
    /// Routed.
    Routed {
        /// How.
        routing: Routing,
        /// Where.
        delivery: Delivery,
    },
    /// No such session: stop showing it.
    NoSuchSession,
    /// Someone else holds the session: show who, offer nothing else.
    Held {
        /// The holder.
        holder: String,
    },
    /// Nothing there hears it: a protocol session takes a line of words
    /// ([`SessionHost::route_input`](super::SessionHost::route_input)), not
    /// keystrokes, and only while its driver listens. Nothing was sent and
    /// the input did not change hands.
    NotHeard,
}

/// A line of words a viewer said to a protocol session's agent, for its
/// driver to record and deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// Who said it.
    pub viewer: String,
    /// The words.
    pub text: String,
}

/// Retained output for a new viewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The bytes, oldest first.
    pub output: Vec<u8>,
    /// Older output was dropped.
    pub truncated: bool,
}

/// The live, content-free feed.
#[expect(
    missing_docs,
    reason = "the fields are the session, the viewer, counts and the mode, named plainly"
)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionEvent {
    /// Opened.
    Opened { session: String, mode: RenderMode },
    /// A viewer attached.
    Attached {
        session: String,
        viewer: String,
        viewers: usize,
    },
    /// A viewer detached.
    Detached {
        session: String,
        viewer: String,
        viewers: usize,
    },
    /// A surface's input was routed.
    Input { session: String, routing: Routing },
    /// A person took the session over.
    Takeover {
        session: String,
        viewer: String,
        interventions: u32,
    },
    /// A takeover was refused.
    TakeoverRefused {
        session: String,
        viewer: String,
        holder: String,
    },
    /// The person handed it back.
    Released { session: String, viewer: String },
    /// It was switched to another mode (its program restarted in it).
    Switched { session: String, mode: RenderMode },
    /// Closed.
    Closed { session: String },
}

pub use rein_wire::InterventionKind;

/// One durable intervention record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Intervention {
    /// The session.
    pub session: String,
    /// Who.
    pub viewer: String,
    /// What.
    pub kind: InterventionKind,
    /// The holder, for a refusal.
    pub holder: Option<String>,
    /// What the person typed to take over (takeover only, bounded).
    pub data: Option<String>,
}
