//! `rein run GRAPH.toml`: a task graph, each task a conversation with the
//! working folder's file tools, in the embedded store.
//!
//! The graph is checked before anything runs (a cycle, an unknown
//! dependency or output is `graph_invalid`, naming the path). Progress is
//! shown live at a terminal and as plain lines elsewhere (`graph_view`);
//! a task's write that needs approval is
//! asked here (`y`/`n` on stdin) and can be decided from another terminal
//! with `rein approve` — whichever comes first; the task waits, the rest of
//! the graph goes on. Ctrl-C cancels the graph (running tasks stop at
//! their next step). At the end: a table of the tasks on stderr, the
//! answers of the tasks nothing depends on on stdout; the exit code says
//! whether every task succeeded.
//!
//! The graph is recorded in a session of its own (`GraphRecord`): its id is
//! printed first, and `rein run --resume ID` runs it again after a crash, a
//! Ctrl-C or a fix — tasks that succeeded are kept with their outputs.
//!
//! Not here: how progress is drawn (`graph_view`).

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use rein::approvals::{Answer, LeaseScope, Surface};
use rein::orchestrator::{
    Blackboard, Graph, GraphOutcome, GraphSpec, Progress, Scheduler, TaskState,
};

use super::graph_view::View;
use rein::runner::{ConversationTasks, GraphRecord, TaskApproval};
use rein::sessions::Store;
use rein::wire::visible::visible;
use rein::wire::{AgentError, error::codes};
use tokio::sync::mpsc;

use super::chat::ProviderArgs;

/// A graph file is read up to this size.
const MAX_GRAPH_BYTES: u64 = 1024 * 1024;

/// `rein run`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct RunOptions {
    /// The graph file (TOML: `[graph]` settings, `[[task]]` tables).
    #[arg(required_unless_present_any = ["resume", "watch"])]
    pub file: Option<PathBuf>,
    /// Run the graph recorded in this session again: tasks that succeeded
    /// are kept, the rest run.
    #[arg(long, value_name = "ID", conflicts_with = "file")]
    pub resume: Option<String>,
    /// The model provider.
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// The folder the file tools work in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// The system prompt of every task.
    #[arg(long)]
    pub system: Option<String>,
    /// The agent tasks run unless they name another (`agent = "NAME"`
    /// in a task names any native agent of the config).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Hand the graph to the workers of a PostgreSQL store (`rein
    /// worker`): record it, print its id, and end.
    #[arg(long, requires = "file")]
    pub detach: bool,
    /// Follow a graph the workers run, until it ends (exit 0 when every
    /// task succeeded).
    #[arg(long, value_name = "ID", conflicts_with_all = ["file", "resume", "detach"])]
    pub watch: Option<String>,
    /// Where rein's config lives (set by `rein` from `--home`).
    #[arg(skip)]
    pub home: Option<PathBuf>,
}

fn io_error(err: std::io::Error) -> AgentError {
    AgentError::new(
        codes::INVALID_INPUT,
        format!(
            "cannot read the graph file: {}",
            super::output::io_reason(&err)
        ),
    )
}

pub(super) fn read_graph(path: &std::path::Path) -> Result<GraphSpec, AgentError> {
    let file = std::fs::File::open(path).map_err(io_error)?;
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut std::io::Read::take(file, MAX_GRAPH_BYTES + 1),
        &mut text,
    )
    .map_err(io_error)?;
    if text.len() as u64 > MAX_GRAPH_BYTES {
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            format!("the graph file is larger than {MAX_GRAPH_BYTES} bytes"),
        ));
    }
    GraphSpec::from_toml(&text)
}

