//! One configured MCP server, kept running: started in the background,
//! restarted with backoff when it crashes or stops answering, its tool
//! list refreshed when it says the list changed.
//!
//! Nothing here waits for a server on a caller's behalf: a caller reads the
//! server's state as it is now ([`ServerHandle::snapshot`]) and a call to a
//! server that is not ready fails at once (`mcp_server_unavailable`). So a
//! slow or broken server never blocks a turn; it joins the catalog at a
//! later turn boundary.
//!
//! Not here: which tools a conversation sees (`tools.rs`) or how results
//! read (`catalog.rs`).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, NotificationContext, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::catalog::{RemoteTool, tools_of};
use crate::config::{ServerConfig, Transport};
use crate::progress::{Heard, Notes};

/// After this many failed starts in a row the server is left failed.
const MAX_FAILED_STARTS: u32 = 6;
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How often a running server is looked at for having gone away.
const WATCH: Duration = Duration::from_millis(200);
/// How long a server that let a call time out has to answer a ping.
const PING: Duration = Duration::from_secs(5);
/// The most stderr lines of a server kept (for `rein mcp list` and errors).
const STDERR_LINES: usize = 20;

/// What a server is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Starting (or restarting) and not ready yet.
    Starting,
    /// Ready: its tools are offered.
    Ready,
    /// It failed; `retrying` says whether it will be tried again.
    Failed {
        /// What went wrong.
        error: String,
        /// Whether another start is coming.
        retrying: bool,
    },
    /// Shut down.
    Stopped,
}

impl Status {
    /// A word for it (`starting`, `ready`, `failed`, `stopped`).
    pub fn word(&self) -> &'static str {
        match self {
            Status::Starting => "starting",
            Status::Ready => "ready",
            Status::Failed { .. } => "failed",
            Status::Stopped => "stopped",
        }
    }
}

/// A server's state at one moment.
#[derive(Clone)]
pub struct Snapshot {
    /// Its status.
    pub status: Status,
    /// Its tools by rein name (empty unless it was ever ready; kept from
    /// its last list while it restarts).
    pub tools: Arc<BTreeMap<String, RemoteTool>>,
    /// Tools left out of its list, and why.
    pub left_out: Vec<String>,
    /// Bumped at every change of status or tools.
    pub epoch: u64,
    /// Starts so far (the first included).
    pub starts: u32,
    /// `tools/list_changed` notifications heard.
    pub list_changes: u64,
    /// Its process id (stdio servers, while running).
    pub pid: Option<u32>,
    /// Its last lines on stderr (stdio servers).
    pub stderr: Vec<String>,
}

struct State {
    snapshot: Snapshot,
    peer: Option<Peer<RoleClient>>,
}

pub(crate) struct Shared {
    pub(crate) config: ServerConfig,
    state: Mutex<State>,
    list_changed: Notify,
    restart: Notify,
    stop: CancellationToken,
    /// Calls' progress notes, filed as the connection is read.
    pub(crate) progress: Arc<Notes>,
}

/// A running server's handle; cheap to clone. Dropping every handle does
/// not stop it: [`ServerHandle::shutdown`] does.
#[derive(Clone)]
pub struct ServerHandle {
    pub(crate) shared: Arc<Shared>,
}

/// What rein answers a server with.
#[derive(Clone)]
struct Handler {
    shared: Arc<Shared>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.shared.lock().snapshot.list_changes += 1;
        self.shared.list_changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info.capabilities = ClientCapabilities::default();
        info.client_info = Implementation::new("rein", env!("CARGO_PKG_VERSION"));
        info
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, change: impl FnOnce(&mut State)) {
        let mut state = self.lock();
        change(&mut state);
        state.snapshot.epoch += 1;
    }
}

impl ServerHandle {
    /// Start `config`'s server in the background; returns at once.
    pub fn start(config: ServerConfig) -> ServerHandle {
        let shared = Arc::new(Shared {
            config,
            state: Mutex::new(State {
                snapshot: Snapshot {
                    status: Status::Starting,
                    tools: Arc::default(),
                    left_out: Vec::new(),
                    epoch: 0,
                    starts: 0,
                    list_changes: 0,
                    pid: None,
                    stderr: Vec::new(),
                },
                peer: None,
            }),
            list_changed: Notify::new(),
            restart: Notify::new(),
            stop: CancellationToken::new(),
            progress: Arc::default(),
        });
        tokio::spawn(supervise(shared.clone()));
        ServerHandle { shared }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.shared.config.name
    }

