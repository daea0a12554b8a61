//! The one loop every hosted run goes through, whatever its kind: open
//! the run's session for viewers, start the program (`child.rs`), hear
//! the session's inbox (words, a stop: `heard`), put the program's
//! questions to a person and record them (`asks`), show and record what
//! its reducer makes of what it says, end it at its time limit, a stop or
//! a loop, and say how it ended. What differs between kinds — how the
//! program is asked its request, how its messages are read, how it asks
//! and is answered — is an [`Adapter`]: a new hosted kind is one new file
//! with one adapter (see the trait's example).
//!
//! Not here: the process rules (`child.rs`), what the lines mean (the
//! reducers), the session log (`record.rs`), terminals (`session`).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rein_wire::AgentError;
use rein_wire::loops::Repeat;
use tokio::process::Child;
use tokio_util::sync::CancellationToken;

use crate::child::{Driven, Ended, HostSpec, Spawned, masked, secrets_of, spawn};
use crate::heard::{Ears, Mouth};
use crate::person::{Person, Question, Verdict};
use crate::progress::{MAX_REASON_CHARS, Progress, ProgressKind, clean};
use crate::record::Recorder;
use crate::reducer::{Reducer, Step};
use crate::session::{RenderMode, SessionHost};
use crate::view::View;

/// What a hosted program said next, as its adapter read it.
pub enum Next<T> {
    /// A message, fed to the reducer; `words` are the answer's words in
    /// it, for a view that renders them as they come (`RenderMode::Acp`).
    Fed {
        /// The answer's words, when the view shows them as they come.
        words: Option<String>,
    },
    /// It asks a person before a call runs; `ticket` is how the verdict
    /// goes back ([`Adapter::answer`]).
    Asks(Question, T),
    /// From now on it hears words said mid-run through this mouth.
    Hears(Mouth),
    /// It is done: its answer (or its stream's end) was fed.
    Over,
}

/// One kind of hosted program, as the one loop drives it.
///
/// The loop starts the program ([`Adapter::stdin`] says whether its stdin
/// is piped), gives it to [`Adapter::start`], then reads
/// [`Adapter::next`] until it is [`Next::Over`], a stop, the time limit or
/// a loop; everything else (the session, the inbox, the person, the
/// record, the end) is the loop's.
///
/// A kind whose program prints one JSON line per event that a reducer of
/// rein's reads — here a stand-in that prints Claude Code's stream —
/// is this much:
///
/// ```
/// use rein_host::driver::{Adapter, Next, drive_with, Taking};
/// use rein_host::heard::Mouth;
/// use rein_host::person::{Question, Verdict};
/// use rein_host::{ClaudeStream, Ended, HostSpec, Reducer};
/// use tokio::io::{AsyncBufReadExt, BufReader, Lines};
/// use tokio::process::{Child, ChildStdout};
///
/// struct Printed {
///     reducer: ClaudeStream,
///     lines: Option<Lines<BufReader<ChildStdout>>>,
/// }
///
/// impl Adapter for Printed {
///     type Ticket = ();
///     fn stdin(&self) -> bool {
///         false
///     }
///     async fn start(&mut self, child: &mut Child) -> Result<Option<Mouth>, rein_wire::AgentError> {
///         self.lines = child.stdout.take().map(|out| BufReader::new(out).lines());
///         Ok(None)
///     }
///     async fn next(&mut self) -> Next<()> {
///         match self.lines.as_mut() {
///             Some(lines) => match lines.next_line().await {
///                 Ok(Some(line)) => {
///                     self.reducer.feed(line.as_bytes());
///                     Next::Fed { words: None }
///                 }
///                 _ => {
///                     self.reducer.stream_ended();
///                     Next::Over
///                 }
///             },
///             None => Next::Over,
///         }
///     }
///     fn answer(&mut self, (): (), _: Verdict) {}
///     fn reducer(&mut self) -> &mut dyn Reducer {
///         &mut self.reducer
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let printed = r#"printf '%s\n' '{"type":"system","subtype":"init","session_id":"s","model":"m"}' '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s","num_turns":1,"total_cost_usd":0,"usage":{}}'"#;
/// let mut spec = HostSpec::new(vec!["sh".into(), "-c".into(), printed.into()], ".".into());
/// spec = spec.env_from(["PATH"]);
/// let mut kind = Printed { reducer: ClaudeStream::new(""), lines: None };
/// let stop = tokio_util::sync::CancellationToken::new();
/// let driven = drive_with(&mut kind, &spec, None, &mut |_| {}, stop, Taking::default())
///     .await
///     .unwrap();
/// assert_eq!(driven.ended, Ended::Finished);
/// assert_eq!(driven.outcome.text.as_deref(), Some("done"));
/// # }
/// ```
pub trait Adapter: Send {
    /// How a question's verdict finds its way back to the program.
    type Ticket: Send;