/// Run the graph in `options.file`; status on `info`, answers on `out`.
pub async fn run(
    options: RunOptions,
    store: Arc<dyn Store>,
    out: &mut impl Write,
    info: &mut (impl Write + Send),
) -> Result<(), AgentError> {
    // The graph file read and checked first (a file named wrong is said
    // before anything about providers), then the agents: nothing is
    // recorded for a run that cannot start.
    let fresh = match (&options.resume, &options.file) {
        (None, Some(file)) => {
            let spec = read_graph(file)?;
            let graph = spec.clone().check()?;
            Some((spec, graph))
        }
        _ => None,
    };
    let root_dir = super::session_root::absolute(options.root.as_deref())?;
    let mut flags = options.provider.spec();
    flags.instructions = options.system.clone();
    let surface = rein::compose::for_surface(
        rein::compose::SurfaceWanted {
            home: options.home.clone(),
            root: &root_dir,
            name: options.agent.as_deref(),
            flags,
            verb: "run",
            default_instructions: "You carry out one task of a larger piece of work, in the person's project folder. Use the tools to look at files. Answer concisely.",
        },
        &store,
        info,
    )
    .await?;
    let Opened {
        record,
        graph,
        done,
        entries,
    } = open_graph(&options, fresh, &store).await?;
    announce(info, &record, &graph, done.len())?;
    check_agents(&graph, &surface)?;
    // The tasks share a blackboard (as it was, on a resume); every write
    // goes into the graph's record.
    let board = Blackboard::restored(entries, record.recorder());
    let mut tasks = ConversationTasks::of(store.clone(), surface.agent)
        .in_graph(record.session_id())
        .with_blackboard(board);
    for (name, agent) in surface.named {
        tasks = tasks.with_agent(&name, agent);
    }
    let _servers = surface.mcp;
    let mut asked = tasks.approvals();
    let mut used = tasks.usage();
    let leaves = leaves(&graph);

    let mut view = View::new(std::io::stderr().is_terminal());
    let (steps, mut heard) = mpsc::unbounded_channel::<Progress>();
    // A step is shown once it is in the record: a task shown done is kept
    // by `--resume`.
    let recorded = record.observer(move |p| {
        let _ = steps.send(p.clone());
    });
    let scheduler = Scheduler::new(graph, Arc::new(tasks))
        .with_done(done)
        .observe(recorded);
    let cancel = scheduler.cancel_token();
    let mut run = tokio::spawn(scheduler.run());
    let mut answers = stdin_lines();
    let mut waiting: Vec<(TaskApproval, Instant)> = Vec::new();
    let report = loop {
        tokio::select! {
            done = &mut run => break done.map_err(|e| AgentError::new(codes::INTERNAL, format!("the graph's run failed: {e}")))?,
            Some(step) = heard.recv() => view.progress(info, &step)?,
            Some(usage) = used.recv() => view.tokens(&usage.task, usage.tokens),
            Some(approval) = asked.recv() => {
                // Stamped before the question is shown: a line typed once it
                // is on screen is always later than this.
                let asked_at = Instant::now();
                show_question(&mut view, info, &approval)?;
                waiting.push((approval, asked_at));
            }
            Some((typed, answer)) = answers.recv() => {
                // A line typed before the question was asked answers
                // nothing: a stray `y` must never approve a write asked later.
                let Some(at) = waiting.iter().position(|(_, asked)| *asked < typed) else {
                    view.say(info, "          (no approval was waiting when that line was typed; it is ignored)")?;
                    continue;
                };
                let (approval, _) = waiting.remove(at);
                decide_typed(store.as_ref(), &approval, &answer, &mut view, info).await?;
            }
            _ = tokio::signal::ctrl_c() => {
                view.say(info, "        cancelling: running tasks stop at their next step")?;
                cancel.cancel();
            }
        }
    };
    // Written first: the last steps are shown once they are on disk.
    let graph_session = record.session_id().to_owned();
    record.finish(report.outcome).await?;
    while let Ok(step) = heard.try_recv() {
        view.progress(info, &step)?;
    }
    while let Ok(usage) = used.try_recv() {
        view.tokens(&usage.task, usage.tokens);
    }
    view.table(info, &report.tasks)?;
    print_answers(out, &report.tasks, &leaves)?;
    ending(report.outcome, &graph_session)
}

/// The graph's id first, with how to resume it.
fn announce(
    info: &mut impl Write,
    record: &GraphRecord,
    graph: &Graph,
    kept: usize,
) -> Result<(), AgentError> {
    let id = record.session_id();
    let tasks = graph.tasks().len();
    let kept = if kept == 0 {
        String::new()
    } else {
        format!(", {kept} kept from before")
    };
    say(
        info,
        &format!("graph {id} ({tasks} tasks{kept}); resume with: rein run --resume {id}"),
    )
}

/// A task's question: what it would run, and where else it can be decided.
fn show_question(
    view: &mut View,
    info: &mut impl Write,
    approval: &TaskApproval,
) -> Result<(), AgentError> {
    let request = &approval.request;
    let shown: String = request.arguments.to_string().chars().take(300).collect();
    view.say(
        info,
        &format!(
            "        ? {} asks to run {} {}",
            approval.task,
            request.tool,
            visible(&shown)
        ),
    )?;
    view.say(
        info,
        &format!(
            "          approve? [y/N] (or from another terminal: rein approve {} {} yes|no)",
            approval.session, request.approval_id
        ),
    )
}

/// The answers of the tasks nothing depends on, on stdout.
fn print_answers(
    out: &mut impl Write,
    tasks: &[(String, TaskState)],
    leaves: &[String],
) -> Result<(), AgentError> {
    for (task, state) in tasks {
        if let TaskState::Succeeded { outputs, .. } = state
            && leaves.contains(task)
            && let Some(answer) = outputs.get("answer")
        {
            writeln!(out, "## {task}\n{}\n", visible(answer))
                .map_err(super::output::output_error)?;
        }
    }
    Ok(())
}

