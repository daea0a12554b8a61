//! The one loop every hosted run goes through, whatever its kind: open
//! the run's session for viewers, start the program (`child.rs`), hear
//! the session's inbox (words, a stop: `heard`), put the program's
//! questions to a person and record them (`asks`), show and record what
//! its reducer makes of what it says, end it at its time limit, a stop or
//! a loop, and say how it ended. What differs between kinds — how the
//! program is asked its request, how its messages are read, how it asks
//! and is answered, how it takes a next turn — is an [`Adapter`]
//! (`adapter.rs`); a run that stays for more turns moves them through its
//! talk (`talk.rs`).
//!
//! Not here: the process rules (`child.rs`), what the lines mean (the
//! reducers), the session log (`record.rs`), terminals (`session`).

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rein_wire::AgentError;
use rein_wire::loops::Repeat;
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;

pub use crate::adapter::{Adapter, Next};
use crate::child::{Driven, Ended, HostSpec, Spawned, masked, secrets_of, spawn};
use crate::heard::{Ears, Mouth};
use crate::person::Person;
use crate::progress::{MAX_REASON_CHARS, Progress, ProgressKind, clean};
use crate::record::Recorder;
use crate::reducer::{Reducer, Step};
use crate::session::SessionHost;
use crate::talk::{Flow, Talk, asked};
use crate::turns::Turns;
use crate::view::View;

/// Who, besides the program, takes part in a run.
#[derive(Default)]
pub struct Taking {
    /// Viewers watch it: a session of this host that closing stops the run.
    pub view: Option<(SessionHost, String)>,
    /// The person the program's questions are put to (and, with a
    /// recorder, every person's surface). `None`: every question is
    /// refused.
    pub person: Option<Arc<dyn Person>>,
    /// The program stays after its turn for the next one, started by a
    /// person's words (`turns`); `None` (or a program that takes one
    /// request): the run ends with its first turn.
    pub stays: Option<Stays>,
}

/// How a run stays open for more turns.
#[derive(Debug)]
pub struct Stays {
    /// The program waits at most this long for its next turn; then the
    /// run ends as it finished.
    pub idle: Duration,
    /// Each turn's answer as it closes (secrets masked, not yet made
    /// visible: the surface that shows it does that).
    pub answers: Option<tokio::sync::mpsc::UnboundedSender<String>>,
    /// Its session can be switched to the program's own terminal UI
    /// between turns (a viewer asks, `SessionHost::ask_switch`): the run's
    /// stream then ends without finishing its record ([`Driven::switched`])
    /// and the session stays open for its owner to switch.
    pub switchable: bool,
    /// The program was resumed with no request: it waits for its first
    /// turn from the start.
    pub resumed: bool,
}

