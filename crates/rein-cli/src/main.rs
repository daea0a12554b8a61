//! The `rein` command.

use std::io::{IsTerminal, Read, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
mod cli;

/// mimalloc rather than the C library's allocator: with a thousand
/// conversations in one process glibc's malloc and free took 18% of the
/// CPU (`perf` on `rein-scale`), and mimalloc took the step overhead's p50
/// from 337–373 ms to 11–17 ms (docs/BENCHMARKS.md). Through the facade,
/// as a product's binary takes it.
#[global_allocator]
static ALLOCATOR: rein::MiMalloc = rein::MiMalloc;

use cli::chat::{ChatOptions, run};
use cli::decode_cmd::decode_to;
use cli::sessions_cmd;
use rein::gateway::WireApi;
use rein::wire::{AgentError, error::codes};

/// rein, an agent harness runtime.
#[derive(Debug, Parser)]
#[command(
    name = "rein",
    version,
    about,
    override_usage = "rein [OPTIONS] <COMMAND>"
)]
struct Cli {
    /// Where rein keeps its data (default: $REIN_HOME, else
    /// $XDG_DATA_HOME/rein, else ~/.local/share/rein).
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    /// Send the runner's spans (gen_ai.*: turns, model calls, tool calls;
    /// no prompt, text or arguments) to this OTLP traces endpoint, e.g.
    /// http://127.0.0.1:4318/v1/traces (or `[telemetry] otlp` in the config).
    #[arg(long, global = true, value_name = "URL")]
    otel: Option<String>,
    /// Keep sessions in this store instead of the home's SQLite file:
    /// postgres://USER@HOST:PORT/DATABASE (the password from PGPASSWORD)
    /// or sqlite:PATH (or `[store] url` in the home config).
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "REIN_STORE",
        hide_env_values = true
    )]
    store: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Chat with a model in the terminal; every turn is recorded.
    Chat(ChatOptions),
    /// Run a task graph (a TOML file): each task a conversation, in parallel
    /// where the graph allows.
    Run(cli::run_graph::RunOptions),
    /// Run graphs' work from a PostgreSQL store, beside other workers on
    /// any machine (`rein run --detach` hands a graph to them).
    Worker(cli::worker::WorkerOptions),
    /// Serve conversations over HTTP (a JSON API and an event stream) on
    /// 127.0.0.1; prints a one-time login link.
    Serve(cli::serve::ServeOptions),
    /// Decide a pending approval (yes or no) — the session's own or one of
    /// its sub-agents'. With the session alone: list what waits, with the
    /// agent that asked.
    Approve {
        /// The session.
        session: String,
        /// The approval.
        approval: Option<String>,
        /// yes or no.
        decision: Option<String>,
        /// With yes: also approve this tool for the rest of the turn.
        #[arg(long)]
        always: bool,
    },
    /// Say something to a session's running turn (heard at its next step),
    /// from another terminal.
    Say {
        /// The session.
        session: String,
        /// What to say.
        text: String,
    },
    /// Stop a session's open turn (its pending approvals are refused).
    Stop {
        /// The session.
        session: String,
    },
    /// Serve rein as an ACP agent on stdin/stdout (for editors that speak
    /// the Agent Client Protocol).
    Acp(cli::acp::AcpOptions),
    /// Other agents (Claude Code, Codex) run as workers and recorded as
    /// sessions.
    Agents {
        #[command(subcommand)]
        command: cli::agents::AgentsCommand,
    },
    /// The agent definition: what an agent runs with and where each value
    /// came from, every config file checked, a project trusted.
    Config {
        #[command(subcommand)]
        command: cli::config_cmd::ConfigCommand,
    },
    /// Plugins: servers, agents, hooks and instructions added as a unit.
    Plugin {
        #[command(subcommand)]
        command: cli::plugin_cmd::PluginCommand,
    },
    /// MCP: the configured servers, and rein served as one.
    Mcp {
        #[command(subcommand)]
        command: cli::mcp::McpCommand,
    },
    /// Long-term memory: see it, search it, add to it, forget from it.
    Memory(cli::memory_cmd::MemoryArgs),
    /// Stores: copy one into another.
    Store {
        #[command(subcommand)]
        command: cli::store_cmd::StoreCommand,
    },
    /// Recorded sessions.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Traces read from the log.
    Trace {
        #[command(subcommand)]
        command: TraceCommand,
    },
    /// Tools for the wire formats.
    Wire {
        #[command(subcommand)]
        command: WireCommand,
    },
}

