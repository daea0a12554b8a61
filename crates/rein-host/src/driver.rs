//! Runs a hosted CLI as a child process and feeds its stdout to a reducer.
//!
//! The child gets exactly the environment its spec names (nothing of
//! rein's), its own process group, and a wall-clock limit. stdout is framed
//! into lines of at most [`HostSpec::max_line`] bytes: a longer line is
//! skipped and reported to the reducer, an unterminated last line is a
//! framing failure. The whole group is killed when the run is over — at the
//! limit, when a person stops it, when loop detection says stop, and when
//! the driver is dropped mid-run (`GroupGuard`). stderr is kept as a few
//! bounded, cleaned lines for a failure's reason, with the secrets the
//! child was given masked. Beside stdout the run hears its session's inbox
//! (words, a stop: `heard`) and its program's permission questions (`asks`).
//!
//! Not here: what the lines mean (the reducers), the session log
//! (`record.rs`), terminals (`session`).

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rein_wire::AgentError;
use rein_wire::error::codes;
use rein_wire::loops::Repeat;
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::asks::{Asked, Asks};
use crate::heard::{Ears, Mouth};
use crate::lines::{Line, Lines};
use crate::progress::{MAX_REASON_CHARS, Progress, ProgressKind, clean};
use crate::record::Recorder;
use crate::reducer::{Outcome, Reducer, Step};
use crate::session::{RenderMode, SessionHost};
use crate::view::View;

/// A stdout line longer than this (bytes) is skipped by default.
pub const DEFAULT_MAX_LINE: usize = 4 * 1024 * 1024;

/// A hosted run's wall-clock limit by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// stderr lines kept (the last ones), each cut to 200 characters.
const STDERR_LINES: usize = 5;

/// What to run.
#[derive(Debug, Clone)]
pub struct HostSpec {
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Its whole environment.
    pub env: BTreeMap<String, String>,
    /// The wall-clock limit.
    pub timeout: Duration,
    /// The longest stdout line read; longer ones are skipped.
    pub max_line: usize,
}

impl HostSpec {
    /// `argv` in `cwd` with an empty environment and the default bounds.
    pub fn new(argv: Vec<String>, cwd: PathBuf) -> Self {
        HostSpec {
            argv,
            cwd,
            env: BTreeMap::new(),
            timeout: DEFAULT_TIMEOUT,
            max_line: DEFAULT_MAX_LINE,
        }
    }

    /// Copy these variables from rein's environment (those set).
    pub fn env_from<'a>(mut self, names: impl IntoIterator<Item = &'a str>) -> Self {
        for name in names {
            if let Ok(value) = std::env::var(name) {
                self.env.insert(name.to_owned(), value);
            }
        }
        self
    }
}

/// How a hosted run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    /// Every turn has its result and none failed.
    Finished,
    /// The stream or a turn failed.
    Failed,
    /// The wall-clock limit passed; the child was killed.
    Timeout,
    /// A person stopped it; the child was killed.
    Stopped,
    /// The same call kept getting the same result; the child was killed.
    LoopDetected,
}

impl Ended {
    /// What the log records of it (the turn's and run's `outcome`).
    pub fn ending(self) -> rein_wire::Ending {
        match self {
            Ended::Finished => rein_wire::Ending::Finished,
            Ended::Failed => rein_wire::Ending::Failed,
            Ended::Timeout => rein_wire::Ending::Timeout,
            Ended::Stopped => rein_wire::Ending::Interrupted,
            Ended::LoopDetected => rein_wire::Ending::LoopDetected,
        }
    }

    /// Its recorded word.
    pub fn as_str(self) -> &'static str {
        self.ending().as_str()
    }
}

/// A finished hosted run.
#[derive(Debug, Clone, Serialize)]
pub struct Driven {
    /// How it ended.
    pub ended: Ended,
    /// The reducer's outcome.
    pub outcome: Outcome,
    /// The reducer's summary.
    pub summary: serde_json::Value,
    /// The child's exit code, when it exited on its own.
    pub exit_code: Option<i32>,
    /// The last lines of stderr, cleaned.
    pub stderr_tail: Vec<String>,
    /// Wall time.
    pub duration_ms: u64,
}

/// Kills the child's whole process group when dropped, whatever else
/// still holds the run's output pipes, and all in the run's cgroup
/// (`lifetime`).
pub(crate) struct GroupGuard {
    group: Option<Pid>,
    pipes: Vec<String>,
    cgroup: Option<rein_sandbox::PidsCgroup>,
}