/// Drive one run of `spec`'s program as `kind` reads it, showing progress
/// through `show` and recording through `recorder`; `stop` ends it early,
/// and so does a stop posted to its session.
pub async fn drive_with<A: Adapter>(
    kind: &mut A,
    spec: &HostSpec,
    mut recorder: Option<&mut Recorder>,
    show: &mut (dyn FnMut(&Progress) + Send),
    stop: CancellationToken,
    taking: Taking,
) -> Result<Driven, AgentError> {
    let started = Instant::now();
    let Taking {
        view,
        person,
        stays,
    } = taking;
    let switchable = stays.as_ref().is_some_and(|s| s.switchable);
    let view = match view {
        Some((host, session)) => Some(View::open(host, session, kind.mode(), &stop, switchable)?),
        None => None,
    };
    let Spawned {
        mut child,
        mut guard,
        stderr,
    } = spawn(spec, kind.stdin())?;
    let mouth = kind.start(&mut child).await?;
    let mut talk = talk_for(kind, stays, mouth, view.as_ref(), recorder.as_deref());
    let secrets = secrets_of(spec);
    let deadline = tokio::time::sleep(spec.timeout);
    tokio::pin!(deadline);
    // The session stays this run's own while its program is quiet.
    let mut holding = tokio::time::interval(
        recorder
            .as_deref()
            .map_or(Duration::from_secs(3600), Recorder::hold_every),
    );
    holding.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut status = None;
    let ended = loop {
        if let Some(view) = &view {
            view.turning(talk.turning());
        }
        let flow = tokio::select! {
            next = kind.next() => {
                let read = Read { view: view.as_ref(), person: person.clone(), secrets: &secrets, stop: &stop };
                read.next(next, kind, &mut talk, deadline.as_mut(), recorder.as_deref_mut(), show).await?
            }
            exited = child.wait(), if status.is_none() => {
                status = Some(exited.ok());
                // The program is gone; what it left in its group (holding
                // its stdout open) goes too, and its stream ends once drained.
                guard.kill();
                Flow::Go
            }
            () = &mut deadline => Flow::End(Some(talk.timed_out())),
            _ = holding.tick(), if recorder.is_some() => {
                if let Some(recorder) = recorder.as_deref_mut() {
                    recorder.hold().await?;
                }
                Flow::Go
            }
            () = stop.cancelled(), if !talk.leaving() => talk.stop(kind, deadline.as_mut()),
            () = talk.turns.idle() => talk.idled(kind, deadline.as_mut(), show),
            () = asked(&mut talk.switches) => talk.switch(kind, deadline.as_mut(), show),
            heard = talk.ears.wake() => {
                talk.heard(kind, heard, deadline.as_mut(), recorder.as_deref_mut(), show).await?
            }
        };
        if let Flow::End(how) = flow {
            break how;
        }
    };
    // Viewers learn the run is over as soon as it is.
    drop(view);
    let exit_code = if ended.is_some() || !kind.exits_when_done() {
        guard.kill();
        let _ = child.wait().await;
        None
    } else {
        let status = match status {
            Some(status) => status,
            None => tokio::select! {
                status = child.wait() => status.ok(),
                () = tokio::time::sleep(Duration::from_secs(5)) => None,
            },
        };
        // Whatever it left behind in its group goes too.
        guard.kill();
        status.and_then(|s| s.code())
    };
    let end = End {
        ended,
        exit_code,
        stderr,
        started,
        switched: talk.switched(),
    };
    conclude(spec, kind.reducer(), recorder, end).await
}

/// A run's talk with its program: its turns (staying or not; a resumed
/// program waits for its first), its ears (its mouth, the session's
/// viewers' lines when it hears words), where answers go, and viewers'
/// requests to switch a switchable session.
fn talk_for<A: Adapter>(
    kind: &A,
    stays: Option<Stays>,
    mouth: Option<Mouth>,
    view: Option<&View>,
    recorder: Option<&Recorder>,
) -> Talk {
    let (idle, answers, resumed, switchable) = match stays {
        Some(Stays {
            idle,
            answers,
            resumed,
            switchable,
        }) => (Some(idle), answers, resumed, switchable),
        None => (None, None, false, false),
    };
    let mut turns = Turns::new(idle, kind.takes_turns());
    if resumed && turns.stays() {
        // No request yet: it waits for its first turn.
        turns.closed(None);
    }
    let viewers = view
        .filter(|_| kind.hears() || turns.stays())
        .and_then(View::listen);
    let ears = Ears::new(mouth, recorder, viewers);
    let switches = view.filter(|_| switchable).and_then(View::switches);
    Talk::new(turns, ears, answers, switches)
}

/// What reading the program's next message needs besides the talk.
struct Read<'a> {
    view: Option<&'a View>,
    person: Option<Arc<dyn Person>>,
    secrets: &'a [String],
    stop: &'a CancellationToken,
}

