//! Running one command under a [`Sandbox`]: the request, the bounded
//! result, the Linux backend and the acknowledged host backend.
//!
//! Both backends (and the container backend's client, `container`) start
//! the command in a session of its own, read its output within bounds (the first bytes kept, the rest counted), and at
//! the wall-clock limit — and after it exits, for whatever it left behind
//! — kill its whole process group.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

pub(crate) use async_trait_free::BoxFuture;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rein_wire::{AgentError, error::codes};
use serde::Serialize;
use tokio::io::AsyncReadExt;

use crate::spec::{APART_VAR, Limits, ProtectBy, REFUSED_EXIT, REFUSED_MARK, SPEC_VAR, Spec};

mod async_trait_free {
    /// A boxed, sendable future (the trait stays object-safe without a macro).
    pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
}

/// The most output kept per stream.
pub const MAX_OUTPUT: usize = 256 * 1024;

/// One command to run.
#[derive(Debug, Clone)]
pub struct Request {
    /// The program and its arguments (no shell).
    pub argv: Vec<String>,
    /// Where it runs.
    pub cwd: PathBuf,
    /// Its whole environment.
    pub env: BTreeMap<String, String>,
    /// The wall-clock limit; the group is killed at it.
    pub timeout: Duration,
}

/// What a stream said, bounded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Output {
    /// The first bytes, as text (invalid UTF-8 replaced).
    pub text: String,
    /// Bytes past the kept ones.
    pub dropped: u64,
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ran {
    /// Its exit code (`None`: ended by a signal).
    pub code: Option<i32>,
    /// Whether the wall-clock limit ended it.
    pub timed_out: bool,
    /// Its stdout.
    pub stdout: Output,
    /// Its stderr.
    pub stderr: Output,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// Which backend ran it, and how isolated (`linux: landlock+seccomp`,
    /// `host: NOT ISOLATED`).
    pub isolation: String,
    /// Protected paths (`.git`, `.rein`…) that did not exist when it
    /// started and do now: it made them, and nothing kept them read-only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub made_protected: Vec<PathBuf>,
}

/// Something that runs commands confined.
pub trait Sandbox: Send + Sync + std::fmt::Debug {
    /// Run `request`. An `Err` means it did not run (the backend refused);
    /// a command that failed is an `Ok` with its exit code.
    fn run<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Result<Ran, AgentError>>;

    /// A short description of the isolation, for results and the
    /// authority record.
    fn isolation(&self) -> String;

    /// Whether it confines what it runs (the host backend does not): a
    /// command someone other than the person sent runs only where it does.
    fn confines(&self) -> bool {
        true
    }
}

/// The Linux backend: landlock, seccomp, rlimits, a session killed whole.
#[derive(Debug, Clone)]
pub struct LinuxSandbox {
    helper: PathBuf,
    helper_args: Vec<String>,
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    network: bool,
    limits: Limits,
    bwrap: Option<PathBuf>,
    protect: Vec<PathBuf>,
    protect_by: ProtectBy,
}

/// The system trees a command reads by default (programs, libraries,
/// the loader's cache, certificates), never `/proc`, `/root` or `/home`.
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/etc/ld.so.cache",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/dev/null",
    "/dev/zero",
    "/dev/urandom",
    "/dev/random",
];

impl LinuxSandbox {
    /// A sandbox whose helper binary is `helper` (`rein-sandbox-exec`),
    /// reading the system trees and writing only under `write`.
    pub fn new(helper: impl Into<PathBuf>, write: Vec<PathBuf>) -> LinuxSandbox {
        LinuxSandbox {
            helper: helper.into(),
            helper_args: Vec::new(),
            read: SYSTEM_READ.iter().map(PathBuf::from).collect(),
            write,
            network: false,
            limits: Limits::default(),
            bwrap: None,
            protect: Vec::new(),
            protect_by: ProtectBy::Mounts,
        }
    }

    /// Also keep `paths` read-only (beside every writable root's `.git`
    /// and `.rein`, always kept): rein's home under the root, a
    /// definition's own (see [`crate::protect`]).
    pub fn protecting(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.protect.extend(paths);
        self
    }

    /// How the protected paths are kept read-only (default: mounts, with
    /// landlock where none can be made).
    pub fn protect_by(mut self, by: ProtectBy) -> Self {
        self.protect_by = by;
        self
    }

    /// Also run inside bubblewrap (`bwrap` at `path`; see
    /// [`crate::bwrap::find`]): namespaces holding only the named trees.
    pub fn with_bubblewrap(mut self, path: PathBuf) -> Self {
        self.bwrap = Some(path);
        self
    }