    /// Its configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
    }

    /// Its state now.
    pub fn snapshot(&self) -> Snapshot {
        self.shared.lock().snapshot.clone()
    }

    /// The connection, if it is ready.
    pub(crate) fn peer(&self) -> Option<Peer<RoleClient>> {
        let state = self.shared.lock();
        match state.snapshot.status {
            Status::Ready => state.peer.clone(),
            _ => None,
        }
    }

    /// A call timed out: if the server does not answer a ping either, it
    /// hangs, and is restarted.
    pub(crate) async fn check_alive(&self, peer: &Peer<RoleClient>) {
        let pinged = tokio::time::timeout(
            PING,
            peer.send_request(rmcp::model::ClientRequest::PingRequest(Default::default())),
        )
        .await;
        if !matches!(pinged, Ok(Ok(_))) {
            tracing::warn!(server = %self.name(), "an MCP server stopped answering; restarting it");
            self.shared.restart.notify_one();
        }
    }

    /// Stop it (its process is ended) and keep it stopped.
    pub fn shutdown(&self) {
        self.shared.stop.cancel();
    }
}

fn backoff(failures: u32) -> Duration {
    FIRST_BACKOFF
        .saturating_mul(1 << failures.saturating_sub(1).min(10))
        .min(MAX_BACKOFF)
}

async fn supervise(shared: Arc<Shared>) {
    let mut failures = 0u32;
    loop {
        shared.set(|s| {
            s.snapshot.status = Status::Starting;
            s.snapshot.starts += 1;
        });
        let started = tokio::select! {
            () = shared.stop.cancelled() => break,
            started = tokio::time::timeout(shared.config.start_timeout, connect(&shared)) => started,
        };
        let error = match started {
            Ok(Ok(service)) => {
                failures = 0;
                match run(&shared, service).await {
                    Ended::Stopped => break,
                    Ended::Lost(why) => why,
                }
            }
            Ok(Err(why)) => {
                failures += 1;
                why
            }
            Err(_) => {
                failures += 1;
                format!(
                    "it did not finish starting within {} s",
                    shared.config.start_timeout.as_secs()
                )
            }
        };
        // What a server said (its stderr, its errors) is someone else's
        // text: it reaches logs and terminals only made visible.
        let error = rein_wire::visible::visible(&error).into_owned();
        let retrying = failures < MAX_FAILED_STARTS;
        tracing::warn!(server = %shared.config.name, %error, retrying, "an MCP server is not available");
        shared.set(|s| {
            s.peer = None;
            s.snapshot.pid = None;
            s.snapshot.status = Status::Failed { error, retrying };
        });
        if !retrying {
            shared.stop.cancelled().await;
            break;
        }
        tokio::select! {
            () = shared.stop.cancelled() => break,
            () = tokio::time::sleep(backoff(failures.max(1))) => {}
        }
    }
    shared.set(|s| {
        s.peer = None;
        s.snapshot.pid = None;
        s.snapshot.status = Status::Stopped;
    });
}

enum Ended {
    Stopped,
    Lost(String),
}

type Service = RunningService<RoleClient, Handler>;

