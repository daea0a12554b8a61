//! The container backend: each command in a fresh container of a local
//! image, through the machine's Docker or Podman — how people isolate
//! commands where landlock is not, and how a project gets a toolchain the
//! host lacks (`[sandbox] backend = "container"`, `image = "…"`).
//!
//! The contract is the Linux backend's:
//! - **files**: the root is bound in at its own path (so paths read the
//!   same inside and out) and nothing else of the host's is; `.git`,
//!   `.rein` and the protected paths are bound read-only over it; what
//!   the command writes outside the root stays in the container, which is
//!   removed when it ends;
//! - **network**: none (`--network none`) unless the config allows it;
//! - **processes, signals, devices**: the container's own pid, IPC and UTS
//!   namespaces, no capability, `no-new-privileges`, the runtime's seccomp
//!   profile, its own `/dev`; an init reaps and forwards;
//! - **limits**: processes (`--pids-limit`), memory, CPU seconds, file
//!   size and open files as the Linux backend's [`Limits`];
//! - **lifetime**: at the wall-clock limit, when the run is dropped (a
//!   cancelled turn), and when rein dies, the container is removed: a
//!   keeper process (`sh`, a session of its own) holds the read end of a
//!   pipe whose write end only rein holds, and removes the container when
//!   it reads the end of it; the next check sweeps a dead rein's leftovers.
//!
//! The image is local: it is never pulled (`--pull never`), so a command
//! never waits on a registry and nothing is fetched behind the person's
//! back. The command runs as rein's own user and group, so what it writes
//! in the root is the person's. Its output is not logged by the runtime
//! (`--log-driver none`).
//!
//! Not here: whether a command may run (the policy), the Linux backend.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rein_wire::{AgentError, error::codes};
use serde::Deserialize;
use tokio::io::AsyncWriteExt;

use crate::run::{BoxFuture, Ran, Request, Sandbox};
use crate::spec::Limits;

/// Which program runs the containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Runtime {
    /// `docker`.
    Docker,
    /// `podman` (the same options).
    Podman,
}

impl Runtime {
    fn program(self) -> &'static str {
        match self {
            Runtime::Docker => "docker",
            Runtime::Podman => "podman",
        }
    }
}

/// The label every container of rein's carries, with the pid of the rein
/// that made it as its value: a check sweeps those of a dead rein.
const LABEL: &str = "rein.sandbox.pid";

/// The variables the runtime's own client reads (where its daemon is,
/// its config), passed to the client from rein's environment — never
/// into the container unless the request names them too.
const CLIENT_VARS: &[&str] = &[
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "CONTAINER_HOST",
    "CONTAINERS_CONF",
    "XDG_RUNTIME_DIR",
    "HOME",
];

/// The keeper: waits for the end of its stdin; unless it read `done`
/// first, removes the container (`$1` the client, `$2` the name).
const KEEPER: &str =
    "IFS= read -r line; [ \"$line\" = done ] || exec \"$1\" rm -f \"$2\" >/dev/null 2>&1";

/// The backend: a local image, the root bound in, the Linux backend's
/// bounds.
#[derive(Debug, Clone)]
pub struct ContainerSandbox {
    runtime: Runtime,
    client: PathBuf,
    image: String,
    write: Vec<PathBuf>,
    protect: Vec<PathBuf>,
    network: bool,
    limits: Limits,
}

impl ContainerSandbox {
    /// Commands in containers of `image` writing only under `write`,
    /// through `runtime` (unset: Docker where its client is installed,
    /// else Podman). `sandbox_unavailable` when neither client is
    /// installed, the image names nothing, or a root cannot be bound.
    pub fn new(
        runtime: Option<Runtime>,
        image: &str,
        write: Vec<PathBuf>,
    ) -> Result<ContainerSandbox, AgentError> {
        let (runtime, client) = match runtime {
            Some(runtime) => (runtime, find(runtime.program())),
            None => [Runtime::Docker, Runtime::Podman]
                .into_iter()
                .find_map(|r| find(r.program()).map(|p| (r, Some(p))))
                .unwrap_or((Runtime::Docker, None)),
        };
        let client = client.ok_or_else(|| {
            unavailable(format!(
                "the container backend needs `{}`, which is not installed",
                runtime.program()
            ))
        })?;
        let image = image.trim();
        if image.is_empty() || image.starts_with('-') || image.chars().any(char::is_whitespace) {
            return Err(unavailable(format!(
                "`{image}` is no image name (`[sandbox] image`)"
            )));
        }
        for root in &write {
            bindable(root)?;
        }
        Ok(ContainerSandbox {
            runtime,
            client,
            image: image.to_owned(),
            write,
            protect: Vec::new(),
            network: false,
            limits: Limits::default(),
        })
    }

