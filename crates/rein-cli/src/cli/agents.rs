//! `rein agents run`: other agents' CLIs run as workers and recorded as
//! rein sessions (the live and past ones are listed by `agents_list`).
//!
//! `rein agents run claude -- claude -p --output-format stream-json
//! --verbose "fix the test"` runs the command with only the environment
//! named (`PATH`, `HOME`, `LANG`, `TERM` and each `--env NAME`), shows
//! redacted progress lines on stderr, prints the final text on stdout and a
//! summary with the cost on stderr; the run is a session `rein trace report`
//! reads. Ctrl-C stops it (the child's whole process group is killed).
//!
//! Not here: the reducers, the driver and the recording (`rein-host`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rein::host::config::{AgentEntry, AgentKind};
use rein::host::{ClaudeStream, CodexStream, Driven, Ended, Recorder, Reducer, drive};
use rein::sessions::Store;
use rein::wire::{AgentError, error::codes};

use crate::cli::output::output_error;
use rein::wire::visible::visible;

/// `rein agents`' subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum AgentsCommand {
    /// Run another agent's CLI as a worker: redacted progress on stderr, the
    /// final text on stdout, the run recorded as a session.
    Run {
        /// A configured agent (`[agents.NAME]` in REIN_HOME/config.toml), or
        /// how the command after `--` is driven: claude, codex, acp or tui.
        agent: String,
        /// The person's request, appended to the command as its last argument.
        #[arg(long)]
        prompt: Option<String>,
        /// Also give the CLI this variable from rein's environment (repeatable;
        /// e.g. its API key).
        #[arg(long = "env", value_name = "NAME")]
        env: Vec<String>,
        /// The run's time limit in seconds (default: the agent's entry, else
        /// an hour).
        #[arg(long)]
        timeout: Option<u64>,
        /// After its answer the agent stays for the next turn — a line said
        /// with `rein say`, typed when attached, or on the page starts it —
        /// until it waits this many seconds for one (default 600, at most a
        /// day) or is stopped. Claude Code (stream-json), Codex's app server
        /// (attached, Ctrl-] m switches either to its own terminal UI and
        /// back), ACP.
        #[arg(long, value_name = "IDLE_SECS", num_args = 0..=1, default_missing_value = "600",
            value_parser = clap::value_parser!(u64).range(1..=86_400))]
        keep_open: Option<u64>,
        /// The working directory (default: the current one).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// The command, after `--` (replaces a configured agent's).
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Watch a live hosted run from this terminal (Ctrl-] d detaches); in a
    /// `tui` run, type to take it over (Ctrl-] r hands it back).
    Attach {
        /// The session.
        id: String,
        /// The name others see when you hold it.
        #[arg(long = "as", value_name = "NAME")]
        name: Option<String>,
    },
    /// The hosted sessions live on this machine now: mode, when opened,
    /// who watches and who holds the input.
    Sessions {
        /// Print JSON lines, one a session.
        #[arg(long)]
        json: bool,
    },
    /// The configured agents, then hosted runs, newest first.
    List {
        /// At most this many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
}

/// Options of `rein agents run`.
pub struct RunArgs {
    /// A configured agent, or a kind.
    pub agent: String,
    /// Appended to the command.
    pub prompt: Option<String>,
    /// Extra variables by name.
    pub env: Vec<String>,
    /// The limit, over the entry's.
    pub timeout: Option<Duration>,
    /// The agent stays after a turn for the next, at most this long idle.
    pub keep_open: Option<Duration>,
    /// The working directory.
    pub cwd: Option<PathBuf>,
    /// The command.
    pub command: Vec<String>,
    /// rein's home (where a live session's socket is).
    pub home: Option<PathBuf>,
}

