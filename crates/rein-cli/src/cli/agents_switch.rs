//! A kept-open Claude Code session a person switches between its protocol
//! stream and Claude Code's own terminal UI, and back (Ctrl-] m when
//! attached): the stream is `claude -p … --input-format stream-json`
//! (rein drives its turns, its questions put to a person); the UI is
//! `claude --resume ID` in a PTY the session shows, typed into by whoever
//! attaches; a switch back resumes the stream on the same conversation
//! (`--resume ID`), waiting for its next turn. One program at a time.
//!
//! Not here: ending a stream for a switch and the UI's own run
//! (`rein-host`'s `driver` and `switch`), the run's surface (`agents`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rein::host::config::AgentEntry;
use rein::host::switch::{UiEnded, own_ui};
use rein::host::{
    ClaudeStream, Driven, Ended, HostSpec, Joined, Progress, Recorder, Reducer, Stays,
};
use rein::wire::{AgentError, error::codes};
use tokio_util::sync::CancellationToken;

/// What a switchable Claude Code session is started from.
pub(crate) struct Plan {
    /// The configured (or named) Claude Code.
    pub(crate) entry: AgentEntry,
    /// Where it runs.
    pub(crate) cwd: PathBuf,
    /// Variables named with `--env`.
    pub(crate) env: Vec<String>,
    /// The whole session's time limit.
    pub(crate) timeout: Duration,
}

/// Drive the session: its stream (`first`, asked `joined`'s request, its
/// permission questions already routed to rein), then as a person
/// switches, its own UI and the stream again (each with its own
/// permission server), until a stream ends without a switch or a stop
/// ends the UI.
pub(crate) async fn drive(
    plan: Plan,
    first: &HostSpec,
    recorder: &mut Recorder,
    show: &mut (dyn FnMut(&Progress) + Send),
    stop: CancellationToken,
    mut joined: Joined,
) -> Result<Driven, AgentError> {
    let started = Instant::now();
    let cwd_text = plan.cwd.display().to_string();
    let Some((host, session)) = joined.view.clone() else {
        return Err(AgentError::new(
            codes::INTERNAL,
            "a switchable session has a view",
        ));
    };
    let Some(stays) = joined.stays.as_ref() else {
        return Err(AgentError::new(
            codes::INTERNAL,
            "a switchable session stays open",
        ));
    };
    let (idle, answers) = (stays.idle, stays.answers.clone());
    // The session is this run's to close, whatever mode it ends in.
    let _closing = Closing(host.clone(), session.clone());
    let (record, mut interventions) = tokio::sync::mpsc::unbounded_channel();
    host.on_intervention(move |x| {
        let _ = record.send(x);
    });
    let mut spec = first.clone();
    let mut stream = ClaudeStream::new(&cwd_text);
    // Each later stream's permission server, for its length.
    let mut _permissions = None;
    // The conversation, once Claude Code named it (a stream switched back
    // before its first turn names none, and resumes the same).
    let mut conversation: Option<String> = None;
    loop {
        spec.timeout = left(plan.timeout, started);
        let driven = rein::host::drive(
            &spec,
            &mut stream,
            Some(&mut *recorder),
            show,
            stop.clone(),
            joined,
        )
        .await?;
        if !driven.switched {
            return Ok(driven);
        }
        conversation = stream.session_id().map(str::to_owned).or(conversation);
        let Some(id) = conversation.clone() else {
            return Err(AgentError::new(
                codes::HOSTED_AGENT_FAILED,
                "Claude Code named no conversation to resume in its own terminal UI",
            ));
        };
        let ui = HostSpec {
            argv: own_ui_argv(&plan.entry.argv, &id),
            timeout: left(plan.timeout, started),
            ..spec.clone()
        };
        let ended = own_ui(
            &ui,
            (&host, &session),
            recorder,
            &mut interventions,
            &stop,
            show,
        )
        .await?;
        if ended != UiEnded::Back {
            let driven = Driven {
                ended: if ended == UiEnded::TimedOut {
                    Ended::Timeout
                } else {
                    Ended::Stopped
                },
                outcome: stream.outcome(),
                summary: stream.summary(),
                exit_code: None,
                stderr_tail: Vec::new(),
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                switched: false,
            };
            recorder.finish(&driven).await?;
            return Ok(driven);
        }
        show(&Progress::detail(
            rein::host::ProgressKind::Said,
            "back in the stream: it waits for the next turn",
        ));
        // Back to the stream, on the same conversation, waiting for a turn.
        spec = plan.entry.run_spec(&plan.cwd, Some(""), &plan.env).0;
        spec.argv.extend(["--resume".to_owned(), id]);
        let (asks, server) =
            crate::cli::acp::asking_here(&plan.entry, &cwd_text, &mut spec, false).await?;
        _permissions = server;
        stream = ClaudeStream::resumed(&cwd_text);
        joined = Joined {
            view: Some((host.clone(), session.clone())),
            asks,
            hears: Some(String::new()),
            stays: Some(Stays {
                idle,
                answers: answers.clone(),
                switchable: true,
                resumed: true,
            }),
        };
    }
}

/// Closes the session when the run is over (a switchable session's
/// streams keep it open between them).
struct Closing(rein::host::session::SessionHost, String);

impl Drop for Closing {
    fn drop(&mut self) {
        self.0.close(&self.1);
    }
}

/// The time left of `limit` since `started` (a second at least).
fn left(limit: Duration, started: Instant) -> Duration {
    limit
        .saturating_sub(started.elapsed())
        .max(Duration::from_secs(1))
}

/// Claude Code's own UI on conversation `id`: the entry's command without
/// its options (`claude -p …` → `claude`), resuming it.
fn own_ui_argv(argv: &[String], id: &str) -> Vec<String> {
    let mut ui: Vec<String> = argv
        .iter()
        .take_while(|a| !a.starts_with('-'))
        .cloned()
        .collect();
    ui.extend(["--resume".to_owned(), id.to_owned()]);
    ui
}
