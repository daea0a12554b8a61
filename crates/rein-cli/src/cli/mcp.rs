//! `rein mcp`: the MCP servers a person configured (`list`), the chat's
//! `--mcp NAME`, and rein served as an MCP server (`serve`).
//!
//! `rein mcp serve --root DIR` offers the folder's file tools over stdio
//! (or streamable HTTP on 127.0.0.1 with `--http PORT`). Every call is
//! recorded in a session; one that changes a file waits until a person
//! decides it with `rein approve SESSION` (the command says so on stderr,
//! which an MCP client shows as the server's log). Nothing the client
//! sends can approve a call.
//!
//! Not here: the MCP machinery (`rein-mcp`).

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rein::mcp::{McpClients, McpConfig, McpServe, ServeSettings, config::CONFIG_FILE};
use rein::sessions::Store;
use rein::wire::{AgentError, error::codes};

/// `rein mcp`'s subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum McpCommand {
    /// The configured MCP servers: their status, tools and the tools' classes
    /// (starts each, waits for it a little, stops it).
    List {
        /// Wait at most this many seconds for the servers to start.
        #[arg(long, default_value_t = 15)]
        wait: u64,
    },
    /// Serve the folder's file tools over MCP, behind rein's approvals.
    Serve {
        /// The folder the file tools work in (default: the current directory).
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
        /// Serve streamable HTTP on 127.0.0.1 at this port (0 picks one)
        /// instead of stdio.
        #[arg(long, value_name = "PORT")]
        http: Option<u16>,
        /// Record the calls in this session (default: a new one).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// The longest a call waits for a person, in seconds.
        #[arg(long, default_value_t = 600)]
        approval_wait: u64,
        /// Also let a client that supports elicitation ask its person
        /// (only for an editor or chat window: an agent as client could
        /// answer itself).
        #[arg(long)]
        approve_by_elicitation: bool,
    },
}

fn config(home: Option<PathBuf>) -> Result<McpConfig, AgentError> {
    let home = rein::sessions::home::resolve(home)?;
    let loaded = rein::config::Loaded::load(&home, None)?;
    McpConfig::parse(&loaded.section_text("mcp"))
}

fn io(err: std::io::Error) -> AgentError {
    super::output::output_error(err)
}

/// Print a line of `rein mcp list`: it quotes servers' own words (their
/// errors, their tools' names), so it goes through `visible`.
fn line(out: &mut impl Write, text: &str) -> Result<(), AgentError> {
    writeln!(out, "{}", rein::wire::visible::visible(text)).map_err(io)
}

/// `rein mcp list`.
pub async fn list(
    home: Option<PathBuf>,
    wait: u64,
    out: &mut impl Write,
) -> Result<(), AgentError> {
    let config = config(home.clone())?;
    if config.servers.is_empty() {
        let home = rein::sessions::home::resolve(home)?;
        writeln!(
            out,
            "no MCP servers are configured (add [mcp.servers.NAME] to {})",
            home.join(CONFIG_FILE).display()
        )
        .map_err(io)?;
        return Ok(());
    }
    let clients = McpClients::start(&config);
    clients.settled(Duration::from_secs(wait)).await;
    for server in clients.servers() {
        let now = server.snapshot();
        let how = match &server.config().transport {
            rein::mcp::Transport::Stdio { command, .. } => format!("stdio `{command}`"),
            rein::mcp::Transport::Http { url, .. } => format!("http {url}"),
        };
        let why = match &now.status {
            rein::mcp::Status::Failed { error, .. } => format!(": {error}"),
            _ => String::new(),
        };
        line(
            out,
            &format!(
                "{}  {}  {} tools  ({how}){why}",
                server.name(),
                now.status.word(),
                now.tools.len()
            ),
        )?;
        for (name, tool) in now.tools.iter() {
            line(out, &format!("  {name}  {}", tool.class.as_str()))?;
        }
        for why in &now.left_out {
            line(out, &format!("  left out: {why}"))?;
        }
    }
    clients.shutdown();
    Ok(())
}

/// What `rein mcp serve` was asked.
pub struct ServeOptions {
    /// `--home`.
    pub home: Option<PathBuf>,
    /// The folder served.
    pub root: Option<PathBuf>,
    /// Serve streamable HTTP on this port instead of stdio.
    pub http: Option<u16>,
    /// Continue this session.
    pub session: Option<String>,
    /// Seconds a call waits for a person.
    pub approval_wait: u64,
    /// Ask an eliciting client to put approvals to its person.
    pub elicitation: bool,
}

