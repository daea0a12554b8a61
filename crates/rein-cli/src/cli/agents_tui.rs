//! `rein agents run tui -- CMD` and `rein agents attach ID`: another agent's
//! own terminal UI in a PTY rein owns, shown here and to any other terminal
//! that attaches; whoever types takes the session over.
//!
//! The owner's terminal is a viewer too (`local`). In both, Ctrl-] then
//! `r` hands the session back, Ctrl-] then `d` detaches (an attached
//! viewer only). The run is a session: interventions are `host.intervened`
//! events, the process's end is the run's end. The terminal's bytes are the
//! agent's own screen, passed on as they are (as if it ran here directly).
//!
//! Not here: the session rules and the socket protocol (`rein-host`).

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein::host::attach::{self, kind, socket_path};
use rein::host::session::{OpenRequest, RenderMode, SessionHost};
use rein::host::{HostSpec, Recorder, pty};
use rein::sessions::Store;
use rein::wire::{AgentError, error::codes};
use tokio_util::sync::CancellationToken;

use crate::cli::output::output_error;

/// The escape key (Ctrl-]).
const ESCAPE: u8 = 0x1d;

/// What a keystroke batch means.
enum Key {
    Bytes(Vec<u8>),
    Release,
    Detach,
    /// Switch the session's mode (a stream to the program's own UI, back).
    Mode,
}

/// Splits keystrokes at the escape: Ctrl-] r releases, Ctrl-] d detaches,
/// Ctrl-] m switches the mode, Ctrl-] Ctrl-] sends one Ctrl-].
#[derive(Default)]
struct Keys {
    escaped: bool,
}

impl Keys {
    fn feed(&mut self, input: &[u8]) -> Vec<Key> {
        let mut out = Vec::new();
        let mut bytes = Vec::new();
        for &b in input {
            if self.escaped {
                self.escaped = false;
                match b {
                    b'r' => out.push(Key::Release),
                    b'd' => out.push(Key::Detach),
                    b'm' => out.push(Key::Mode),
                    ESCAPE => bytes.push(ESCAPE),
                    _ => {}
                }
                continue;
            }
            if b == ESCAPE {
                if !bytes.is_empty() {
                    out.push(Key::Bytes(std::mem::take(&mut bytes)));
                }
                self.escaped = true;
            } else {
                bytes.push(b);
            }
        }
        if !bytes.is_empty() {
            out.push(Key::Bytes(bytes));
        }
        out
    }
}

/// The terminal in raw mode while it lives (nothing when stdin is no terminal).
struct RawMode(Option<nix::sys::termios::Termios>);

impl RawMode {
    fn enter() -> Self {
        use nix::sys::termios::{SetArg, cfmakeraw, tcgetattr, tcsetattr};
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return RawMode(None);
        }
        let Ok(saved) = tcgetattr(&stdin) else {
            return RawMode(None);
        };
        let mut raw = saved.clone();
        cfmakeraw(&mut raw);
        let _ = tcsetattr(&stdin, SetArg::TCSANOW, &raw);
        RawMode(Some(saved))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if let Some(saved) = self.0.take() {
            let _ = nix::sys::termios::tcsetattr(
                std::io::stdin(),
                nix::sys::termios::SetArg::TCSANOW,
                &saved,
            );
        }
    }
}

/// Keystrokes from stdin on a thread of their own (stdin blocks).
fn stdin_keys() -> tokio::sync::mpsc::UnboundedReceiver<Key> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut keys = Keys::default();
        let mut buf = [0u8; 4096];
        let mut stdin = std::io::stdin();
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    for key in keys.feed(&buf[..n]) {
                        if tx.send(key).is_err() {
                            return;
                        }
                    }
                }
            }
        }
    });
    rx
}

fn refused(message: impl Into<String>) -> AgentError {
    AgentError::new(codes::SESSION_REFUSED, message)
}

/// A hosted program's terminal size when rein's is unknown (not a terminal).
const DEFAULT_SIZE: (u16, u16) = (120, 40);

/// This process's terminal size (cols, rows), when stdout is a terminal.
fn screen_size() -> Option<(u16, u16)> {
    let size = rustix::termios::tcgetwinsize(std::io::stdout()).ok()?;
    (size.ws_col > 0 && size.ws_row > 0).then_some((size.ws_col, size.ws_row))
}

/// The terminal's size changes (SIGWINCH).
fn window_changes() -> Result<tokio::signal::unix::Signal, AgentError> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change())
        .map_err(|e| refused(format!("cannot hear the terminal's size: {e}")))
}

/// Tell the session this viewer's terminal size, when it has one.
async fn send_size(w: &mut (impl tokio::io::AsyncWrite + Unpin)) -> Result<(), AgentError> {
    let Some((cols, rows)) = screen_size() else {
        return Ok(());
    };
    let mut payload = cols.to_be_bytes().to_vec();
    payload.extend(rows.to_be_bytes());
    attach::write_frame(w, kind::RESIZE, &payload)
        .await
        .map_err(output_error)
}

/// A session served to other terminals (`rein agents attach ID`) while
/// this lives: its socket removed and its viewers told when dropped.
pub struct Viewers {
    socket: PathBuf,
    ended: CancellationToken,
}

impl Viewers {
    /// Serve `session` of `host` on its socket under `home`.
    pub fn serve(home: &Path, host: &SessionHost, session: &str) -> Result<Viewers, AgentError> {
        let socket = socket_path(home, session);
        let listener =
            attach::listen(&socket).map_err(|e| refused(format!("cannot serve viewers: {e}")))?;
        let ended = CancellationToken::new();
        tokio::spawn(attach::serve(
            listener,
            host.clone(),
            session.to_owned(),
            ended.clone(),
        ));
        Ok(Viewers { socket, ended })
    }
}