impl Read<'_> {
    /// Act on what the program said next: fed to the reducer, a question
    /// put to a person, its mouth, its turn's or its run's end; the steps
    /// shown and recorded.
    async fn next<A: Adapter>(
        self,
        next: Next<A::Ticket>,
        kind: &mut A,
        talk: &mut Talk,
        deadline: Pin<&mut Sleep>,
        mut recorder: Option<&mut Recorder>,
        show: &mut (dyn FnMut(&Progress) + Send),
    ) -> Result<Flow, AgentError> {
        let mut words = None;
        let mut over = false;
        let mut ended = None;
        match next {
            Next::Fed { words: said } => words = said,
            Next::Hears(mouth) => talk.ears.speak(mouth),
            Next::Asks(question, ticket) => {
                let mut said = Vec::new();
                let (verdict, cut) = crate::asks::answer(
                    question,
                    self.person,
                    recorder.as_deref_mut(),
                    (deadline, self.stop),
                    &mut said,
                )
                .await?;
                kind.answer(ticket, verdict);
                talk.said(kind, said, recorder.as_deref_mut(), show).await?;
                ended = cut;
            }
            Next::TurnOver => over = !talk.turns.stays(),
            Next::Over => over = true,
        }
        let steps = masked(kind.reducer().drain(), self.secrets);
        let reply = talk.before(&steps, recorder.as_deref_mut()).await?;
        if let Some(view) = self.view {
            view.show(words.as_deref(), &steps);
        }
        if take_steps(steps, show, recorder.as_deref_mut()).await? {
            ended = Some(Ended::LoopDetected);
        }
        if let Some(reply) = reply
            && ended.is_none()
        {
            talk.closed(kind, reply, recorder, show).await?;
        }
        Ok(if over || ended.is_some() {
            Flow::End(ended)
        } else {
            Flow::Go
        })
    }
}

/// Act on a reducer's steps: progress shown, facts recorded, a loop's
/// nudge said. `true` when loop detection says stop.
async fn take_steps(
    steps: Vec<Step>,
    show: &mut (dyn FnMut(&Progress) + Send),
    mut recorder: Option<&mut Recorder>,
) -> Result<bool, AgentError> {
    let mut stop = false;
    for step in steps {
        match &step {
            Step::Progress(p) => show(p),
            Step::Loop(Repeat::Nudge) => show(&Progress::of(ProgressKind::Repeating)),
            Step::Loop(Repeat::Stop) => stop = true,
            _ => {}
        }
        if let Some(r) = recorder.as_deref_mut() {
            r.step(&step).await?;
        }
    }
    Ok(stop)
}

/// How the loop left a run, for [`conclude`].
struct End {
    ended: Option<Ended>,
    exit_code: Option<i32>,
    stderr: tokio::task::JoinHandle<Vec<String>>,
    started: Instant,
    /// It ended to switch its session to the program's own UI: the
    /// session goes on, its record is not finished.
    switched: bool,
}

/// The run's end: the outcome said for how it ended, recorded.
async fn conclude(
    spec: &HostSpec,
    reducer: &mut dyn Reducer,
    recorder: Option<&mut Recorder>,
    end: End,
) -> Result<Driven, AgentError> {
    let End {
        ended,
        exit_code,
        stderr,
        started,
        switched,
    } = end;
    let stderr_tail = match tokio::time::timeout(Duration::from_secs(2), stderr).await {
        Ok(Ok(tail)) => tail,
        _ => Vec::new(),
    };
    let mut outcome = reducer.outcome();
    let secrets = secrets_of(spec);
    outcome.text = outcome.text.map(|t| rein_wire::secrets::mask(&t, &secrets));
    outcome.failure = outcome
        .failure
        .map(|t| rein_wire::secrets::mask(&t, &secrets));
    let ended = ended.unwrap_or(if outcome.failure.is_some() {
        Ended::Failed
    } else {
        Ended::Finished
    });
    if ended != Ended::Finished && ended != Ended::Failed {
        outcome.text = None;
        outcome.failure.get_or_insert_with(|| match ended {
            Ended::Timeout => format!("stopped at the time limit ({} s)", spec.timeout.as_secs()),
            Ended::Stopped => "stopped by a person".to_owned(),
            _ => "stopped: the same call kept getting the same result".to_owned(),
        });
    } else if ended == Ended::Failed && outcome.exited_early {
        let mut reason = outcome.failure.take().unwrap_or_default();
        match exit_code {
            Some(code) => reason.push_str(&format!(" (exit code {code})")),
            None => reason.push_str(" (killed by a signal)"),
        }
        if let Some(last) = stderr_tail.last() {
            reason.push_str(&format!("; stderr: {last}"));
        }
        outcome.failure = Some(clean(&reason, MAX_REASON_CHARS));
    }
    let driven = Driven {
        ended,
        outcome,
        summary: reducer.summary(),
        exit_code,
        stderr_tail,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        switched,
    };
    if let Some(r) = recorder.filter(|_| !switched) {
        r.finish(&driven).await?;
    }
    Ok(driven)
}
