//! A protocol agent's run as a session of the session host, for viewers.
//!
//! An agent driven through a protocol (ACP, or a CLI's JSON stream) has no
//! screen of its own: its session's terminal half renders what the run
//! says — progress lines and the answer's words, made visible — and takes
//! no keystrokes: a viewer's line of words goes to the run's driver
//! (`listen`), which records it and says it through the protocol. Its protocol half stands for the agent's channel;
//! closing the session closes it, which stops the run.
//!
//! Not here: the rules of sessions (`session`), driving (`driver.rs`,
//! `acp.rs`).

use rein_wire::AgentError;
use tokio_util::sync::CancellationToken;

use crate::progress::ProgressKind;
use crate::reducer::Step;
use crate::session::{OpenRequest, ProtocolChannel, RenderMode, SessionHost, SessionPty};

/// The terminal half: renders, takes no input.
struct RenderedTerminal;

impl SessionPty for RenderedTerminal {
    fn write(&mut self, _: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other(
            "this session's terminal only renders; its agent takes input through its protocol",
        ))
    }
    fn resize(&mut self, _: u16, _: u16) -> std::io::Result<()> {
        Ok(())
    }
    fn close(&mut self) {}
}

/// The protocol half: closing it stops the run.
struct RunChannel(CancellationToken);

impl ProtocolChannel for RunChannel {
    fn close(&mut self) {
        self.0.cancel();
    }
}

/// A run's open session; closed when dropped, unless it is a switchable
/// session's (its owner closes it).
pub(crate) struct View {
    host: SessionHost,
    session: String,
    mode: RenderMode,
    /// The session outlives this run (a switchable session's stream).
    kept: bool,
}

impl View {
    /// Open `session` in `mode` (`acp` or `stream`); closing it cancels
    /// `stop`. A `switchable` session also supports the program's own
    /// terminal UI, and one open already (a switch back) is switched to
    /// `mode` rather than opened.
    pub(crate) fn open(
        host: SessionHost,
        session: String,
        mode: RenderMode,
        stop: &CancellationToken,
        switchable: bool,
    ) -> Result<View, AgentError> {
        let pty = Box::new(RenderedTerminal);
        let protocol = Some(Box::new(RunChannel(stop.clone())) as Box<dyn ProtocolChannel>);
        let opened = if switchable && host.listed(&session).is_some() {
            host.switch(&session, mode, pty, protocol)
        } else {
            let supports = if switchable {
                vec![mode, RenderMode::NativeTui]
            } else {
                vec![mode]
            };
            host.open(OpenRequest {
                session: session.clone(),
                supports,
                mode,
                pty,
                protocol,
            })
        };
        opened.map_err(|why| {
            AgentError::new(
                rein_wire::error::codes::SESSION_REFUSED,
                format!("the session cannot be opened: {why:?}"),
            )
        })?;
        Ok(View {
            host,
            session,
            mode,
            kept: switchable,
        })
    }

    /// Hear viewers' requests to switch the session's mode.
    pub(crate) fn switches(&self) -> Option<tokio::sync::mpsc::Receiver<RenderMode>> {
        self.host.on_switch(&self.session)
    }

    /// Hear the lines viewers say to the agent (`SessionHost::listen`).
    pub(crate) fn listen(&self) -> Option<tokio::sync::mpsc::Receiver<crate::session::Said>> {
        self.host.listen(&self.session)
    }

    /// Tell the session where the program is in its turns (what a
    /// viewer's line does now).
    pub(crate) fn turning(&self, turning: crate::session::Turning) {
        self.host.turning(&self.session, turning);
    }

    /// Render the answer's `words` (if any) and the steps' progress; a
    /// stream's answer arrives whole with its turn's result.
    pub(crate) fn show(&self, words: Option<&str>, steps: &[Step]) {
        let mut out = String::new();
        if let Some(words) = words {
            out.push_str(&rein_wire::visible::visible(words).replace('\n', "\r\n"));
        }
        for step in steps {
            match step {
                Step::Progress(p)
                    if !matches!(p.kind, ProgressKind::Activity | ProgressKind::AssistantText) =>
                {
                    out.push_str(&format!("\r\n.. {p}\r\n"));
                }
                Step::TurnClosed(turn) if self.mode == RenderMode::Stream => {
                    if let Some(text) = &turn.text {
                        out.push_str(&rein_wire::visible::visible(text).replace('\n', "\r\n"));
                        out.push_str("\r\n");
                    }
                }
                _ => {}
            }
        }
        if !out.is_empty() {
            self.host.output(&self.session, out.as_bytes());
        }
    }
}

impl Drop for View {
    fn drop(&mut self) {
        if !self.kept {
            self.host.close(&self.session);
        }
    }
}