/// `rein agents run`.
pub async fn run(
    args: RunArgs,
    store: Arc<dyn Store>,
    out: &mut impl Write,
    err: &mut (impl Write + Send),
) -> Result<(), AgentError> {
    let cwd = match args.cwd.clone() {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(|e| {
            AgentError::new(codes::INVALID_INPUT, format!("no working directory: {e}"))
        })?,
    };
    let home = rein::sessions::home::resolve(args.home.clone())?;
    // rein's own agent (`kind = "rein"`): one turn of its definition, as
    // `rein chat --agent NAME -p PROMPT` runs it.
    let loaded = rein::config::Loaded::load(&home, Some(&cwd))?;
    if loaded
        .agents()?
        .get(&args.agent)
        .is_some_and(rein::config::NamedAgent::is_native)
    {
        return run_native(args, cwd, store, out, err).await;
    }
    crate::cli::agents_list::close_dead(&home, store.as_ref()).await?;
    let (kind, entry) = resolve_agent(&home, &args.agent, args.command)?;
    // An ACP agent and Codex's app server are asked in their protocol.
    let acp = kind == AgentKind::Acp || entry.speaks_app_server();
    if acp && args.prompt.is_none() {
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            "this agent is asked in its protocol: give the request with --prompt",
        ));
    }
    let in_argv = args.prompt.as_deref().filter(|_| !acp);
    // A Claude run takes its request on stdin, so that words said mid-run
    // (`rein say`, a viewer's line) reach it too.
    let (mut spec, hears) = entry.run_spec(&cwd, in_argv, &args.env);
    let prompt_last = in_argv.is_some() && hears.is_none();
    if args.keep_open.is_some() && !acp && hears.is_none() {
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            "this agent takes one request (its arguments): --keep-open needs Claude Code with stream-json output and --prompt, Codex's app server, or an ACP agent",
        ));
    }
    spec.timeout = args.timeout.unwrap_or(entry.timeout);
    let program = entry.program();
    let cwd_text = cwd.display().to_string();
    let prompt = args
        .prompt
        .unwrap_or_else(|| "(the request is in the command line)".to_owned());
    let plan = crate::cli::agents_switch::Plan {
        entry: entry.clone(),
        cwd: cwd.clone(),
        env: args.env.clone(),
        timeout: spec.timeout,
        prompt: prompt.clone(),
    };
    let Some(how) = Driving::of(kind, plan, args.keep_open.is_some()) else {
        return crate::cli::agents_tui::run(spec, &prompt, &home, store, err).await;
    };
    let mut recorder = Recorder::start(store, kind.as_str(), &program, &prompt).await?;
    let session = recorder.session().to_owned();
    // Other terminals can watch the run while it lasts.
    let host = rein::host::session::SessionHost::new();
    let viewers = crate::cli::agents_tui::Viewers::serve(&home, &host, &session)?;
    told(&session, args.keep_open.is_some(), hears.is_some(), err)?;
    let view = Some((host, session.clone()));
    // Claude Code's permission questions come to this terminal (and
    // any surface), for the run's length.
    let (asks, _server) =
        asked_here(&entry, &cwd_text, &mut spec, prompt_last, &session, err).await?;
    let stop = stop_on_signals();
    let mut shown_err = Ok(());
    let mut show = |p: &rein::host::Progress| {
        // Activity is liveness for a watcher, not a line worth printing.
        if p.kind != rein::host::ProgressKind::Activity && shown_err.is_ok() {
            shown_err = writeln!(err, ".. {p}");
        }
    };
    // A run that stays prints each turn's answer as it closes.
    let (answers, mut answered) = tokio::sync::mpsc::unbounded_channel();
    let switchable = matches!(how, Driving::Switchable(_));
    let stays = args.keep_open.map(|idle| rein::host::Stays {
        idle,
        answers: Some(answers),
        switchable,
        resumed: false,
    });
    let streamed = stays.is_some();
    let joined = rein::host::Joined {
        view,
        asks,
        hears,
        stays,
    };
    let driving = drive_run(how, &spec, &mut recorder, &mut show, stop, joined, prompt);
    let printing = async {
        while let Some(text) = answered.recv().await {
            writeln!(out, "{}", visible(&text)).map_err(output_error)?;
        }
        Ok::<(), AgentError>(())
    };
    let (driven, printed) = tokio::join!(driving, printing);
    drop(viewers);
    let driven = match driven {
        Ok(driven) => driven,
        Err(e) => {
            recorder.abandon(&e.message).await?;
            return Err(e);
        }
    };
    shown_err.map_err(output_error)?;
    printed?;
    said(kind, &driven, &session, !streamed, out, err)
}

/// What the person at the terminal is told a run takes: watching from
/// elsewhere, and the words it hears (mid-run, or as its next turn).
fn told(
    session: &str,
    keep_open: bool,
    hears: bool,
    err: &mut impl Write,
) -> Result<(), AgentError> {
    writeln!(
        err,
        "[rein] watch from another terminal with `rein agents attach {session}`"
    )
    .map_err(output_error)?;
    if keep_open {
        writeln!(
            err,
            "[rein] it stays for your next turn: `rein say {session} WORDS` or a line typed when attached starts it (`rein stop {session}` ends it)"
        )
        .map_err(output_error)?;
    } else if hears {
        writeln!(
            err,
            "[rein] say something to it mid-run with `rein say {session} WORDS` or a line typed when attached"
        )
        .map_err(output_error)?;
    }
    Ok(())
}