impl GroupGuard {
    pub(crate) fn new(
        group: Option<Pid>,
        pipes: Vec<String>,
        cgroup: Option<rein_sandbox::PidsCgroup>,
    ) -> GroupGuard {
        if let Some(group) = group {
            crate::lifetime::started(group);
        }
        GroupGuard {
            group,
            pipes,
            cgroup,
        }
    }

    pub(crate) fn kill(&mut self) {
        if let Some(group) = self.group.take() {
            for _ in 0..100 {
                if killpg(group, Signal::SIGKILL).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            crate::lifetime::ended(group);
        }
        crate::lifetime::kill_pipe_holders(&std::mem::take(&mut self.pipes));
        if let Some(cgroup) = self.cgroup.take() {
            cgroup.kill_all();
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What of a person's a hosted run takes part in, beyond its output.
#[derive(Default)]
pub struct Joined {
    /// Viewers watch it: a session of this host (`stream` mode) that
    /// closing stops the run.
    pub view: Option<(SessionHost, String)>,
    /// Its permission questions go to a person (`asks`).
    pub asks: Option<Asks>,
    /// The program takes its request, and words said mid-run, as messages
    /// on its stdin (Claude Code's `--input-format stream-json`, `heard`):
    /// this is the request. `None`: the request is in its arguments, and
    /// words said mid-run are recorded but not heard.
    pub hears: Option<String>,
}

/// Run `spec`, feeding `reducer`, showing progress through `show` and
/// recording through `recorder`; `stop` ends it early, and so does a stop
/// posted to its session. What a person takes part in is `joined`.
#[expect(
    clippy::too_many_lines,
    reason = "the three drive loops become one over per-kind adapters (issue 57)"
)]
pub async fn drive(
    spec: &HostSpec,
    reducer: &mut dyn Reducer,
    mut recorder: Option<&mut Recorder>,
    show: &mut (dyn FnMut(&Progress) + Send),
    stop: CancellationToken,
    joined: Joined,
) -> Result<Driven, AgentError> {
    let started = Instant::now();
    let Joined {
        view,
        mut asks,
        hears,
    } = joined;
    let view = match view {
        Some((host, session)) => Some(View::open(host, session, RenderMode::Stream, &stop)?),
        None => None,
    };
    let Spawned {
        mut child,
        mut guard,
        stderr,
    } = spawn(spec, hears.is_some())?;
    let viewers = view
        .as_ref()
        .filter(|_| hears.is_some())
        .and_then(View::listen);
    let mouth = child.stdin.take().map(Mouth::Stdin);
    let mut ears = Ears::new(mouth, recorder.as_deref(), viewers);
    if let Some(request) = &hears {
        ears.first(request).await?;
    }
    let secrets = secrets_of(spec);
    let mut lines = Lines::new(child.stdout.take(), spec.max_line);
    let deadline = tokio::time::sleep(spec.timeout);
    tokio::pin!(deadline);
    let mut ended = None;
    let mut status = None;
    loop {
        let line = tokio::select! {
            line = lines.next() => line,
            exited = child.wait(), if status.is_none() => {
                status = Some(exited.ok());
                // The program is gone; what it left in its group (holding
                // stdout open) goes too, and the stream ends once drained.
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
            asked = next_question(&mut asks) => {
                let Some(asked) = asked else {
                    asks = None;
                    continue;
                };
                let person = asks.as_ref().map(|a| a.person.clone());
                let mut words = Vec::new();
                let over = crate::asks::answer(
                    asked,
                    person,
                    recorder.as_deref_mut(),
                    (deadline.as_mut(), &stop),
                    &mut words,
                )
                .await?;
                ears.deliver(words, show).await;
                if over.is_some() {
                    ended = over;
                    break;
                }
                continue;
            }
        };
        match line {
            Line::Text(ref bytes) => reducer.feed(bytes),
            Line::Oversize => reducer.oversize(spec.max_line),
            Line::Unterminated => reducer.framing_error("the last stdout line has no newline"),
            Line::End => {
                reducer.stream_ended();
            }
        }
        let steps = masked(reducer.drain(), &secrets);
        if steps.iter().any(|s| matches!(s, Step::TurnClosed(_))) {
            ears.turn_closed();
        }
        if let Some(view) = &view {
            view.show(None, &steps);
        }
        if take_steps(steps, show, recorder.as_deref_mut()).await? {
            ended = Some(Ended::LoopDetected);
        }
        if matches!(line, Line::End) || ended.is_some() {
            break;
        }
    }
    // Viewers learn the run is over as soon as it is.
    drop(view);
    let exit_code = if ended.is_some() {
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
    conclude(spec, reducer, recorder, ended, exit_code, stderr, started).await
}

/// The run's next permission question; never, for a run asked none.
async fn next_question(asks: &mut Option<Asks>) -> Option<Asked> {
    match asks {
        Some(asks) => asks.questions.recv().await,
        None => std::future::pending().await,
    }
}

/// What the child was given as a secret (a variable whose name says so):
/// masked in everything it says, wherever that goes.
pub(crate) fn secrets_of(spec: &HostSpec) -> Vec<String> {
    spec.env
        .iter()
        .filter(|(name, _)| rein_wire::secrets::is_secret_name(name))
        .map(|(_, value)| value.clone())
        .collect()
}

/// `steps` with `secrets` masked in them.
pub(crate) fn masked(steps: Vec<Step>, secrets: &[String]) -> Vec<Step> {
    steps.into_iter().map(|s| s.masked(secrets)).collect()
}

/// Act on a reducer's steps: progress shown, facts recorded, a loop's
/// nudge said. `true` when loop detection says stop.
pub(crate) async fn take_steps(
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

/// A started child: the process, its group's guard, its stderr's tail.
pub(crate) struct Spawned {
    pub(crate) child: tokio::process::Child,
    pub(crate) guard: GroupGuard,
    pub(crate) stderr: tokio::task::JoinHandle<Vec<String>>,
}

/// Start `spec`'s program with only its environment, in its own process
/// group, stdout piped (and stdin, for a protocol agent).
pub(crate) fn spawn(spec: &HostSpec, with_stdin: bool) -> Result<Spawned, AgentError> {
    let (program, args) = spec
        .argv
        .split_first()
        .ok_or_else(|| AgentError::new(codes::INVALID_INPUT, "the hosted command is empty"))?;
    let (argv, cgroup) =
        crate::lifetime::with_parent_death(program, args, spec.env.get("PATH").map(String::as_str))
            .map_err(|e| {
                AgentError::new(
                    codes::HOSTED_AGENT_UNAVAILABLE,
                    format!("cannot start `{}`: {e}", clean(program, 120)),
                )
            })?;
    let mut child = tokio::process::Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(&spec.env)
        .stdin(if with_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            AgentError::new(
                codes::HOSTED_AGENT_UNAVAILABLE,
                format!("cannot start `{}`: {e}", clean(program, 120)),
            )
        })?;
    use std::os::fd::AsRawFd;
    let pipes = [
        child.stdout.as_ref().map(AsRawFd::as_raw_fd),
        child.stderr.as_ref().map(AsRawFd::as_raw_fd),
    ]
    .into_iter()
    .flatten()
    .filter_map(crate::lifetime::pipe_of)
    .collect();
    let guard = GroupGuard::new(
        child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw),
        pipes,
        cgroup,
    );
    let stderr = tokio::spawn(stderr_tail(child.stderr.take(), secrets_of(spec)));
    Ok(Spawned {
        child,
        guard,
        stderr,
    })
}

/// The run's end: the outcome said for how it ended, recorded.
pub(crate) async fn conclude(
    spec: &HostSpec,
    reducer: &mut dyn Reducer,
    recorder: Option<&mut Recorder>,
    ended: Option<Ended>,
    exit_code: Option<i32>,
    stderr: tokio::task::JoinHandle<Vec<String>>,
    started: Instant,
) -> Result<Driven, AgentError> {
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

/// The last few stderr lines, cleaned and cut; what came before is dropped
/// as it is read.
async fn stderr_tail(stream: Option<impl AsyncRead + Unpin>, secrets: Vec<String>) -> Vec<String> {
    let Some(stream) = stream else {
        return Vec::new();
    };
    let mut reader = BufReader::new(stream);
    let mut kept: VecDeque<String> = VecDeque::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // Lines are read whole up to 64 KiB; a longer one is cut there.
        match (&mut reader)
            .take(64 * 1024)
            .read_until(b'\n', &mut buf)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let text = rein_wire::secrets::mask(&String::from_utf8_lossy(&buf), &secrets);
                let text = clean(&text, 200);
                if !text.is_empty() {
                    if kept.len() == STDERR_LINES {
                        kept.pop_front();
                    }
                    kept.push_back(text);
                }
            }
        }
    }
    kept.into()
}