/// `rein mcp serve`.
pub async fn serve(
    store: Arc<dyn Store>,
    options: ServeOptions,
    info: &mut impl Write,
) -> Result<(), AgentError> {
    let ServeOptions {
        home,
        root,
        http,
        session,
        approval_wait,
        elicitation,
    } = options;
    let root_dir = super::session_root::absolute(root.as_deref())?;
    let (_, backend) = rein::files::tools_in(Some(&root_dir), &store)?;
    // The default agent's guards (its policy, its hooks) stand in front of
    // every call a client makes, as they do in a chat.
    let settings = ServeSettings {
        approval_wait: Duration::from_secs(approval_wait.max(1)),
        elicitation,
        guards: rein::compose::guards_for(home, &root_dir, None)?,
    };
    let served = McpServe::open(store, backend, session.as_deref(), settings)
        .await?
        .telling(|line, asked| {
            eprint!(
                "rein mcp serve: {}\n{}",
                rein::wire::visible::visible(line),
                super::preview::asked_lines(&asked.tool, &asked.arguments, asked.preview.as_ref())
            );
        });
    let id = served.session_id().to_owned();
    let result = match http {
        None => {
            writeln!(
                info,
                "rein mcp serve · stdio · root {} · session {id}",
                root_dir.display()
            )
            .map_err(io)?;
            served.serve_stdio().await
        }
        Some(port) => {
            let tokens = http_tokens()?;
            let listener =
                tokio::net::TcpListener::bind(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port))
                    .await
                    .map_err(|e| {
                        AgentError::new(
                            codes::INVALID_INPUT,
                            format!("cannot listen on 127.0.0.1:{port}: {e}"),
                        )
                    })?;
            let addr = listener
                .local_addr()
                .map_err(|e| AgentError::new(codes::INTERNAL, e.to_string()))?;
            writeln!(
                info,
                "rein mcp serve · http://{addr}/mcp · root {} · session {id}",
                root_dir.display()
            )
            .map_err(io)?;
            let cancel = tokio_util::sync::CancellationToken::new();
            let guard = rein::mcp::HttpGuard {
                hosts: vec![
                    format!("127.0.0.1:{}", addr.port()),
                    format!("localhost:{}", addr.port()),
                ],
                tokens,
            };
            // A connection whose request passed the token leaves the
            // strangers (the router refuses a stranger with a 401).
            let app = served
                .router(cancel.clone(), guard)
                .layer(axum::middleware::from_fn(
                    rein::server::trust_unless_unauthorized,
                ))
                .into_make_service_with_connect_info::<rein::server::Peer>();
            // At most so many connections open, so many of them strangers
            // (the oldest closed to make room), each closed when it sends
            // no request head in time or goes idle (slowloris), each
            // streamed message sent when written (no Nagle wait).
            let bounded =
                rein::server::BoundedListener::new(listener, HTTP_CONNECTIONS, HTTP_STRANGERS);
            tokio::select! {
                served = axum::serve(bounded, app) => served.map_err(|e| AgentError::new(codes::INTERNAL, format!("the server stopped: {e}"))),
                _ = tokio::signal::ctrl_c() => { cancel.cancel(); Ok(()) }
            }
        }
    };
    served.close().await?;
    result
}

/// Connections `rein mcp serve --http` holds open at once (one more waits
/// in the kernel's backlog until one closes).
const HTTP_CONNECTIONS: usize = 1024;

/// Of those, connections without the token yet.
const HTTP_STRANGERS: usize = 64;

/// The variable `rein mcp serve --http` reads its bearer token from.
pub const TOKEN_VAR: &str = "REIN_MCP_TOKEN";

/// The token every HTTP caller must send: `REIN_MCP_TOKEN`, at least 32
/// characters (rein never makes one up or prints one).
/// The clients' tokens: `REIN_MCP_TOKEN` holds one, or several separated
/// by commas (one per client: a session is its opener's alone), each at
/// least 32 characters.
fn http_tokens() -> Result<Vec<String>, AgentError> {
    let given = std::env::var(TOKEN_VAR).unwrap_or_default();
    let tokens: Vec<String> = given.split(',').map(|t| t.trim().to_owned()).collect();
    if tokens.iter().any(|t| t.chars().count() < 32) {
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            format!(
                "`rein mcp serve --http` answers only callers with a token: set {TOKEN_VAR} to a secret of at least 32 characters (or several, one per client, separated by commas), and have the client send `Authorization: Bearer` with it"
            ),
        ));
    }
    Ok(tokens)
}
