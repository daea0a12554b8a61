//! A kept-open hosted session a person switches between its protocol
//! stream and the program's own terminal UI, and back (Ctrl-] m when
//! attached): Claude Code's stream (`claude -p … --input-format
//! stream-json`) and UI (`claude --resume ID`); Codex's app server
//! (`codex app-server`, its thread) and UI (`codex resume ID`). In the
//! stream rein drives the turns and puts the program's questions to a
//! person; the UI runs in a PTY the session shows, typed into by whoever
//! attaches; a switch back resumes the stream on the same conversation
//! (`--resume ID`, `thread/resume`), waiting for its next turn. One
//! program at a time.
//!
//! Not here: ending a stream for a switch and the UI's own run
//! (`rein-host`'s `driver` and `switch`), each UI's command
//! (`switch::ui_argv`), the run's surface (`agents`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rein::host::config::{AgentEntry, AgentKind};
use rein::host::switch::{UiEnded, own_ui, ui_argv};
use rein::host::{
    ClaudeStream, CodexStream, Driven, Ended, HostSpec, Joined, Progress, Recorder, Reducer, Stays,
};
use rein::wire::{AgentError, error::codes};
use tokio_util::sync::CancellationToken;

/// What a switchable session is started from.
pub(crate) struct Plan {
    /// The configured (or named) agent: Claude Code, or Codex's app server.
    pub(crate) entry: AgentEntry,
    /// Where it runs.
    pub(crate) cwd: PathBuf,
    /// Variables named with `--env`.
    pub(crate) env: Vec<String>,
    /// The whole session's time limit.
    pub(crate) timeout: Duration,
    /// The first turn's request.
    pub(crate) prompt: String,
}

impl Plan {
    /// Whether `entry`'s program has a UI of its own to switch to.
    pub(crate) fn switchable(entry: &AgentEntry) -> bool {
        ui_argv(entry, "conversation").is_some()
    }
}