    /// A sandbox whose helper is this very binary, run with
    /// [`HELPER_ARG`](crate::helper::HELPER_ARG) (its `main` must call
    /// [`helper::main`](crate::helper::main) when it sees that argument).
    pub fn self_helper(write: Vec<PathBuf>) -> Result<LinuxSandbox, AgentError> {
        let exe = std::env::current_exe().map_err(|e| {
            AgentError::new(
                codes::SANDBOX_UNAVAILABLE,
                format!("this program's path: {e}"),
            )
        })?;
        Ok(LinuxSandbox::binary_helper(exe, write))
    }

    /// A sandbox whose helper is the product binary at `exe`, run with
    /// [`HELPER_ARG`](crate::helper::HELPER_ARG) — as [`Self::self_helper`],
    /// for a program that is not the one running (its tests, say).
    pub fn binary_helper(exe: impl Into<PathBuf>, write: Vec<PathBuf>) -> LinuxSandbox {
        let mut sandbox = LinuxSandbox::new(exe, write);
        sandbox.helper_args = vec![crate::helper::HELPER_ARG.to_owned()];
        sandbox
    }

    /// Also let it read `paths`.
    pub fn reading(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.read.extend(paths);
        self
    }

    /// Let it open network sockets.
    pub fn with_network(mut self, network: bool) -> Self {
        self.network = network;
        self
    }

    /// Its resource bounds.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Check that it can confine here: runs `true` through the helper.
    /// `sandbox_unavailable` says why not (no landlock, no helper).
    pub async fn check(&self) -> Result<(), AgentError> {
        let request = Request {
            argv: vec!["true".into()],
            cwd: std::env::temp_dir(),
            env: BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]),
            timeout: Duration::from_secs(10),
        };
        let ran = self.run(&request).await?;
        if ran.code == Some(0) {
            Ok(())
        } else {
            Err(AgentError::new(
                codes::SANDBOX_UNAVAILABLE,
                format!("a confined `true` failed: {}", ran.stderr.text.trim()),
            ))
        }
    }
}

impl Sandbox for LinuxSandbox {
    fn run<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Result<Ran, AgentError>> {
        Box::pin(async move {
            let cgroup = crate::cgroup::PidsCgroup::create(self.limits.processes);
            let candidates = crate::protect::candidates(&self.write, &self.protect);
            let existed: Vec<bool> = candidates
                .iter()
                .map(|p| std::fs::symlink_metadata(p).is_ok())
                .collect();
            let protect = crate::protect::existing(&candidates, &self.write);
            let spec = Spec {
                read: self.read.clone(),
                write: self.write.clone(),
                // Bubblewrap binds them itself.
                protect: if self.bwrap.is_none() {
                    protect.clone()
                } else {
                    Vec::new()
                },
                protect_by: self.protect_by,
                network: self.network,
                limits: self.limits,
                pids_cgroup: cgroup.as_ref().map(|c| c.path().to_path_buf()),
                // Inside bubblewrap the helper's parent is bubblewrap, which
                // dies with rein itself (`--die-with-parent`).
                parent: self.bwrap.is_none().then(std::process::id),
                argv: request.argv.clone(),
            };
            let json = serde_json::to_string(&spec)
                .map_err(|e| AgentError::new(codes::INTERNAL, e.to_string()))?;
            let mut command = match &self.bwrap {
                None => {
                    // The helper leads a group of its own from the start
                    // (then a session, `confine`): rein's Ctrl-C is not
                    // its.
                    let mut command = tokio::process::Command::new(&self.helper);
                    command.process_group(0);
                    command
                }
                Some(bwrap) => {
                    let cgroup_dir = cgroup.as_ref().map(|c| c.path().to_path_buf());
                    let mut command = tokio::process::Command::new(bwrap);
                    command
                        .args(crate::bwrap::args(
                            &self.read,
                            &self.write,
                            &[self.helper.as_path()],
                            &cgroup_dir.as_deref().into_iter().collect::<Vec<_>>(),
                            &protect,
                            self.network,
                            &request.cwd,
                        ))
                        .arg("--")
                        .arg(&self.helper)
                        // bwrap leads the group the parent kills.
                        .process_group(0);
                    command
                }
            };
            command
                .args(&self.helper_args)
                .env_clear()
                .envs(&request.env)
                // The helper's own: a request never names it.
                .env_remove(APART_VAR)
                .env(SPEC_VAR, json);
            let mut ran = spawn(command, request, self.isolation()).await?;
            if ran.code == Some(REFUSED_EXIT) && ran.stderr.text.contains(REFUSED_MARK) {
                let why = ran
                    .stderr
                    .text
                    .split(REFUSED_MARK)
                    .nth(1)
                    .unwrap_or("")
                    .trim()
                    .to_owned();
                return Err(AgentError::new(codes::SANDBOX_UNAVAILABLE, why));
            }
            ran.isolation = self.isolation();
            if cgroup.is_some() {
                ran.isolation.push_str(", pids cgroup");
            }
            drop(cgroup);
            ran.made_protected = crate::protect::made(&candidates, &existed);
            Ok(ran)
        })
    }