impl Drop for Viewers {
    fn drop(&mut self) {
        self.ended.cancel();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// `rein agents run tui -- CMD`.
pub async fn run(
    spec: HostSpec,
    prompt: &str,
    home: &Path,
    store: Arc<dyn Store>,
    err: &mut impl Write,
) -> Result<(), AgentError> {
    let program = Path::new(&spec.argv[0])
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut recorder = Recorder::start(store, "tui", &program, prompt).await?;
    let id = recorder.session().to_owned();
    let host = SessionHost::new();
    // Interventions become durable records, in order, on this task.
    let (record_tx, mut record_rx) = tokio::sync::mpsc::unbounded_channel();
    host.on_intervention(move |x| {
        let _ = record_tx.send(x);
    });
    // The program's terminal is this one's size (and follows it).
    let size = screen_size().unwrap_or(DEFAULT_SIZE);
    let (terminal, process) =
        match pty::spawn(&spec.argv, &spec.cwd, &spec.env, size, host.clone(), &id) {
            Ok(started) => started,
            Err(e) => {
                recorder.abandon(&e.message).await?;
                return Err(e);
            }
        };
    host.open(OpenRequest {
        session: id.clone(),
        supports: vec![RenderMode::NativeTui],
        mode: RenderMode::NativeTui,
        pty: Box::new(terminal),
        protocol: None,
    })
    .map_err(|why| refused(format!("the session cannot be opened: {why:?}")))?;
    host.attach(&id, "local", |chunk| {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(chunk);
        let _ = out.flush();
    });
    host.resize(&id, "local", size.0, size.1);
    let mut resized = window_changes()?;
    let viewers = Viewers::serve(home, &host, &id)?;
    writeln!(err, "[rein] session {id}: attach from another terminal with `rein agents attach {id}`; Ctrl-] r hands it back").map_err(output_error)?;
    let raw = RawMode::enter();
    let mut keys = stdin_keys();
    let mut waiting = tokio::task::spawn_blocking(move || process.wait());
    let exit = loop {
        tokio::select! {
            exit = &mut waiting => break exit.ok().flatten(),
            Some(x) = record_rx.recv() => recorder.intervention(&x).await?,
            key = keys.recv() => match key {
                Some(Key::Bytes(bytes)) => {
                    if let Err(rein::host::session::InputResult::Held { holder }) = host.typed(&id, "local", &bytes) {
                        eprint!("\r\n[rein] {holder} holds the session; your keys were not sent\r\n");
                    }
                }
                Some(Key::Release) => { host.release(&id, "local"); }
                Some(Key::Detach | Key::Mode) | None => {}
            },
            _ = resized.recv() => {
                if let Some((cols, rows)) = screen_size() {
                    host.resize(&id, "local", cols, rows);
                }
            }
        }
    };
    drop(raw);
    drop(viewers);
    host.close(&id);
    while let Ok(x) = record_rx.try_recv() {
        recorder.intervention(&x).await?;
    }
    let exit = exit.and_then(|code| i32::try_from(code).ok());
    recorder.finish_exit(exit).await?;
    writeln!(
        err,
        "[rein] {program} ended (exit code {}); session {id}",
        exit.map_or("none".into(), |c| c.to_string())
    )
    .map_err(output_error)?;
    Ok(())
}

/// `rein agents attach ID`.
pub async fn attach(
    home: &Path,
    session: &str,
    name: &str,
    err: &mut impl Write,
) -> Result<(), AgentError> {
    let socket = socket_path(home, session);
    let stream = tokio::net::UnixStream::connect(&socket)
        .await
        .map_err(|_| {
            refused(format!(
                "no live session {} here (is `rein agents run tui` still running?)",
                rein::wire::visible::visible(session)
            ))
        })?;
    let (mut r, mut w) = stream.into_split();
    attach::write_frame(&mut w, kind::HELLO, name.as_bytes())
        .await
        .map_err(output_error)?;
    let raw = RawMode::enter();
    let mut keys = stdin_keys();
    let mut stdout = std::io::stdout();
    let mut stdin_open = true;
    // The session knows this terminal's size, and hears when it changes:
    // while this viewer holds the session, the program is drawn for it.
    let mut resized = window_changes()?;
    send_size(&mut w).await?;
    loop {
        tokio::select! {
            frame = attach::read_frame(&mut r) => match frame {
                Ok(Some((kind::OUTPUT, bytes))) => {
                    stdout.write_all(&bytes).and_then(|()| stdout.flush()).map_err(output_error)?;
                }
                Ok(Some((kind::STATUS, text))) => {
                    let text = String::from_utf8_lossy(&text);
                    write!(err, "\r\n[rein] {}\r\n", rein::wire::visible::visible(&text)).map_err(output_error)?;
                }
                Ok(Some((kind::END, _))) | Ok(None) | Err(_) => {
                    write!(err, "\r\n[rein] the session ended\r\n").map_err(output_error)?;
                    break;
                }
                Ok(Some(_)) => {}
            },
            key = keys.recv(), if stdin_open => match key {
                Some(Key::Bytes(bytes)) => attach::write_frame(&mut w, kind::KEYS, &bytes).await.map_err(output_error)?,
                Some(Key::Release) => attach::write_frame(&mut w, kind::RELEASE, &[]).await.map_err(output_error)?,
                Some(Key::Mode) => attach::write_frame(&mut w, kind::MODE, &[]).await.map_err(output_error)?,
                Some(Key::Detach) => break,
                // Piped input ran out: keep watching until the session ends.
                None => stdin_open = false,
            },
            _ = resized.recv() => send_size(&mut w).await?,
        }
    }
    drop(raw);
    Ok(())
}
