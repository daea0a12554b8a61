//! A real terminal for a hosted session: the program runs on the slave
//! side of a PTY rein opens; its output is pumped into the [`SessionHost`]
//! (retained, sent to every viewer) by a thread of its own, because a PTY
//! is a blocking file.
//!
//! Not here: the session's rules (`session`).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::thread::JoinHandle;

use portable_pty::{Child, ChildKiller, CommandBuilder, MasterPty, PtySize, native_pty_system};
use rein_wire::AgentError;
use rein_wire::error::codes;

use crate::session::{SessionHost, SessionPty};

/// A program in a PTY.
pub struct PtyTerminal {
    master: Box<dyn MasterPty + Send>,
    writer: Box<dyn Write + Send>,
    killer: Box<dyn ChildKiller + Send + Sync>,
}

/// The program's side: wait for it to end.
pub struct PtyProcess {
    child: Box<dyn Child + Send + Sync>,
    pump: Option<JoinHandle<()>>,
}

impl PtyProcess {
    /// Wait for the program to exit and its output to be pumped; its exit code.
    pub fn wait(mut self) -> Option<u32> {
        let status = self.child.wait().ok();
        if let Some(pump) = self.pump.take() {
            let _ = pump.join();
        }
        status.map(|s| s.exit_code())
    }

    /// The program's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.process_id()
    }

    /// What ends the program from elsewhere while [`PtyProcess::wait`] waits.
    pub fn killer(&self) -> PtyKiller {
        PtyKiller(self.child.clone_killer())
    }
}

/// Ends a program in a PTY.
pub struct PtyKiller(Box<dyn ChildKiller + Send + Sync>);

impl PtyKiller {
    /// End it (nothing, when it ended already).
    pub fn kill(&mut self) {
        let _ = self.0.kill();
    }
}

/// Start `argv` in `cwd` with exactly `env`, in a `cols`×`rows` terminal
/// whose output goes to `host`'s session `session` (opened by the caller
/// with the returned terminal).
pub fn spawn(
    argv: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
    (cols, rows): (u16, u16),
    host: SessionHost,
    session: &str,
) -> Result<(PtyTerminal, PtyProcess), AgentError> {
    let unavailable = |what: String| AgentError::new(codes::HOSTED_AGENT_UNAVAILABLE, what);
    // Under its keeper, where one is named (`keeper`): nothing the program
    // starts outlives rein killed outright.
    let kept = crate::keeper::kept(argv, None).unwrap_or_else(|| argv.to_vec());
    let (program, args) = kept
        .split_first()
        .ok_or_else(|| AgentError::new(codes::INVALID_INPUT, "the hosted command is empty"))?;
    let pair = native_pty_system()
        .openpty(PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(|e| unavailable(format!("cannot open a terminal: {e}")))?;
    let mut cmd = CommandBuilder::new(program);
    cmd.args(args);
    cmd.cwd(cwd);
    cmd.env_clear();
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = pair.slave.spawn_command(cmd).map_err(|e| {
        unavailable(format!(
            "cannot start `{}`: {e}",
            crate::progress::clean(argv.first().map_or("", String::as_str), 120)
        ))
    })?;
    // The slave end belongs to the child now; holding it would keep the
    // terminal open after the child exits.
    drop(pair.slave);
    let mut reader = pair
        .master
        .try_clone_reader()
        .map_err(|e| unavailable(format!("cannot read the terminal: {e}")))?;
    let writer = pair
        .master
        .take_writer()
        .map_err(|e| unavailable(format!("cannot write the terminal: {e}")))?;
    let session = session.to_owned();
    let pump = std::thread::Builder::new()
        .name("rein-pty-pump".into())
        .spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => host.output(&session, &buf[..n]),
                }
            }
        })
        .map_err(|e| unavailable(format!("cannot start the terminal's reader: {e}")))?;
    let killer = child.clone_killer();
    Ok((
        PtyTerminal {
            master: pair.master,
            writer,
            killer,
        },
        PtyProcess {
            child,
            pump: Some(pump),
        },
    ))
}

impl SessionPty for PtyTerminal {
    fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.writer.write_all(data)?;
        self.writer.flush()
    }

    fn resize(&mut self, cols: u16, rows: u16) -> std::io::Result<()> {
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(std::io::Error::other)
    }

    fn close(&mut self) {
        let _ = self.killer.kill();
    }
}