#[derive(Debug, Subcommand)]
enum SessionsCommand {
    /// List sessions, newest first.
    List {
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a session's transcript.
    Show {
        /// The session id.
        id: String,
    },
    /// Print a session's turn tree.
    Tree {
        /// The session id.
        id: String,
    },
    /// Export a session as a golden trace (canonical JSONL, volatile values tokenised).
    Export {
        /// The session id.
        id: String,
        /// Write here instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Import a golden trace as a new session.
    Import {
        /// The golden trace file, or `-` for stdin.
        file: PathBuf,
    },
    /// A new session from a session's history up to a finished turn (its
    /// last one unless `--turn`), with its metadata; prints the new id.
    /// The copy is evidence: its approvals are asked again.
    Fork {
        /// The session id.
        id: String,
        /// The turn to fork after (an id from `rein sessions tree`).
        #[arg(long)]
        turn: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum TraceCommand {
    /// Tokens, cost, cache and tool calls of a session and each of its runs.
    Report {
        /// The session id.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum WireCommand {
    /// Decode a captured SSE body and print each normalised event as JSON.
    Decode {
        /// The wire API: anthropic, openai-chat or openai-responses.
        #[arg(long)]
        api: String,
        /// The capture file, or `-` for stdin.
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    // The sandbox's helper is this binary: confine, then become the
    // command (never returns). Before anything else starts.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == rein::sandbox::helper::HELPER_ARG)
    {
        rein::sandbox::helper::main();
    }
    // So is a hosted program's keeper.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == rein::host::keeper::KEEPER_ARG)
    {
        rein::host::keeper::main();
    }
    if let Ok(me) = std::env::current_exe() {
        rein::host::keeper::keep_with(me);
    }
    let cli = Cli::parse();
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if let Err(err) = cli::stores::name(cli.store.clone(), &argv) {
        eprintln!("error[{}]: {}", err.code, err.message);
        return ExitCode::FAILURE;
    }
    let _telemetry = match cli::telemetry::install(cli.home.clone(), cli.otel.clone()) {
        Ok(installed) => installed,
        Err(err) => {
            eprintln!("error[{}]: {}", err.code, err.message);
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error[internal]: could not start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader has what it wanted: end quietly, as Unix tools do.
        Err(err) if err.code == codes::OUTPUT_CLOSED => ExitCode::SUCCESS,
        Err(err) => {
            // Never panic on a closed stderr: the exit code still tells.
            let mut stderr = std::io::stderr().lock();
            // A provider's or a peer's words: control characters shown,
            // never sent to the terminal.
            let _ = writeln!(
                stderr,
                "error[{}]: {}",
                err.code,
                rein::wire::visible::visible(&err.message)
            );
            if let Some(info) = rein::wire::error::lookup(&err.code) {
                let _ = writeln!(stderr, "  {}", info.hint);
            }
            ExitCode::FAILURE
        }
    }
}

/// Print one line on stdout.
pub(crate) fn say_out(line: &str) -> Result<(), AgentError> {
    writeln!(std::io::stdout(), "{line}").map_err(cli::output::output_error)
}

/// The most `rein` reads from a file or stdin (a capture, a golden trace):
/// far above any real one, and `/dev/zero` cannot grow memory without end.
const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// A surface told to end — SIGTERM, or SIGHUP when its terminal closes —
/// takes what it started along: every sandboxed command's group and every
/// hosted program's, then exits. (`rein agents run` stops its run itself,
/// so that it is recorded as stopped.)
fn end_on_signals() {
    tokio::spawn(async {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return;
        };
        let code = tokio::select! {
            _ = term.recv() => 128 + libc::SIGTERM,
            _ = hup.recv() => 128 + libc::SIGHUP,
        };
        rein::sandbox::kill_running();
        rein::host::kill_running();
        std::process::exit(code);
    });
}

#[expect(clippy::too_many_lines, reason = "one arm per command")]
async fn dispatch(cli: Cli) -> Result<(), AgentError> {
    if !matches!(
        cli.command,
        Command::Agents {
            command: cli::agents::AgentsCommand::Run { .. }
        }
    ) {
        end_on_signals();
    }
    let stdout = &mut std::io::stdout();
    match cli.command {
        Command::Chat(mut options) => {
            options.home = cli.home.clone();
            let store = cli::stores::open(cli.home).await?;
            let stdin = std::io::stdin();
            if stdin.is_terminal() && options.prompt.is_none() {
                let editor = cli::chat::Editor::new()?;
                run(options, store, editor, stdout, &mut std::io::stderr()).await
            } else {
                run(
                    options,
                    store,
                    cli::chat::Plain(std::io::BufReader::new(stdin)),
                    stdout,
                    &mut std::io::stderr(),
                )
                .await
            }
        }
        Command::Config { command } => cli::config_cmd::run(command, cli.home, stdout),
        Command::Plugin { command } => cli::plugin_cmd::run(command, cli.home, stdout),
        Command::Run(mut options) => {
            options.home = cli.home.clone();
            if let Some(graph) = &options.watch {
                let store = cli::stores::open(cli.home).await?;
                return cli::run_remote::watch(graph, store, stdout).await;
            }
            if let (true, Some(file)) = (options.detach, &options.file) {
                let pg = cli::stores::open_shared(cli.home, "rein run --detach").await?;
                return cli::run_remote::detach(file, pg, stdout).await;
            }
            let store = cli::stores::open(cli.home).await?;
            cli::run_graph::run(options, store, stdout, &mut std::io::stderr()).await
        }
        Command::Worker(mut options) => {
            options.home = cli.home.clone();
            let pg = cli::stores::open_shared(cli.home, "rein worker").await?;
            cli::worker::run(options, pg, Box::new(std::io::stderr())).await
        }
        Command::Serve(mut options) => {
            options.home = cli.home.clone();
            let store = cli::stores::open(cli.home).await?;
            cli::serve::run(options, store, &mut std::io::stderr()).await
        }
        Command::Acp(mut options) => {
            options.home = cli.home.clone();
            let store = cli::stores::open(cli.home).await?;
            cli::acp::serve(options, store).await
        }
        Command::Agents { command } => agents(cli.home, command, stdout).await,
        Command::Mcp { command } => match command {
            cli::mcp::McpCommand::List { wait } => cli::mcp::list(cli.home, wait, stdout).await,
            cli::mcp::McpCommand::Serve {
                root,
                http,
                session,
                approval_wait,
                approve_by_elicitation,
            } => {
                let store = cli::stores::open(cli.home.clone()).await?;
                let options = cli::mcp::ServeOptions {
                    home: cli.home,
                    root,
                    http,
                    session,
                    approval_wait,
                    elicitation: approve_by_elicitation,
                };
                cli::mcp::serve(store, options, &mut std::io::stderr()).await
            }
        },
        Command::Approve {
            session,
            approval,
            decision,
            always,
        } => cli::approve_cmd::approve(cli.home, &session, approval, decision, always).await,
        Command::Say { session, text } => {
            let store = cli::stores::open(cli.home).await?;
            let surface = rein::approvals::Surface::command("say");
            let delivery = rein::approvals::say(store.as_ref(), &session, &text, &surface).await?;
            say_out(&cli::approve_cmd::delivered(delivery, &session, "said"))
        }
        Command::Stop { session } => {
            let store = cli::stores::open(cli.home).await?;
            let surface = rein::approvals::Surface::command("stop");
            let delivery = rein::approvals::stop(store.as_ref(), &session, &surface).await?;
            say_out(&cli::approve_cmd::delivered(
                delivery,
                &session,
                "stop asked",
            ))
        }
        Command::Sessions { command } => sessions(cli.home, command, stdout).await,
        Command::Store { command } => cli::store_cmd::run(command, stdout).await,
        Command::Memory(args) => {
            let home = rein::sessions::home::resolve(cli.home)?;
            cli::memory_cmd::run(args, &home, stdout).await
        }
        Command::Trace {
            command: TraceCommand::Report { id, json },
        } => {
            let store = cli::stores::open(cli.home).await?;
            sessions_cmd::report(store.as_ref(), &id, json, stdout).await
        }
        Command::Wire {
            command: WireCommand::Decode { api, file },
        } => {
            let api: WireApi = api.parse()?;
            let body = read_input(&file)?;
            decode_to(api, body, &mut stdout.lock()).await
        }
    }
}

/// `rein sessions list | show | tree | export | import | fork`.
async fn sessions(
    home: Option<PathBuf>,
    command: SessionsCommand,
    stdout: &mut std::io::Stdout,
) -> Result<(), AgentError> {
    let store = cli::stores::open(home).await?;
    let store = store.as_ref();
    match command {
        SessionsCommand::List { limit, json } => {
            sessions_cmd::list(store, limit, json, stdout).await
        }
        SessionsCommand::Show { id } => sessions_cmd::show(store, &id, stdout).await,
        SessionsCommand::Tree { id } => sessions_cmd::tree(store, &id, stdout).await,
        SessionsCommand::Export { id, out } => {
            let text = sessions_cmd::export(store, &id).await?;
            match out {
                Some(path) => std::fs::write(&path, text).map_err(|err| {
                    AgentError::new(
                        codes::INVALID_INPUT,
                        format!("cannot write {}: {err}", path.display()),
                    )
                }),
                None => {
                    use std::io::Write;
                    stdout
                        .write_all(text.as_bytes())
                        .map_err(cli::output::output_error)
                }
            }
        }
        SessionsCommand::Import { file } => {
            let bytes = read_input(&file)?;
            let text = String::from_utf8(bytes).map_err(|_| {
                AgentError::new(codes::GOLDEN_TRACE_INVALID, "the golden trace is not UTF-8")
            })?;
            let id = rein::trace::golden::import(store, &text).await?;
            say_out(&id)
        }
        SessionsCommand::Fork { id, turn } => {
            let forked = rein::trace::fork(store, &id, turn.as_deref()).await?;
            say_out(&forked.session)
        }
    }
}

/// `rein agents run | attach | sessions | list`.
async fn agents(
    home: Option<PathBuf>,
    command: cli::agents::AgentsCommand,
    stdout: &mut std::io::Stdout,
) -> Result<(), AgentError> {
    match command {
        cli::agents::AgentsCommand::Run {
            agent,
            prompt,
            env,
            timeout,
            keep_open,
            cwd,
            command,
        } => {
            let store = cli::stores::open(home.clone()).await?;
            let args = cli::agents::RunArgs {
                agent,
                prompt,
                env,
                timeout: timeout.map(std::time::Duration::from_secs),
                keep_open: keep_open.map(std::time::Duration::from_secs),
                cwd,
                command,
                home,
            };
            cli::agents::run(args, store, stdout, &mut std::io::stderr()).await
        }
        cli::agents::AgentsCommand::Attach { id, name } => {
            let home = rein::sessions::home::resolve(home)?;
            let name = name
                .or_else(|| std::env::var("USER").ok())
                .unwrap_or_else(|| "viewer".to_owned());
            cli::agents_tui::attach(&home, &id, &name, &mut std::io::stderr()).await
        }
        cli::agents::AgentsCommand::Sessions { json } => {
            let home = rein::sessions::home::resolve(home)?;
            cli::agents_list::sessions(&home, json, stdout).await
        }
        cli::agents::AgentsCommand::List { limit } => {
            let dir = rein::sessions::home::resolve(home.clone())?;
            let store = cli::stores::open(home).await?;
            cli::agents_list::list(&dir, store.as_ref(), limit, stdout).await
        }
    }
}

fn read_input(file: &PathBuf) -> Result<Vec<u8>, AgentError> {
    let mut body = Vec::new();
    // One byte past the bound tells "too large" from "exactly the bound".
    let result = if file.as_os_str() == "-" {
        std::io::stdin()
            .take(MAX_INPUT_BYTES + 1)
            .read_to_end(&mut body)
            .map(|_| ())
    } else {
        std::fs::File::open(file).and_then(|f| {
            f.take(MAX_INPUT_BYTES + 1)
                .read_to_end(&mut body)
                .map(|_| ())
        })
    };
    result.map_err(|err| {
        AgentError::new(
            codes::INVALID_INPUT,
            format!(
                "cannot read {}: {}",
                file.display(),
                cli::output::io_reason(&err)
            ),
        )
    })?;
    if body.len() as u64 > MAX_INPUT_BYTES {
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            format!(
                "{} is larger than {} MiB, the most rein reads",
                file.display(),
                MAX_INPUT_BYTES / (1024 * 1024)
            ),
        )
        .with_field("max_bytes", MAX_INPUT_BYTES));
    }
    Ok(body)
}
