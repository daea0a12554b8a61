//! Attaching to a hosted session from another process: the session's
//! owner serves it on a Unix socket only its user can reach, and
//! `rein agents attach` connects, sees the same screen and can take over by
//! typing.
//!
//! Frames both ways are `[kind: u8][length: u32, big-endian][payload]`,
//! at most [`MAX_FRAME`] bytes of payload. A viewer sends `H` (hello: its
//! name) first, then `K` (keystrokes: a takeover by typing into a terminal
//! session; into a protocol session, a line of words for the agent, echoed
//! to that viewer and said on Enter — never a takeover), `R` (release) or
//! `Z` (resize: cols and rows as two u16; the holder's size wins). The owner sends `O` (output:
//! the snapshot first, then live chunks), `S` (a status line: who holds
//! the session, a refusal naming the holder, that older output is gone) and
//! `E` (the session ended). A viewer that cannot keep up is dropped, never
//! waited for: the agent's output is never gated.
//!
//! A lister (`rein agents sessions`) sends `L` instead of a hello and is
//! answered `I`: the session as a list shows it ([`Listed`], JSON), and
//! the connection ends. It watches nothing and is no viewer.
//!
//! Not here: the session's rules (`session`), terminals' raw mode (the CLI).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::UnixListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::session::{InputHolder, InputResult, Listed, Routing, SessionHost, SwitchResult};

/// The largest frame payload.
pub const MAX_FRAME: usize = 64 * 1024;

/// Viewers served at once; another is told so and closed.
pub const MAX_VIEWERS: usize = 32;

/// Frames queued for one viewer before it is dropped as too slow.
const VIEWER_QUEUE: usize = 4096;

/// Frame kinds.
pub mod kind {
    /// Viewer → owner: its name.
    pub const HELLO: u8 = b'H';
    /// Viewer → owner: keystrokes.
    pub const KEYS: u8 = b'K';
    /// Viewer → owner: hand the session back.
    pub const RELEASE: u8 = b'R';
    /// Viewer → owner: resize (cols, rows).
    pub const RESIZE: u8 = b'Z';
    /// Viewer → owner: switch the session to its other mode.
    pub const MODE: u8 = b'M';
    /// Owner → viewer: terminal output.
    pub const OUTPUT: u8 = b'O';
    /// Owner → viewer: a status line.
    pub const STATUS: u8 = b'S';
    /// Owner → viewer: the session ended.
    pub const END: u8 = b'E';
    /// Lister → owner: what is the session now?
    pub const LIST: u8 = b'L';
    /// Owner → lister: the session as a list shows it (JSON).
    pub const LISTED: u8 = b'I';
}

/// Sessions a list asks about, at most.
pub const MAX_LISTED: usize = 256;

/// Where a live session's socket is, under rein's home.
pub fn socket_path(home: &Path, session: &str) -> std::path::PathBuf {
    home.join("agents").join(format!("{session}.sock"))
}

/// The live sessions served under `home`, as their owners say, oldest
/// first: every socket there is asked at once (at most [`MAX_LISTED`]).
/// One whose owner is gone or does not answer is not live and is left out.
pub async fn live_sessions(home: &Path) -> Vec<Listed> {
    let Ok(dir) = std::fs::read_dir(home.join("agents")) else {
        return Vec::new();
    };
    let mut asked = tokio::task::JoinSet::new();
    let sockets = dir
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "sock"));
    for path in sockets.take(MAX_LISTED) {
        asked.spawn(async move { ask(&path).await });
    }
    let mut live = Vec::new();
    while let Some(answer) = asked.join_next().await {
        if let Ok(Ok(listed)) = answer {
            live.push(listed);
        }
    }
    live.sort_by(|a, b| (a.opened_at_ms, &a.session).cmp(&(b.opened_at_ms, &b.session)));
    live
}

/// How long a lister waits for a session's owner to answer.
pub const LIST_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Ask the session served on `socket` what it is now. An owner that does
/// not answer within [`LIST_WAIT`] (stopped, or not rein's) is an error.
pub async fn ask(socket: &Path) -> std::io::Result<Listed> {
    let asked = async {
        let stream = tokio::net::UnixStream::connect(socket).await?;
        let (mut r, mut w) = stream.into_split();
        write_frame(&mut w, kind::LIST, b"").await?;
        match read_frame(&mut r).await? {
            Some((kind::LISTED, payload)) => {
                serde_json::from_slice(&payload).map_err(std::io::Error::other)
            }
            Some((kind::END, why)) => Err(std::io::Error::other(
                String::from_utf8_lossy(&why).into_owned(),
            )),
            _ => Err(std::io::Error::other("the session's owner did not answer")),
        }
    };
    tokio::time::timeout(LIST_WAIT, asked)
        .await
        .map_err(|_| std::io::Error::other("the session's owner did not answer in time"))?
}

