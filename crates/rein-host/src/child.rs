//! The hosted program as a child process: what to run ([`HostSpec`]), the
//! process started with exactly the environment its spec names (nothing of
//! rein's), in its own process group, its whole group killed when the run
//! is over or the guard is dropped mid-run (`GroupGuard`), its stderr kept
//! as a few bounded, cleaned lines with the secrets it was given masked;
//! and how a run ended ([`Ended`], [`Driven`]).
//!
//! Not here: the run's loop (`driver.rs`), what the program says (the
//! kinds' adapters and reducers).

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rein_wire::AgentError;
use rein_wire::error::codes;
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

use crate::progress::clean;
use crate::reducer::{Outcome, Step};

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
    /// It ended to switch its session to the program's own terminal UI
    /// (`Stays::switchable`): the session goes on, its record unfinished.
    pub switched: bool,
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