    fn isolation(&self) -> String {
        format!(
            "linux: {}landlock + seccomp + rlimits{}",
            if self.bwrap.is_some() {
                "bubblewrap + "
            } else {
                ""
            },
            if self.network {
                ", network allowed"
            } else {
                ", no network"
            }
        )
    }
}

/// No isolation at all: runs only when the person acknowledged that, and
/// every result says `NOT ISOLATED`.
#[derive(Debug, Clone)]
pub struct HostSandbox {
    _acknowledged: (),
}

impl HostSandbox {
    /// The host backend, if `acknowledged` (the config's
    /// `unsafe_host_not_isolated = true`); else `host_unacknowledged`.
    pub fn new(acknowledged: bool) -> Result<HostSandbox, AgentError> {
        if acknowledged {
            Ok(HostSandbox { _acknowledged: () })
        } else {
            Err(AgentError::new(
                codes::HOST_UNACKNOWLEDGED,
                "the host backend runs commands with all of this user's rights; it needs `unsafe_host_not_isolated = true`",
            ))
        }
    }
}

impl Sandbox for HostSandbox {
    fn run<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Result<Ran, AgentError>> {
        Box::pin(async move {
            let (program, args) = request
                .argv
                .split_first()
                .ok_or_else(|| AgentError::new(codes::INVALID_INPUT, "an empty command"))?;
            let mut command = tokio::process::Command::new(program);
            command
                .args(args)
                .env_clear()
                .envs(&request.env)
                .process_group(0);
            spawn(command, request, self.isolation()).await
        })
    }

    fn isolation(&self) -> String {
        "host: NOT ISOLATED (acknowledged)".into()
    }

    fn confines(&self) -> bool {
        false
    }
}

pub(crate) async fn spawn(
    mut command: tokio::process::Command,
    request: &Request,
    isolation: String,
) -> Result<Ran, AgentError> {
    if request.argv.is_empty() {
        return Err(AgentError::new(codes::INVALID_INPUT, "an empty command"));
    }
    let started = Instant::now();
    command
        .current_dir(&request.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // The terminal's signals are held in this thread while the child is
    // made: one sent to rein's group before the child has left it stays
    // pending in the child (not fatal there) until the helper drops it
    // (`confine::release_terminal_signals`).
    let before = crate::confine::hold_terminal_signals();
    let spawned = command.spawn();
    crate::confine::restore_signal_mask(before);
    let mut child = spawned.map_err(|e| {
        AgentError::new(
            codes::SANDBOX_UNAVAILABLE,
            format!("the command could not be started: {e}"),
        )
    })?;
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    // Known while it runs, so a surface ending on a signal kills it.
    let _live = crate::live::Live::new(group);
    let stdout = tokio::spawn(bounded(child.stdout.take()));
    let stderr = tokio::spawn(bounded(child.stderr.take()));
    let waited = tokio::time::timeout(request.timeout, child.wait()).await;
    // Whatever it left behind in its group goes too (a sleeper in the
    // background); at the limit, everything in it.
    kill_group(group);
    let (status, timed_out) = match waited {
        Ok(status) => (status.ok(), false),
        Err(_) => (child.wait().await.ok(), true),
    };
    let stdout = collected(stdout).await;
    let stderr = collected(stderr).await;
    Ok(Ran {
        code: status.and_then(|s| s.code()),
        timed_out,
        stdout,
        stderr,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        isolation,
        made_protected: Vec::new(),
    })
}

/// A reader's output; one still reading after the group died (a process
/// outside it holds the pipe) is given a moment, then dropped.
async fn collected(reader: tokio::task::JoinHandle<Output>) -> Output {
    let abort = reader.abort_handle();
    match tokio::time::timeout(Duration::from_secs(2), reader).await {
        Ok(Ok(output)) => output,
        _ => {
            abort.abort();
            Output::default()
        }
    }
}

/// SIGKILL every process of the group until none is left.
fn kill_group(group: Option<Pid>) {
    let Some(group) = group else { return };
    for _ in 0..100 {
        if killpg(group, Signal::SIGKILL).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

async fn bounded(stream: Option<impl tokio::io::AsyncRead + Unpin>) -> Output {
    let Some(mut stream) = stream else {
        return Output::default();
    };
    let mut kept = Vec::new();
    let mut dropped = 0u64;
    let mut buf = [0u8; 8192];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let room = MAX_OUTPUT.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
        dropped += (n - n.min(room)) as u64;
    }
    Output {
        text: String::from_utf8_lossy(&kept).into_owned(),
        dropped,
    }
}