    /// Also keep `paths` read-only (beside every root's `.git` and
    /// `.rein`, always kept).
    pub fn protecting(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.protect.extend(paths);
        self
    }

    /// Let it reach the network (the runtime's default bridge).
    pub fn with_network(mut self, network: bool) -> Self {
        self.network = network;
        self
    }

    /// Its resource bounds.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Check that it can run here: the runtime answers and has the image
    /// (`sandbox_unavailable` says which is missing, and how to get it).
    /// Sweeps the containers a dead rein left.
    pub async fn check(&self) -> Result<(), AgentError> {
        let inspect = self
            .client_command()
            .args(["image", "inspect", "--format", "{{.Id}}", &self.image])
            .output();
        let out = tokio::time::timeout(Duration::from_secs(60), inspect)
            .await
            .map_err(|_| unavailable(format!("`{}` did not answer in 60 s", self.program())))?
            .map_err(|e| unavailable(format!("`{}` could not be run: {e}", self.program())))?;
        if !out.status.success() {
            let said = String::from_utf8_lossy(&out.stderr);
            let said = said.trim();
            let hint = if said.contains("No such image") || said.contains("image not known") {
                format!(
                    "; it is never pulled by rein: `{} pull {}` (or load it) first",
                    self.program(),
                    self.image
                )
            } else {
                String::new()
            };
            return Err(unavailable(format!(
                "`{} image inspect {}` failed: {said}{hint}",
                self.program(),
                self.image
            )));
        }
        self.sweep().await;
        Ok(())
    }