/// Write one frame.
pub async fn write_frame(
    w: &mut (impl AsyncWrite + Unpin),
    kind: u8,
    payload: &[u8],
) -> std::io::Result<()> {
    for chunk in payload
        .chunks(MAX_FRAME)
        .chain(payload.is_empty().then_some(&[][..]))
    {
        let len = u32::try_from(chunk.len()).map_err(std::io::Error::other)?;
        let mut frame = Vec::with_capacity(5 + chunk.len());
        frame.push(kind);
        frame.extend_from_slice(&len.to_be_bytes());
        frame.extend_from_slice(chunk);
        w.write_all(&frame).await?;
    }
    w.flush().await
}

/// Read one frame; `None` at the end of the stream. A frame past
/// [`MAX_FRAME`] is an error.
pub async fn read_frame(
    r: &mut (impl AsyncRead + Unpin),
) -> std::io::Result<Option<(u8, Vec<u8>)>> {
    let mut head = [0u8; 5];
    match r.read_exact(&mut head).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::other(format!(
            "a frame of {len} bytes is past the bound"
        )));
    }
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload).await?;
    Ok(Some((head[0], payload)))
}

/// Serve `session` of `host` to viewers connecting on `socket` until the
/// task is dropped. The socket's directory must be the user's own (0700).
pub fn listen(path: &Path) -> std::io::Result<UnixListener> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let _ = std::fs::remove_file(path);
    UnixListener::bind(path)
}

