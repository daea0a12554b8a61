//! One process's share of a trial: open the trial's store (recovering what
//! a killed process left), and drive the scripted conversation from where
//! the log says it is to its end — the person's decisions made as they
//! come (every write and command approved, every delete refused), the compaction made
//! between the second and third turns.
//!
//! The campaign may kill this process with SIGKILL at any instant; nothing
//! here prepares for that. Whatever it leaves, the next process carries on.
//!
//! Not here: the model (`model`), killing (`campaign`), checking (`check`).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use rein_approvals::Answer;
use rein_runner::{Conversation, Delegation, Profile, ToolLoading, TurnOutcome};
use rein_sandbox::policy::CommandPolicy;
use rein_sandbox::{LinuxSandbox, RunCommand};
use rein_sessions::{Event, SqliteStore, Store, StoredEvent};
use rein_wire::permission::LeaseScope;

use crate::counted::Counted;
use crate::model::{Script, TURNS};

/// The turn after which the conversation is compacted (once).
pub(crate) const COMPACT_AFTER: usize = 2;

/// The trial's folder: the store, the project root, the executions file.
pub fn store_path(dir: &Path) -> std::path::PathBuf {
    dir.join("rein.db")
}

/// The project root the file tools work in.
pub fn root_path(dir: &Path) -> std::path::PathBuf {
    dir.join("root")
}

/// The surface a trial's conversation is driven through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// The library's `Conversation`, in the trial's own process.
    Library,
    /// `rein serve`'s HTTP API (`served`), served by the trial's process.
    Served,
    /// A task graph whose tasks are the turns (`graph`), as `rein run`
    /// runs one.
    Graph,
    /// The turns' calls made by an MCP client of `rein mcp serve` (`mcp`).
    Mcp,
    /// The real Claude Code CLI hosted by rein (`hosted`): a scenario of
    /// its own, run again from its start after each kill.
    Hosted,
}

impl Surface {
    /// Every surface, in the order trials take them.
    pub const ALL: [Surface; 5] = [
        Surface::Library,
        Surface::Served,
        Surface::Graph,
        Surface::Mcp,
        Surface::Hosted,
    ];

    /// Its name, as the trial's folder records it.
    pub fn name(self) -> &'static str {
        match self {
            Surface::Library => "library",
            Surface::Served => "served",
            Surface::Graph => "graph",
            Surface::Mcp => "mcp",
            Surface::Hosted => "hosted",
        }
    }

    /// Record it in the trial's folder.
    pub fn write(self, dir: &Path) -> std::io::Result<()> {
        std::fs::write(dir.join("surface"), self.name())
    }

    /// The surface the trial's folder records (the library when none).
    pub fn of(dir: &Path) -> Surface {
        match std::fs::read_to_string(dir.join("surface")).as_deref() {
            Ok("served") => Surface::Served,
            Ok("graph") => Surface::Graph,
            Ok("mcp") => Surface::Mcp,
            Ok("hosted") => Surface::Hosted,
            _ => Surface::Library,
        }
    }
}

/// Drive the trial in `dir` to its end through its surface; `helper` is
/// the rein-chaos binary, the sandbox's helper for the scripted command.
pub async fn run(dir: &Path, helper: &Path) -> anyhow::Result<()> {
    match Surface::of(dir) {
        Surface::Library => run_library(dir, helper).await,
        Surface::Served => crate::served::run(dir, helper).await,
        Surface::Graph => crate::graph::run(dir, helper).await,
        Surface::Mcp => crate::mcp::run(dir, helper).await,
        Surface::Hosted => crate::hosted::run(dir).await,
    }
}

/// The trial's store and its counted tools: rein's file tools over the
/// trial's root and `run_command` in the sandbox.
pub(crate) async fn parts(
    dir: &Path,
    helper: &Path,
) -> anyhow::Result<(Arc<dyn Store>, Arc<Counted>)> {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(store_path(dir)).await?);
    let root = rein_files::Root::new(&root_path(dir))?;
    let tools = rein_files::file_tools(Arc::new(root), Some(rein_files::Stash(store.clone())))?
        .with(command_tool(&root_path(dir), helper).await?)?;
    Ok((store, Arc::new(Counted::new(Arc::new(tools), dir))))
}