/// How a hosted run is driven.
enum Driving {
    /// Claude Code or Codex's app server kept open: its stream, switched
    /// to its own terminal UI and back as a person asks.
    Switchable(Box<crate::cli::agents_switch::Plan>),
    /// A CLI's JSON lines on stdout, read by this reducer.
    Lines(Box<dyn Reducer>),
    /// Codex's app server (JSON-RPC on stdio).
    AppServer,
    /// An ACP agent (JSON-RPC on stdio).
    Acp,
}

impl Driving {
    /// How `plan`'s agent of `kind` is driven (`None`: in its own terminal
    /// UI, a `tui` run): the CLIs' line reducers, Claude Code and Codex's
    /// app server kept open as switchable sessions, an ACP agent and
    /// Codex's app server over their protocols.
    fn of(kind: AgentKind, plan: crate::cli::agents_switch::Plan, kept: bool) -> Option<Driving> {
        let cwd = plan.cwd.display().to_string();
        Some(match kind {
            AgentKind::Claude | AgentKind::Codex
                if kept && crate::cli::agents_switch::Plan::switchable(&plan.entry) =>
            {
                Driving::Switchable(Box::new(plan))
            }
            AgentKind::Claude => Driving::Lines(Box::new(ClaudeStream::new(&cwd))),
            AgentKind::Codex if plan.entry.speaks_app_server() => Driving::AppServer,
            AgentKind::Codex => Driving::Lines(Box::new(CodexStream::new(&cwd))),
            AgentKind::Acp => Driving::Acp,
            AgentKind::Tui => return None,
        })
    }
}

/// Drive the run as `how` says, asked `prompt`, a person taking part as
/// `joined` says (the protocols' questions come to this terminal).
async fn drive_run(
    how: Driving,
    spec: &rein::host::HostSpec,
    recorder: &mut Recorder,
    show: &mut (dyn FnMut(&rein::host::Progress) + Send),
    stop: tokio_util::sync::CancellationToken,
    joined: rein::host::Joined,
    prompt: String,
) -> Result<rein::host::Driven, AgentError> {
    let cwd = spec.cwd.display().to_string();
    let ask = |joined: rein::host::Joined| rein::host::acp::AcpAsk {
        prompt,
        person: Arc::new(crate::cli::acp::TerminalPerson),
        view: joined.view,
        stays: joined.stays,
    };
    match how {
        Driving::Switchable(plan) => {
            crate::cli::agents_switch::drive(*plan, spec, recorder, show, stop, joined).await
        }
        Driving::Lines(mut reducer) => {
            drive(spec, reducer.as_mut(), Some(recorder), show, stop, joined).await
        }
        Driving::AppServer => {
            let mut stream = CodexStream::new(&cwd);
            let ask = ask(joined);
            rein::host::codex_app::drive_codex_app(
                spec,
                ask,
                &mut stream,
                Some(recorder),
                show,
                stop,
            )
            .await
        }
        Driving::Acp => {
            let mut stream = rein::host::acp_stream::AcpStream::new(&cwd);
            let ask = ask(joined);
            rein::host::acp::drive_acp(spec, ask, &mut stream, Some(recorder), show, stop).await
        }
    }
}

/// [`asking_here`](crate::cli::acp::asking_here), and the person told so.
async fn asked_here(
    entry: &rein::host::config::AgentEntry,
    cwd: &str,
    spec: &mut rein::host::HostSpec,
    prompt_last: bool,
    session: &str,
    err: &mut impl Write,
) -> Result<crate::cli::acp::Asking, AgentError> {
    let (asks, server) = crate::cli::acp::asking_here(entry, cwd, spec, prompt_last).await?;
    if asks.is_none() {
        return Ok((None, server));
    }
    writeln!(
        err,
        "[rein] its permission questions are asked here (or decide them with `rein approve {session}`)"
    )
    .map_err(output_error)?;
    Ok((asks, server))
}