/// Drive the session: its stream (`first`, asked `joined`'s request, its
/// questions already routed to rein), then as a person switches, its own
/// UI and the stream again (each asking rein's person), until a stream
/// ends without a switch or a stop ends the UI.
pub(crate) async fn drive(
    plan: Plan,
    first: &HostSpec,
    recorder: &mut Recorder,
    show: &mut (dyn FnMut(&Progress) + Send),
    stop: CancellationToken,
    mut joined: Joined,
) -> Result<Driven, AgentError> {
    let started = Instant::now();
    let (Some((host, session)), Some(stays)) = (joined.view.clone(), joined.stays.as_ref()) else {
        return Err(AgentError::new(
            codes::INTERNAL,
            "a switchable session has a view and stays open",
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
    let mut stream = Stream::first(&plan);
    // Each later stream's permission server (Claude Code's), for its length.
    let mut _permissions = None;
    // The conversation, once the program named it (a stream switched back
    // before its first turn names none, and resumes the same).
    let mut conversation: Option<String> = None;
    loop {
        spec.timeout = left(plan.timeout, started);
        let driven = stream
            .run(&spec, recorder, show, stop.clone(), joined)
            .await?;
        if !driven.switched {
            return Ok(driven);
        }
        conversation = stream.conversation().map(str::to_owned).or(conversation);
        let Some(argv) = conversation
            .as_deref()
            .and_then(|id| ui_argv(&plan.entry, id))
        else {
            return Err(AgentError::new(
                codes::HOSTED_AGENT_FAILED,
                "the program named no conversation to resume in its own terminal UI",
            ));
        };
        let ui = HostSpec {
            argv,
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
            return ui_ended(ended, &stream, started, recorder).await;
        }
        show(&Progress::detail(
            rein::host::ProgressKind::Said,
            "back in the stream: it waits for the next turn",
        ));
        // Back to the stream, on the same conversation, waiting for a turn.
        let id = conversation.clone().unwrap_or_default();
        let ((next_spec, next), (asks, server)) = Stream::resumed(&plan, &id).await?;
        (spec, stream, _permissions) = (next_spec, next, server);
        joined = Joined {
            view: Some((host.clone(), session.clone())),
            hears: stream.hears(),
            asks,
            stays: Some(Stays {
                idle,
                answers: answers.clone(),
                switchable: true,
                resumed: true,
            }),
        };
    }
}

/// The session ended in the program's own UI (`ended`: a stop or its
/// time): the run is over, its record finished.
async fn ui_ended(
    ended: UiEnded,
    stream: &Stream,
    started: Instant,
    recorder: &mut Recorder,
) -> Result<Driven, AgentError> {
    let reducer = stream.reducer();
    let driven = Driven {
        ended: if ended == UiEnded::TimedOut {
            Ended::Timeout
        } else {
            Ended::Stopped
        },
        outcome: reducer.outcome(),
        summary: reducer.summary(),
        exit_code: None,
        stderr_tail: Vec::new(),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        switched: false,
    };
    recorder.finish(&driven).await?;
    Ok(driven)
}

/// The stream a switchable session runs between its UI legs.
enum Stream {
    /// Claude Code's stream-json (its permission questions through rein's
    /// permission server, `Joined::asks`).
    Claude(ClaudeStream),
    /// Codex's app server: a new thread asked `prompt`, or `thread`
    /// resumed (its approvals asked of rein's person).
    Codex {
        reducer: CodexStream,
        prompt: String,
        thread: Option<String>,
    },
}

impl Stream {
    /// The session's first stream, asked `plan`'s request.
    fn first(plan: &Plan) -> Stream {
        let cwd = plan.cwd.display().to_string();
        match plan.entry.kind {
            AgentKind::Codex => Stream::Codex {
                reducer: CodexStream::new(&cwd),
                prompt: plan.prompt.clone(),
                thread: None,
            },
            _ => Stream::Claude(ClaudeStream::new(&cwd)),
        }
    }

    /// The stream resuming conversation `id`, waiting for its first turn:
    /// its spec, itself, its permission questions' way to rein's person.
    async fn resumed(
        plan: &Plan,
        id: &str,
    ) -> Result<((HostSpec, Stream), crate::cli::acp::Asking), AgentError> {
        let cwd = plan.cwd.display().to_string();
        if plan.entry.kind == AgentKind::Codex {
            let spec = plan.entry.run_spec(&plan.cwd, None, &plan.env).0;
            let stream = Stream::Codex {
                reducer: CodexStream::new(&cwd),
                prompt: String::new(),
                thread: Some(id.to_owned()),
            };
            return Ok(((spec, stream), (None, None)));
        }
        let mut spec = plan.entry.run_spec(&plan.cwd, Some(""), &plan.env).0;
        spec.argv.extend(["--resume".to_owned(), id.to_owned()]);
        let asking = crate::cli::acp::asking_here(&plan.entry, &cwd, &mut spec, false).await?;
        Ok(((spec, Stream::Claude(ClaudeStream::resumed(&cwd))), asking))
    }

    /// What its program hears on its stdin from the first (Claude Code's
    /// requests; Codex's go through the protocol).
    fn hears(&self) -> Option<String> {
        matches!(self, Stream::Claude(_)).then(String::new)
    }

    /// The program's own id of the conversation, once it named one.
    fn conversation(&self) -> Option<&str> {
        match self {
            Stream::Claude(stream) => stream.session_id(),
            Stream::Codex {
                reducer, thread, ..
            } => reducer.thread_id().or(thread.as_deref()),
        }
    }

    fn reducer(&self) -> &dyn Reducer {
        match self {
            Stream::Claude(stream) => stream,
            Stream::Codex { reducer, .. } => reducer,
        }
    }

    /// Drive this stream of `spec` until it ends or a person switches.
    async fn run(
        &mut self,
        spec: &HostSpec,
        recorder: &mut Recorder,
        show: &mut (dyn FnMut(&Progress) + Send),
        stop: CancellationToken,
        joined: Joined,
    ) -> Result<Driven, AgentError> {
        let (reducer, prompt, thread) = match self {
            Stream::Claude(stream) => {
                return rein::host::drive(spec, stream, Some(recorder), show, stop, joined).await;
            }
            Stream::Codex {
                reducer,
                prompt,
                thread,
            } => (reducer, std::mem::take(prompt), thread.as_deref()),
        };
        let ask = rein::host::acp::AcpAsk {
            prompt,
            person: Arc::new(crate::cli::acp::TerminalPerson),
            view: joined.view,
            stays: joined.stays,
        };
        let recorder = Some(recorder);
        match thread {
            Some(thread) => {
                rein::host::codex_app::resume_codex_app(
                    spec, thread, ask, reducer, recorder, show, stop,
                )
                .await
            }
            None => {
                rein::host::codex_app::drive_codex_app(spec, ask, reducer, recorder, show, stop)
                    .await
            }
        }
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