/// The run's result: a cancelled or failed graph says how to go on.
pub(super) fn ending(outcome: GraphOutcome, graph_session: &str) -> Result<(), AgentError> {
    match outcome {
        GraphOutcome::Succeeded => Ok(()),
        GraphOutcome::Cancelled => Err(AgentError::new(
            codes::CANCELLED,
            format!("the graph was cancelled; go on with: rein run --resume {graph_session}"),
        )),
        GraphOutcome::Failed => Err(AgentError::new(
            codes::AGENT_UNFINISHED,
            format!(
                "the graph did not finish: a task failed (see the table above); after a fix: rein run --resume {graph_session}"
            ),
        )),
    }
}

/// A graph opened to run.
struct Opened {
    record: GraphRecord,
    graph: Graph,
    /// Tasks that succeeded before a resume, with their outputs.
    done: std::collections::HashMap<String, rein::orchestrator::Outputs>,
    /// The blackboard as it was.
    entries: std::collections::BTreeMap<String, rein::orchestrator::Entry>,
}

/// The graph to run and its record: a new one from the file (checked
/// before anything is recorded), or one resumed with what it kept.
async fn open_graph(
    options: &RunOptions,
    fresh: Option<(GraphSpec, Graph)>,
    store: &Arc<dyn Store>,
) -> Result<Opened, AgentError> {
    let (record, graph, done, entries) = match (&options.resume, fresh) {
        (Some(session), _) => {
            let (record, resumed) = GraphRecord::resume(store.clone(), session).await?;
            let graph = resumed.spec.check()?;
            (record, graph, resumed.done, resumed.blackboard)
        }
        (None, Some((spec, graph))) => {
            let record = GraphRecord::create(store.clone(), &spec).await?;
            (record, graph, Default::default(), Default::default())
        }
        (None, None) => {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "name a graph file, or --resume a graph's session",
            ));
        }
    };
    Ok(Opened {
        record,
        graph,
        done,
        entries,
    })
}

/// Refuse a graph whose task names an agent that is not defined.
fn check_agents(graph: &Graph, surface: &rein::compose::Agents) -> Result<(), AgentError> {
    let default_name = surface.agent.profile.name.clone();
    if let Some((task, name)) = graph.tasks().iter().find_map(|t| {
        t.agent
            .as_deref()
            .filter(|n| *n != default_name && !surface.named.contains_key(*n))
            .map(|n| (t, n))
    }) {
        let known: Vec<&str> = surface.named.keys().map(String::as_str).collect();
        return Err(AgentError::new(
            codes::GRAPH_INVALID,
            format!(
                "task `{}` names agent `{name}`, which is not defined (defined: {})",
                task.id,
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ),
        ));
    }
    Ok(())
}

/// The tasks nothing depends on: their answers are the graph's.
fn leaves(graph: &Graph) -> Vec<String> {
    graph
        .tasks()
        .iter()
        .filter(|t| {
            !graph
                .tasks()
                .iter()
                .any(|other| other.depends_on.contains(&t.id))
        })
        .map(|t| t.id.clone())
        .collect()
}

/// A line typed at the terminal decides `approval` (a yes or a no),
/// through the session's inbox as any surface does.
async fn decide_typed(
    store: &dyn Store,
    approval: &TaskApproval,
    answer: &str,
    view: &mut View,
    info: &mut impl Write,
) -> Result<(), AgentError> {
    let yes = rein::approvals::Answer::is_yes(answer);
    let decided = rein::approvals::decide(
        store,
        &approval.session,
        &approval.request.approval_id,
        if yes {
            Answer::Approve(LeaseScope::Once)
        } else {
            Answer::Deny
        },
        &Surface::terminal(),
    )
    .await;
    match decided {
        Ok(_) => view.say(
            info,
            &format!(
                "          {} for {}",
                if yes { "approved" } else { "denied" },
                approval.task
            ),
        )?,
        // Decided elsewhere first: that decision stands.
        Err(err) => view.say(
            info,
            &format!("          not recorded here: {}", err.message),
        )?,
    }
    Ok(())
}

fn say(info: &mut impl Write, text: &str) -> Result<(), AgentError> {
    writeln!(info, "{text}").map_err(super::output::output_error)
}

/// Lines typed on stdin with when each was read, on a thread of their own
/// (the graph runs on meanwhile); the channel closes at end of input.
fn stdin_lines() -> mpsc::UnboundedReceiver<(Instant, String)> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    rx
}