/// What a finished run says: its answer (made visible) on stdout unless
/// each turn's was printed as it closed, its summary on stderr; a run that
/// did not finish is `hosted_agent_failed`.
fn said(
    kind: AgentKind,
    driven: &Driven,
    session: &str,
    answer: bool,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<(), AgentError> {
    if let Some(text) = driven.outcome.text.as_ref().filter(|_| answer) {
        writeln!(out, "{}", rein::wire::visible::visible(text)).map_err(output_error)?;
    }
    writeln!(err, "{}", summary_line(kind.as_str(), driven, session)).map_err(output_error)?;
    match driven.ended {
        Ended::Finished => Ok(()),
        _ => Err(AgentError::new(
            codes::HOSTED_AGENT_FAILED,
            driven
                .outcome
                .failure
                .clone()
                .unwrap_or_else(|| driven.ended.as_str().to_owned()),
        )),
    }
}

/// A native `[agents.NAME]`: one turn of its definition through the chat.
async fn run_native(
    args: RunArgs,
    cwd: PathBuf,
    store: Arc<dyn Store>,
    out: &mut impl Write,
    err: &mut (impl Write + Send),
) -> Result<(), AgentError> {
    let prompt = args.prompt.ok_or_else(|| {
        AgentError::new(
            codes::INVALID_INPUT,
            format!(
                "agent `{}` is rein's own: give the request with --prompt",
                args.agent
            ),
        )
    })?;
    let options = crate::cli::chat::ChatOptions {
        agent: Some(args.agent),
        prompt: Some(prompt),
        root: Some(cwd),
        home: args.home,
        ..crate::cli::chat::ChatOptions::default()
    };
    let stdin = crate::cli::chat::Plain(std::io::BufReader::new(std::io::stdin()));
    crate::cli::chat::run(options, store, stdin, out, err).await
}

/// Cancelled by Ctrl-C, a closed terminal (SIGHUP) or SIGTERM: the
/// program's group is killed and the run recorded as stopped.
fn stop_on_signals() -> tokio_util::sync::CancellationToken {
    let stop = tokio_util::sync::CancellationToken::new();
    let on_signal = stop.clone();
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
        on_signal.cancel();
    });
    stop
}

/// The agent `name` names: a configured entry (its command replaced by
/// `command` when one is given), or a kind with the command after `--`.
fn resolve_agent(
    home: &std::path::Path,
    name: &str,
    command: Vec<String>,
) -> Result<(AgentKind, AgentEntry), AgentError> {
    let config = crate::cli::agents_list::hosted(home)?;
    if let Some(entry) = config.agents.get(name) {
        let mut entry = entry.clone();
        if !command.is_empty() {
            entry.argv = command;
        }
        return Ok((entry.kind, entry));
    }
    let Some(kind) = AgentKind::named(name) else {
        let known: Vec<&str> = config.agents.keys().map(String::as_str).collect();
        return Err(AgentError::new(
            codes::AGENT_CONFIG_INVALID,
            format!(
                "no agent `{}` is configured (configured: {}); or name how the command after `--` is driven: claude, codex, acp or tui",
                rein::wire::visible::visible(name),
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ),
        ));
    };
    if command.is_empty() {
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            format!(
                "give the command after `--` (e.g. `rein agents run {name} -- {name} …`), or configure [agents.NAME]"
            ),
        ));
    }
    Ok((
        kind,
        AgentEntry {
            kind,
            argv: command,
            env: Default::default(),
            env_from: Vec::new(),
            timeout: rein::host::child::DEFAULT_TIMEOUT,
            max_line: rein::host::child::DEFAULT_MAX_LINE,
        },
    ))
}

/// `claude finished in 1.5 s · 3 tool calls · 1 refused · $0.012300 · session ses_…`.
fn summary_line(kind: &str, driven: &Driven, session: &str) -> String {
    let mut parts = vec![format!(
        "{kind} {} in {:.1} s",
        driven.ended.as_str(),
        driven.duration_ms as f64 / 1000.0
    )];
    if let Some(n) = driven
        .summary
        .get("tool_calls")
        .and_then(serde_json::Value::as_u64)
    {
        parts.push(format!("{n} tool call{}", if n == 1 { "" } else { "s" }));
    }
    if driven.outcome.refused_count > 0 {
        let subjects: Vec<&str> = driven
            .outcome
            .refused
            .iter()
            .map(|r| r.subject.as_str())
            .collect();
        parts.push(format!(
            "{} refused ({})",
            driven.outcome.refused_count,
            subjects.join(", ")
        ));
    }
    parts.push(match driven.outcome.cost_micro_usd {
        Some(cost) => rein::trace::usd(cost),
        None => "cost unknown".to_owned(),
    });
    parts.push(format!("session {session}"));
    parts.join(" · ")
}
