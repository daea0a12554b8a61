//! A hosted session switched to its program's own terminal UI, and back
//! (the reference host's switchable sessions; never both at once).
//!
//! A session opened as a protocol stream (`Stays::switchable`) ends its
//! stream between turns when a viewer asks (`SessionHost::ask_switch`,
//! Ctrl-] m when attached); its owner then runs the program's own UI on
//! the same conversation ([`own_ui`]) in a PTY the session shows: viewers
//! watch it and take it over by typing, as in a `tui` run. A viewer's
//! second Ctrl-] m, or the program exiting, ends the UI and the owner
//! resumes the stream. One program runs at a time: the stream's program
//! has ended before the UI starts, and the UI's before the stream resumes.
//! A stop (the run's, or one posted to the session) ends the session;
//! words posted meanwhile are recorded, and heard by nobody (the person
//! types into the UI itself).
//!
//! Not here: the stream's run (`driver.rs`), the session's rules
//! (`session`), which programs resume how (their surface: `rein agents`).

use rein_wire::AgentError;
use rein_wire::error::codes;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::child::HostSpec;
use crate::heard::{Ears, Woke};
use crate::progress::{Progress, ProgressKind};
use crate::record::Recorder;
use crate::session::{Intervention, RenderMode, SessionHost};
use crate::talk::asked;

/// How the program's own UI ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UiEnded {
    /// A viewer switched back, or the program exited: the stream resumes.
    Back,
    /// A stop: the session ends.
    Stopped,
    /// Its time limit (the session's time left): the session ends.
    TimedOut,
}

/// The terminal size the UI starts at (the holder's, once one types).
const SIZE: (u16, u16) = (120, 40);

/// Run the program's own UI (`spec`, resuming the conversation) in
/// `session` of `host`, until a viewer switches back, it exits, a stop or
/// `spec`'s time limit; interventions (takeovers, releases, switches)
/// recorded as they come.
pub async fn own_ui(
    spec: &HostSpec,
    (host, session): (&SessionHost, &str),
    recorder: &mut Recorder,
    interventions: &mut UnboundedReceiver<Intervention>,
    stop: &CancellationToken,
    show: &mut (dyn FnMut(&Progress) + Send),
) -> Result<UiEnded, AgentError> {
    let (terminal, process) = crate::pty::spawn(
        &spec.argv,
        &spec.cwd,
        &spec.env,
        SIZE,
        host.clone(),
        session,
    )?;
    let mut killer = process.killer();
    if let Err(why) = host.switch(session, RenderMode::NativeTui, Box::new(terminal), None) {
        killer.kill();
        return Err(AgentError::new(
            codes::SESSION_REFUSED,
            format!("the session cannot switch: {why:?}"),
        ));
    }
    show(&Progress::detail(
        ProgressKind::Said,
        "now in the program's own terminal UI: attach to use it (Ctrl-] m switches back)",
    ));
    let mut switches = host.on_switch(session);
    let mut ears = Ears::new(None, Some(recorder), None);
    let mut waiting = tokio::task::spawn_blocking(move || process.wait());
    let mut exited = false;
    let limit = tokio::time::sleep(spec.timeout);
    tokio::pin!(limit);
    let ended = loop {
        tokio::select! {
            () = &mut limit => break UiEnded::TimedOut,
            _ = &mut waiting => {
                exited = true;
                break UiEnded::Back;
            }
            () = asked(&mut switches) => break UiEnded::Back,
            () = stop.cancelled() => break UiEnded::Stopped,
            Some(x) = interventions.recv() => recorder.intervention(&x).await?,
            heard = ears.wake() => match ears.take(heard, Some(&mut *recorder), show).await? {
                Woke::Stop => break UiEnded::Stopped,
                Woke::Words(words) => {
                    for _ in words {
                        show(&Progress::detail(
                            ProgressKind::Said,
                            "recorded; its own terminal UI is typed into, not told",
                        ));
                    }
                }
            },
        }
    };
    // Never both at once: the UI has ended before anything else starts.
    killer.kill();
    if !exited {
        let _ = waiting.await;
    }
    while let Ok(x) = interventions.try_recv() {
        recorder.intervention(&x).await?;
    }
    Ok(ended)
}