    fn program(&self) -> &'static str {
        self.runtime.program()
    }

    /// The client with the variables it reads and nothing else.
    fn client_command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.client);
        command.stdin(Stdio::null());
        client_env(&mut command);
        command
    }

    /// Remove containers whose rein is gone (killed together with its
    /// keepers): bounded by a minute, errors ignored (a sweep is a
    /// courtesy; the keeper is the guarantee).
    async fn sweep(&self) {
        let listed = self
            .client_command()
            .args(["ps", "-a", "--filter", &format!("label={LABEL}")])
            .args([
                "--format",
                &format!("{{{{.ID}}}} {{{{.Label \"{LABEL}\"}}}}"),
            ])
            .output();
        let Ok(Ok(out)) = tokio::time::timeout(Duration::from_secs(60), listed).await else {
            return;
        };
        let dead: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| {
                let (id, pid) = line.split_once(' ')?;
                let pid: i32 = pid.trim().parse().ok()?;
                let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
                (!alive).then(|| id.to_owned())
            })
            .collect();
        if !dead.is_empty() {
            let removal = self
                .client_command()
                .args(["rm", "-f"])
                .args(&dead)
                .output();
            let _ = tokio::time::timeout(Duration::from_secs(60), removal).await;
        }
    }

    /// `run`'s arguments: the bounds, the binds, the user, the request's
    /// variables by name (their values travel in the client's
    /// environment, never on a command line another user can read).
    fn args(&self, request: &Request, name: &str, protect: &[PathBuf]) -> Vec<OsString> {
        let limits = &self.limits;
        let mut args: Vec<String> = vec![
            "run".into(),
            "--rm".into(),
            "--name".into(),
            name.into(),
            "--label".into(),
            format!("{LABEL}={}", std::process::id()),
            "--pull".into(),
            "never".into(),
            "--log-driver".into(),
            "none".into(),
            "--init".into(),
            "--cap-drop".into(),
            "ALL".into(),
            "--security-opt".into(),
            "no-new-privileges".into(),
            "--network".into(),
            if self.network { "bridge" } else { "none" }.into(),
            "--hostname".into(),
            "sandbox".into(),
            "--user".into(),
            format!("{}:{}", nix::unistd::getuid(), nix::unistd::getgid()),
            "--pids-limit".into(),
            limits.processes.to_string(),
            "--memory".into(),
            limits.memory_bytes.to_string(),
            "--memory-swap".into(),
            limits.memory_bytes.to_string(),
            "--ulimit".into(),
            format!("cpu={0}:{0}", limits.cpu_secs),
            "--ulimit".into(),
            format!("fsize={0}:{0}", limits.file_bytes),
            "--ulimit".into(),
            format!("nofile={0}:{0}", limits.open_files),
        ];
        for root in &self.write {
            args.extend(["--mount".into(), bind(root, false)]);
        }
        // After the roots, over them: read-only inside them.
        for path in protect {
            args.extend(["--mount".into(), bind(path, true)]);
        }
        args.extend(["--workdir".into(), request.cwd.display().to_string()]);
        for key in request.env.keys() {
            args.extend(["--env".into(), key.clone()]);
        }
        args.extend(["--".into(), self.image.clone()]);
        args.extend(request.argv.iter().cloned());
        args.into_iter().map(OsString::from).collect()
    }

    /// Remove the container now (at the limit, or when its client was
    /// killed), bounded by a minute.
    async fn remove(&self, name: &str) {
        let removal = self
            .client_command()
            .args(["rm", "-f", name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = tokio::time::timeout(Duration::from_secs(60), removal).await;
    }

    /// The keeper of container `name`, and the pipe it waits on.
    fn keeper(&self, name: &str) -> Result<(tokio::process::Child, Keeper), AgentError> {
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .args(["-c", KEEPER, "rein-keeper"])
            .arg(&self.client)
            .arg(name)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        client_env(&mut command);
        let mut child = command
            .spawn()
            .map_err(|e| unavailable(format!("the container's keeper could not start: {e}")))?;
        let stdin = child.stdin.take();
        Ok((child, Keeper(stdin)))
    }
}

/// The write end of a keeper's pipe: dropped without `done`, the keeper
/// removes the container.
struct Keeper(Option<tokio::process::ChildStdin>);

impl Keeper {
    /// The container is gone: the keeper may end without removing it.
    async fn done(mut self) {
        if let Some(mut pipe) = self.0.take() {
            let _ = pipe.write_all(b"done\n").await;
        }
    }
}

impl Sandbox for ContainerSandbox {
    fn run<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Result<Ran, AgentError>> {
        Box::pin(async move {
            bindable(&request.cwd)?;
            let name = container_name();
            let candidates = crate::protect::candidates(&self.write, &self.protect);
            let existed: Vec<bool> = candidates
                .iter()
                .map(|p| std::fs::symlink_metadata(p).is_ok())
                .collect();
            let protect = crate::protect::existing(&candidates, &self.write);
            for path in &protect {
                bindable(path)?;
            }
            let (mut keeper_process, keeper) = self.keeper(&name)?;
            let mut command = self.client_command();
            command
                .args(self.args(request, &name, &protect))
                // The request's values, for `--env NAME` to copy.
                .envs(&request.env)
                .process_group(0);
            let ran = crate::run::spawn(command, request, self.isolation()).await;
            let gone = matches!(&ran, Ok(r) if !r.timed_out && r.code.is_some());
            if !gone {
                self.remove(&name).await;
            }
            keeper.done().await;
            let _ = tokio::time::timeout(Duration::from_secs(5), keeper_process.wait()).await;
            let mut ran = ran?;
            // 125 and the client's own words: the runtime refused before
            // the command ran.
            let client_said = ran
                .stderr
                .text
                .starts_with(&format!("{}: ", self.program()))
                || ran.stderr.text.contains("Error response from daemon");
            if ran.code == Some(125) && client_said {
                return Err(unavailable(format!(
                    "`{} run` refused: {}",
                    self.program(),
                    ran.stderr.text.trim()
                )));
            }
            ran.made_protected = crate::protect::made(&candidates, &existed);
            Ok(ran)
        })
    }

    fn isolation(&self) -> String {
        format!(
            "container: {} image {}{}",
            self.program(),
            self.image,
            if self.network {
                ", network allowed"
            } else {
                ", no network"
            }
        )
    }
}

/// `command`'s environment: only the variables the runtime's client
/// reads, from rein's own.
fn client_env(command: &mut tokio::process::Command) {
    command.env_clear();
    for name in CLIENT_VARS {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
}

fn unavailable(why: impl Into<String>) -> AgentError {
    AgentError::new(codes::SANDBOX_UNAVAILABLE, why.into())
}

/// Where the runtime's client is (`PATH`, then the usual folders).
fn find(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(["/usr/local/bin", "/usr/bin"].map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// A path a `--mount` can name: absolute, and free of the characters its
/// comma-separated form would misread.
fn bindable(path: &Path) -> Result<(), AgentError> {
    let text = path.to_string_lossy();
    if !path.is_absolute() || text.contains([',', '"', '\n', '\r']) {
        return Err(unavailable(format!(
            "`{}` cannot be bound into a container (an absolute path without `,`, `\"` or a line break)",
            path.display()
        )));
    }
    Ok(())
}

/// A bind of `path` at its own place.
fn bind(path: &Path, read_only: bool) -> String {
    let path = path.display();
    let mut mount = format!("type=bind,source={path},target={path}");
    if read_only {
        mount.push_str(",readonly");
    }
    mount
}

/// A name no other run of this process or another rein's has.
fn container_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "rein-{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