/// Connect, initialize and list the tools.
async fn connect(shared: &Arc<Shared>) -> Result<Service, String> {
    let handler = Handler {
        shared: shared.clone(),
    };
    let service = match &shared.config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            env_from,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).env_clear().envs(env);
            for name in env_from {
                if let Some(value) = std::env::var_os(name) {
                    cmd.env(name, value);
                }
            }
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            let (process, stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|err| format!("`{command}` could not be started: {err}"))?;
            let pid = process.id();
            shared.set(|s| {
                s.snapshot.pid = pid;
                s.snapshot.stderr.clear();
            });
            if let Some(stderr) = stderr {
                tokio::spawn(keep_stderr(shared.clone(), stderr));
            }
            let process = Heard::new(process, shared.progress.clone());
            handler
                .serve_with_lifecycle(process, ClientLifecycleMode::Initialize)
                .await
                .map_err(|err| format!("it did not initialize: {err}"))?
        }
        Transport::Http { url, bearer_env } => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(var) = bearer_env {
                let token = std::env::var(var)
                    .map_err(|_| format!("its token variable `{var}` is not set"))?;
                config.auth_header = Some(token);
            }
            // rustls with ring, as the gateway's client (the first install
            // wins; without one, building the client panics).
            let _ = rustls::crypto::ring::default_provider().install_default();
            let client = reqwest::Client::builder()
                .build()
                .map_err(|err| format!("no HTTP client: {err}"))?;
            let transport = StreamableHttpClientTransport::with_client(client, config);
            let transport = Heard::new(transport, shared.progress.clone());
            handler
                .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
                .await
                .map_err(|err| format!("it did not initialize: {err}"))?
        }
    };
    let listed = list(service.peer()).await?;
    publish(shared, service.peer().clone(), &listed);
    Ok(service)
}

async fn list(peer: &Peer<RoleClient>) -> Result<Vec<Value>, String> {
    let tools = peer
        .list_all_tools()
        .await
        .map_err(|err| format!("its tools could not be listed: {err}"))?;
    Ok(tools
        .iter()
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect())
}

fn publish(shared: &Shared, peer: Peer<RoleClient>, listed: &[Value]) {
    let (tools, left_out) = tools_of(&shared.config, listed);
    shared.set(|s| {
        s.snapshot.tools = Arc::new(tools);
        s.snapshot.left_out = left_out;
        s.snapshot.status = Status::Ready;
        s.peer = Some(peer);
    });
}

/// Serve a ready server until it goes away, hangs, or rein stops it.
async fn run(shared: &Arc<Shared>, mut service: Service) -> Ended {
    let mut watch = tokio::time::interval(WATCH);
    loop {
        tokio::select! {
            () = shared.stop.cancelled() => {
                let _ = service.close_with_timeout(Duration::from_secs(2)).await;
                return Ended::Stopped;
            }
            () = shared.restart.notified() => {
                // A hung server may not end when asked (a stopped process
                // ignores SIGTERM): killed first. Its pid is still ours —
                // the transport holds the child unreaped until it drops.
                kill(shared);
                let _ = service.close_with_timeout(Duration::from_secs(2)).await;
                return Ended::Lost("it stopped answering (a call timed out and a ping went unanswered)".into());
            }
            () = shared.list_changed.notified() => {
                let listed = tokio::time::timeout(shared.config.call_timeout, list(service.peer())).await;
                match listed {
                    Ok(Ok(listed)) => publish(shared, service.peer().clone(), &listed),
                    Ok(Err(why)) => tracing::warn!(server = %shared.config.name, %why, "a changed tool list could not be read"),
                    Err(_) => shared.restart.notify_one(),
                }
            }
            _ = watch.tick() => {
                if service.is_closed() || service.peer().is_transport_closed() {
                    let reason = service.close().await;
                    let stderr = shared.lock().snapshot.stderr.last().cloned();
                    return Ended::Lost(match stderr {
                        Some(line) => format!("it went away ({reason:?}); its last words: {line}"),
                        None => format!("it went away ({reason:?})"),
                    });
                }
            }
        }
    }
}

/// SIGKILL the server's process, if it has one.
fn kill(shared: &Shared) {
    let pid = shared.lock().snapshot.pid;
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

async fn keep_stderr(shared: Arc<Shared>, stderr: tokio::process::ChildStderr) {
    use futures::StreamExt;
    use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
    // Bounded lines: a server cannot grow rein's memory by never ending one.
    let mut lines = FramedRead::new(stderr, LinesCodec::new_with_max_length(4096));
    while let Some(line) = lines.next().await {
        let line = match line {
            Ok(line) => rein_wire::visible::visible(&line.chars().take(400).collect::<String>())
                .into_owned(),
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                "(a line over 4096 bytes, left out)".into()
            }
            Err(LinesCodecError::Io(_)) => break,
        };
        let mut state = shared.lock();
        let kept = &mut state.snapshot.stderr;
        if kept.len() == STDERR_LINES {
            kept.remove(0);
        }
        kept.push(line);
    }
}