    /// How viewers see the run: its progress and answers as a stream of
    /// lines (the default), or an agent's words as they come.
    fn mode(&self) -> RenderMode {
        RenderMode::Stream
    }

    /// Whether the program's stdin is piped to it (a protocol, or words
    /// said mid-run); otherwise it reads nothing.
    fn stdin(&self) -> bool;

    /// Whether viewers' typed lines go to the program as words.
    fn hears(&self) -> bool {
        false
    }

    /// Whether the program ends on its own once done (a CLI); otherwise
    /// (a server speaking a protocol) it is ended when its answer came.
    fn exits_when_done(&self) -> bool {
        false
    }

    /// The program is started: take its stdio, give it its request. A
    /// mouth returned hears words said mid-run from the first.
    fn start(
        &mut self,
        child: &mut Child,
    ) -> impl Future<Output = Result<Option<Mouth>, AgentError>> + Send;

    /// What the program says next. Cancel-safe: the loop selects on it
    /// beside the inbox, the time limit and the stop.
    fn next(&mut self) -> impl Future<Output = Next<Self::Ticket>> + Send;

    /// Tell the program a person's verdict on its question.
    fn answer(&mut self, ticket: Self::Ticket, verdict: Verdict);

    /// The reducer its messages feed.
    fn reducer(&mut self) -> &mut dyn Reducer;
}

/// Who, besides the program, takes part in a run.
#[derive(Default)]
pub struct Taking {
    /// Viewers watch it: a session of this host that closing stops the run.
    pub view: Option<(SessionHost, String)>,
    /// The person the program's questions are put to (and, with a
    /// recorder, every person's surface). `None`: every question is
    /// refused.
    pub person: Option<Arc<dyn Person>>,
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
    let Taking { view, person } = taking;
    let view = match view {
        Some((host, session)) => Some(View::open(host, session, kind.mode(), &stop)?),
        None => None,
    };
    let Spawned {
        mut child,
        mut guard,
        stderr,
    } = spawn(spec, kind.stdin())?;
    let mouth = kind.start(&mut child).await?;
    let viewers = view
        .as_ref()
        .filter(|_| kind.hears())
        .and_then(View::listen);
    let mut ears = Ears::new(mouth, recorder.as_deref(), viewers);
    let secrets = secrets_of(spec);
    let deadline = tokio::time::sleep(spec.timeout);
    tokio::pin!(deadline);
    let mut ended = None;
    let mut status = None;
    loop {
        let next = tokio::select! {
            next = kind.next() => next,
            exited = child.wait(), if status.is_none() => {
                status = Some(exited.ok());
                // The program is gone; what it left in its group (holding
                // its stdout open) goes too, and its stream ends once drained.
                guard.kill();
                continue;
            }
            () = &mut deadline => { ended = Some(Ended::Timeout); break; }
            () = stop.cancelled() => { ended = Some(Ended::Stopped); break; }
            heard = ears.wake() => {
                if ears.take(heard, recorder.as_deref_mut(), show).await? {
                    ended = Some(Ended::Stopped);
                    break;
                }
                continue;
            }
        };
        let mut words = None;
        let mut over = false;
        match next {
            Next::Fed { words: said } => words = said,
            Next::Hears(mouth) => ears.speak(mouth),
            Next::Asks(question, ticket) => {
                let mut said = Vec::new();
                let (verdict, cut) = crate::asks::answer(
                    question,
                    person.clone(),
                    recorder.as_deref_mut(),
                    (deadline.as_mut(), &stop),
                    &mut said,
                )
                .await?;
                kind.answer(ticket, verdict);
                ears.deliver(said, show).await;
                ended = cut;
            }
            Next::Over => over = true,
        }
        let steps = masked(kind.reducer().drain(), &secrets);
        if steps.iter().any(|s| matches!(s, Step::TurnClosed(_))) {
            ears.turn_closed();
        }
        if let Some(view) = &view {
            view.show(words.as_deref(), &steps);
        }
        if take_steps(steps, show, recorder.as_deref_mut()).await? {
            ended = Some(Ended::LoopDetected);
        }
        if over || ended.is_some() {
            break;
        }
    }
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
    };
    conclude(spec, kind.reducer(), recorder, end).await
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
    };
    if let Some(r) = recorder {
        r.finish(&driven).await?;
    }
    Ok(driven)
}
