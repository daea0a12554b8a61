//! A program driven through JSON-RPC on its stdio (an ACP agent, Codex's
//! app server): its run opened as a session viewers watch, the program
//! started with its stdio piped, a peer on them.
//!
//! Not here: what is said over it (`acp.rs`, `codex_app.rs`), the process
//! rules (`driver.rs`).

use rein_wire::AgentError;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::driver::{HostSpec, Spawned, spawn};
use crate::jsonrpc::{self, Incoming, Peer};
use crate::session::{RenderMode, SessionHost};
use crate::view::View;

/// The longest message (line) read from a program.
pub const MAX_MESSAGE_BYTES: usize = 8 * 1024 * 1024;

/// A protocol run, started.
pub(crate) struct Connected {
    /// Its session, when viewers watch it (closing it cancels `stop`).
    pub(crate) view: Option<View>,
    /// The program.
    pub(crate) spawned: Spawned,
    /// Its side of the connection.
    pub(crate) peer: Peer,
    /// What it sends.
    pub(crate) incoming: mpsc::Receiver<Incoming>,
    /// The reading task (kept for the run's length).
    pub(crate) reading: tokio::task::JoinHandle<String>,
}

/// Open `view` in `mode`, start `spec`'s program, connect to its stdio.
pub(crate) fn connect(
    spec: &HostSpec,
    view: Option<(SessionHost, String)>,
    mode: RenderMode,
    stop: &CancellationToken,
) -> Result<Connected, AgentError> {
    let view = match view {
        Some((host, session)) => Some(View::open(host, session, mode, stop)?),
        None => None,
    };
    let mut spawned = spawn(spec, true)?;
    let (Some(stdin), Some(stdout)) = (spawned.child.stdin.take(), spawned.child.stdout.take())
    else {
        return Err(AgentError::new(
            rein_wire::error::codes::INTERNAL,
            "the program's stdio was not piped",
        ));
    };
    let (peer, incoming, reading) = jsonrpc::connect(stdout, stdin, MAX_MESSAGE_BYTES);
    Ok(Connected {
        view,
        spawned,
        peer,
        incoming,
        reading,
    })
}