/// Accept viewers until `ended`; then every viewer is told the session ended.
pub async fn serve(
    listener: UnixListener,
    host: SessionHost,
    session: String,
    ended: CancellationToken,
) {
    let mut n = 0u64;
    let live = Arc::new(AtomicUsize::new(0));
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => return,
            },
            () = ended.cancelled() => return,
        };
        n += 1;
        if live.fetch_add(1, Ordering::SeqCst) >= MAX_VIEWERS {
            live.fetch_sub(1, Ordering::SeqCst);
            let (_, mut w) = stream.into_split();
            let _ = write_frame(&mut w, kind::END, b"too many viewers").await;
            continue;
        }
        let (host, session, ended, live) =
            (host.clone(), session.clone(), ended.clone(), live.clone());
        tokio::spawn(async move {
            viewer(stream, host, session, n, ended).await;
            live.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// The first frame: a viewer's hello, whose name is given back, or a
/// lister's question, answered here (`None`: nothing more is served).
async fn greeted(
    r: &mut (impl AsyncRead + Unpin),
    w: &mut (impl AsyncWrite + Unpin),
    host: &SessionHost,
    session: &str,
) -> Option<Vec<u8>> {
    match read_frame(r).await {
        Ok(Some((kind::HELLO, name))) => Some(name),
        Ok(Some((kind::LIST, _))) => {
            let _ = match host.listed(session).map(|l| serde_json::to_vec(&l)) {
                Some(Ok(listed)) => write_frame(w, kind::LISTED, &listed).await,
                _ => write_frame(w, kind::END, b"no such session").await,
            };
            None
        }
        _ => None,
    }
}

async fn viewer(
    stream: tokio::net::UnixStream,
    host: SessionHost,
    session: String,
    n: u64,
    ended: CancellationToken,
) {
    let (mut r, mut w) = stream.into_split();
    let Some(name) = greeted(&mut r, &mut w, &host, &session).await else {
        return;
    };
    let name = crate::progress::clean(&String::from_utf8_lossy(&name), 40);
    // Two viewers with one name are still two viewers.
    let viewer = format!("{}#{n}", if name.is_empty() { "viewer" } else { &name });
    let (tx, mut rx) = mpsc::channel::<(u8, Vec<u8>)>(VIEWER_QUEUE);
    let live = tx.clone();
    let Some(snapshot) = host.attach(&session, &viewer, move |chunk| {
        // Never wait on a viewer: one that is this far behind is dropped
        // (its queue closes when the sink is replaced at detach).
        let _ = live.try_send((kind::OUTPUT, chunk.to_vec()));
    }) else {
        let _ = write_frame(&mut w, kind::END, b"no such session").await;
        return;
    };
    let writer = tokio::spawn(async move {
        if snapshot.truncated {
            write_frame(
                &mut w,
                kind::STATUS,
                b"earlier output is gone (only the latest is kept)",
            )
            .await?;
        }
        write_frame(&mut w, kind::OUTPUT, &snapshot.output).await?;
        while let Some((k, payload)) = rx.recv().await {
            write_frame(&mut w, k, &payload).await?;
            if k == kind::END {
                break;
            }
        }
        Ok::<_, std::io::Error>(())
    });
    let status = |text: String| {
        let _ = tx.try_send((kind::STATUS, text.into_bytes()));
    };
    // A protocol session takes a line of words, not keystrokes (asked
    // at each keystroke: a session may switch its mode meanwhile).
    let speaks = || {
        host.listed(&session)
            .is_some_and(|listed| listed.mode != crate::session::RenderMode::NativeTui)
    };
    let mut line = Line::default();
    status(greeting(&host, &session, &viewer));
    loop {
        let frame = tokio::select! {
            frame = read_frame(&mut r) => frame,
            () = ended.cancelled() => {
                let _ = tx.send((kind::END, b"the session ended".to_vec())).await;
                // The writer sends what is queued, then the end.
                let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
                return;
            }
        };
        let Ok(Some((k, payload))) = frame else { break };
        match k {
            kind::KEYS if speaks() => {
                for said in line.typed(&payload, &tx) {
                    status(said_status(host.route_input(&session, &viewer, &said)));
                }
            }
            kind::MODE => status(switch_status(host.ask_switch(&session, &viewer))),
            kind::KEYS => {
                let held = matches!(host.listed(&session).map(|listed| listed.holder),
                    Some(InputHolder::Person { viewer: holder, .. }) if holder == viewer);
                match host.typed(&session, &viewer, &payload) {
                    Ok(Some(_)) if !held => status(
                        "you took the session over; the agent's input waits until you release (Ctrl-] r)".to_owned(),
                    ),
                    Ok(_) => {}
                    Err(InputResult::Held { holder }) => {
                        status(format!("{holder} holds the session; your keys were not sent"));
                    }
                    Err(_) => break,
                }
            }
            kind::RELEASE if host.release(&session, &viewer) => {
                status("you handed the session back".to_owned());
            }
            kind::RESIZE if payload.len() == 4 => {
                let cols = u16::from_be_bytes([payload[0], payload[1]]);
                let rows = u16::from_be_bytes([payload[2], payload[3]]);
                host.resize(&session, &viewer, cols, rows);
            }
            _ => {}
        }
    }
    host.detach(&session, &viewer);
    drop(tx);
    writer.abort();
}

/// What a viewer is told on attaching: how it takes part in the session
/// as it is now.
fn greeting(host: &SessionHost, session: &str, viewer: &str) -> String {
    let listed = host.listed(session);
    let switch = if listed.as_ref().is_some_and(|l| l.switchable) {
        ", Ctrl-] m switches its mode"
    } else {
        ""
    };
    if listed.is_some_and(|l| l.mode != crate::session::RenderMode::NativeTui) {
        format!(
            "attached as {viewer}; type a line to say it to the agent{switch}, Ctrl-] d detaches"
        )
    } else {
        format!(
            "attached as {viewer}; type to take over, Ctrl-] r releases{switch}, Ctrl-] d detaches"
        )
    }
}

/// What a viewer is told of its request to switch the session's mode.
fn switch_status(result: SwitchResult) -> String {
    match result {
        SwitchResult::Asked { to } => format!("switching to {}", to.as_str()),
        SwitchResult::NotSwitchable => "this session has one mode".to_owned(),
        SwitchResult::TurnRunning => "a turn is running: it switches only between turns".to_owned(),
        SwitchResult::Held { holder } => format!("{holder} holds the session; nothing switched"),
        SwitchResult::NoSuchSession => "the session ended".to_owned(),
    }
}

/// What a viewer is told of a line it said.
fn said_status(result: InputResult) -> String {
    match result {
        InputResult::Routed { routing, .. } => match routing {
            Routing::Steer => "said: the agent hears it at its next step",
            Routing::Queued => "said: queued; it starts the agent's next turn when this one ends",
            Routing::StartTurn => "said: it starts the agent's next turn",
        }
        .to_owned(),
        InputResult::Held { holder } => {
            format!("{holder} holds the session; your words were not sent")
        }
        InputResult::NotHeard | InputResult::NoSuchSession => {
            "this agent hears no words now; nothing was sent".to_owned()
        }
    }
}

/// A line of words a viewer is typing into a protocol session: echoed to
/// that viewer only (its terminal is raw), said when Enter is pressed.
#[derive(Default)]
struct Line {
    text: String,
}

impl Line {
    /// Take keystrokes; the lines they finish. Backspace edits; other
    /// control bytes are dropped; a line stops growing at [`MAX_FRAME`].
    fn typed(&mut self, keys: &[u8], echo: &mpsc::Sender<(u8, Vec<u8>)>) -> Vec<String> {
        let mut done = Vec::new();
        let mut shown = Vec::new();
        for ch in String::from_utf8_lossy(keys).chars() {
            match ch {
                '\r' | '\n' => {
                    shown.extend_from_slice(b"\r\n");
                    let line = std::mem::take(&mut self.text);
                    if !line.trim().is_empty() {
                        done.push(line.trim().to_owned());
                    }
                }
                '\u{7f}' | '\u{8}' if self.text.pop().is_some() => {
                    shown.extend_from_slice(b"\x08 \x08");
                }
                c if c.is_control() => {}
                c if self.text.len() + c.len_utf8() <= MAX_FRAME => {
                    self.text.push(c);
                    shown.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
                _ => {}
            }
        }
        if !shown.is_empty() {
            let _ = echo.try_send((kind::OUTPUT, shown));
        }
        done
    }
}
