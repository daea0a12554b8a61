//! `rein serve`: the HTTP API (`rein-server`) over the embedded store, with
//! the working folder's file tools — conversations a browser or a script
//! drives, decided by a person through the API or any other surface.
//!
//! It binds 127.0.0.1 (`--port`, 0 picks one); another address only with
//! `--bind` and a warning. It prints a login URL carrying a one-time token
//! (the page exchanges it for an HttpOnly cookie). A script authenticates
//! with the bearer token the person puts in `REIN_SERVE_TOKEN` — rein never
//! prints one.
//!
//! Not here: the API itself (`rein-server`).

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use rein::server::Server;
use rein::sessions::Store;
use rein::wire::{AgentError, error::codes};

use super::chat::ProviderArgs;

/// The shortest bearer token `REIN_SERVE_TOKEN` may hold.
const MIN_TOKEN_CHARS: usize = 32;

/// `rein serve`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeOptions {
    /// The port (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Listen on another address than 127.0.0.1 (anyone who can reach it
    /// can try the token: only on a network you trust).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<IpAddr>,
    /// The folder the file tools work in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// The model provider.
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// The agent conversations run unless they name another (`[agents.NAME]`;
    /// every native named agent is offered too: `GET /api/agents`).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Where rein's config lives (set by `rein` from `--home`).
    #[arg(skip)]
    pub home: Option<PathBuf>,
}

fn say(info: &mut impl Write, text: &str) -> Result<(), AgentError> {
    writeln!(info, "{text}").map_err(super::output::output_error)
}

/// Serve until Ctrl-C.
pub async fn run(
    options: ServeOptions,
    store: Arc<dyn Store>,
    info: &mut impl Write,
) -> Result<(), AgentError> {
    let root_dir = super::session_root::absolute(options.root.as_deref())?;
    let surface = rein::compose::for_surface(
        rein::compose::SurfaceWanted {
            home: options.home.clone(),
            root: &root_dir,
            name: options.agent.as_deref(),
            flags: options.provider.spec(),
            verb: "serve",
            default_instructions: "You are a helpful assistant working in the person's project folder. Use the tools to look at files before answering questions about them. Answer concisely.",
        },
        &store,
        info,
    )
    .await?;
    let ip = options.bind.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    if !ip.is_loopback() {
        say(
            info,
            &format!(
                "warning: serving on {ip}, not only this machine: anyone who can reach it can try to log in"
            ),
        )?;
    }
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(ip, options.port))
        .await
        .map_err(|e| {
            AgentError::new(
                codes::INVALID_INPUT,
                format!("cannot listen on {ip}:{}: {e}", options.port),
            )
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| AgentError::new(codes::INTERNAL, e.to_string()))?;
    let model = surface.agent.profile.model.clone();
    let mut server = Server::of(store, surface.agent, addr);
    for (name, agent) in surface.named {
        server = server.with_agent(&name, agent);
    }
    // The page shows the memory its agent remembers in.
    if let Some(memory) = surface.memory {
        server = server.with_memory(memory.store, memory.scope);
    }
    // The page and the API list the hosted runs served under this home.
    let hosts = rein::sessions::home::resolve(options.home.clone())?;
    server = server.with_hosted(move || {
        let hosts = hosts.clone();
        Box::pin(async move { rein::host::attach::live_sessions(&hosts).await })
    });
    if let Ok(token) = std::env::var("REIN_SERVE_TOKEN") {
        if token.chars().count() < MIN_TOKEN_CHARS {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                format!("REIN_SERVE_TOKEN must be at least {MIN_TOKEN_CHARS} characters"),
            ));
        }
        server = server.with_bearer(&token);
    }
    let login = server.secrets().login_token().unwrap_or_default();
    say(
        info,
        &format!(
            "rein serve · {} via {} · root {}",
            model,
            surface.provider,
            root_dir.display()
        ),
    )?;
    say(info, &format!("open http://{addr}/api/login?token={login}"))?;
    say(
        info,
        "(the link works once; scripts send Authorization: Bearer $REIN_SERVE_TOKEN)",
    )?;
    let _servers = surface.mcp;
    tokio::select! {
        served = server.serve(listener) => served.map_err(|e| AgentError::new(codes::INTERNAL, format!("the server stopped: {e}"))),
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}