/// The scripted assistant's profile.
pub(crate) fn profile() -> Profile {
    Profile {
        tools: ToolLoading::Native,
        ..Profile::new("Chaos", "chaos-script").with_system("Follow the script.")
    }
}

async fn run_library(dir: &Path, helper: &Path) -> anyhow::Result<()> {
    let (store, backend) = parts(dir, helper).await?;
    // A process killed while creating the session may have left it with
    // no events: it is carried on all the same.
    let existing = main_session(store.as_ref()).await?;
    let mut conv = Conversation::open(
        store.clone(),
        Arc::new(Script),
        backend,
        profile(),
        existing.as_deref(),
    )
    .await
    .context("opening the session")?;
    conv.agent.delegation = Some(Delegation::default());
    loop {
        let log = conv.log_events().await?;
        let finished = finished_turns(&log);
        let outcome = if conv.has_open_turn().await? {
            decide_pending(&mut conv).await?;
            conv.resume().await?
        } else if finished == COMPACT_AFTER && !compacted(&log) {
            conv.compact_now().await.context("compacting")?;
            continue;
        } else if let Some(turn) = TURNS.get(finished) {
            conv.turn(turn.says).await?
        } else {
            break;
        };
        match outcome {
            TurnOutcome::Finished { .. } | TurnOutcome::AwaitingApproval(_) => {}
            other => bail!("a turn ended {other:?}"),
        }
    }
    conv.close().await?;
    Ok(())
}

/// The trial's main session (the one no other session started), if made.
pub async fn main_session(store: &dyn Store) -> anyhow::Result<Option<String>> {
    let sessions = store.list_sessions(100).await?;
    let main: Vec<&str> = sessions
        .iter()
        .filter(|s| s.metadata["parent_session"].is_null())
        .map(|s| s.id.as_str())
        .collect();
    match main.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some((*one).to_owned())),
        more => bail!("the trial's store holds {} main sessions", more.len()),
    }
}

/// `run_command` in rein's Linux sandbox (landlock, `helper` the
/// rein-chaos binary), writing only in the trial's root; a shell's `-c` is
/// allowed and so always asked.
async fn command_tool(root: &Path, helper: &Path) -> anyhow::Result<RunCommand> {
    let root = root.canonicalize().context("the trial's root")?;
    let sandbox = LinuxSandbox::binary_helper(helper, vec![root.clone()]).reading([root.clone()]);
    sandbox
        .check()
        .await
        .context("the campaign needs rein's sandbox")?;
    let policy = CommandPolicy {
        shell: true,
        ..CommandPolicy::default()
    };
    let env = [("PATH".to_owned(), "/usr/bin:/bin".to_owned())].into();
    Ok(RunCommand::new(Arc::new(sandbox), policy, root, env)?)
}

/// The person: every pending write approved for this call, every delete
/// refused.
async fn decide_pending(conv: &mut Conversation) -> anyhow::Result<()> {
    for pending in conv.pending_approvals().await? {
        let answer = person(&pending.tool);
        conv.decide(
            &pending.approval_id,
            answer,
            &rein_approvals::Surface::terminal(),
        )
        .await?;
    }
    Ok(())
}

/// What the person answers about `tool`.
pub fn person(tool: &str) -> Answer {
    if tool == "delete_file" {
        Answer::Deny
    } else {
        Answer::Approve(LeaseScope::Once)
    }
}

/// How many turns of the log have finished.
pub fn finished_turns(log: &[StoredEvent]) -> usize {
    log.iter()
        .filter(|e| matches!(e.event, Event::TurnFinished { .. }))
        .count()
}

/// Whether the log holds a compaction.
pub(crate) fn compacted(log: &[StoredEvent]) -> bool {
    log.iter()
        .any(|e| matches!(e.event, Event::CompactionCreated { .. }))
}
