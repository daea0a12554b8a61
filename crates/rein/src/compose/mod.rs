//! The composition root: a definition ([`AgentSpec`], layered from the
//! config files, a named agent and the flags) made into a running
//! [`Agent`] — provider, words with the project's `AGENTS.md`, the root's
//! file tools, skills, `run_command` in the sandbox, MCP servers' tools,
//! policy, hooks, budgets, the verification gate, compaction, sub-agents
//! and their helpers, prices, memory (its tools and the pinned block). Every `rein` command (`chat`, `serve`,
//! `run`, `mcp serve`, `acp`) builds its agents here, and so can a
//! product: the same `[agents.NAME]` opened by the library is the agent
//! the command opens (feature `compose`).
//!
//! ```no_run
//! # async fn example() -> Result<(), rein::wire::AgentError> {
//! use std::sync::Arc;
//! use rein::compose::{SurfaceWanted, for_surface};
//! use rein::sessions::{SqliteStore, Store};
//!
//! let store: Arc<dyn Store> = Arc::new(SqliteStore::open("rein.db").await?);
//! let root = std::env::current_dir().expect("a working folder");
//! let surface = for_surface(
//!     SurfaceWanted::new(&root).agent("reviewer"),
//!     &store,
//!     &mut std::io::stderr(),
//! )
//! .await?;
//! let mut conversation = surface.agent.open(store.clone()).await?;
//! conversation.turn("Review the last change.").await?;
//! # Ok(()) }
//! ```
//!
//! An agent that runs commands (`tools.commands`) or a check (`verify`)
//! runs them in rein's sandbox, whose helper is the running program: a
//! product's `main` first hands `rein::sandbox::helper::HELPER_ARG` to
//! `rein::sandbox::helper::main()`, as the `rein` command does.
//!
//! A product that brings its own definition, tools and provider, and
//! wants nothing of the `rein` command's world, builds with [`Product`].
//!
//! Not here: what a surface does with its agent; the tools themselves.

mod commands;
mod memory;
mod product;
pub mod project_map;
pub mod provider;
mod settings;

pub use commands::config as commands_config;
pub use product::Product;
pub use provider::{Resolved, provider_secrets, resolve, resolve_or_explain};
pub use settings::check_spec;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use crate::config::{AgentSpec, Effective, Loaded};
use crate::mcp::{McpClients, McpConfig};
use crate::runner::{Agent, Delegation};
use crate::sessions::Store;
use crate::tools::ToolBackend;
use crate::wire::{AgentError, error::codes};
use settings::{budgets, context, hooks, policy, prices, profile, sandboxed, verification};

/// What a surface asks for.
pub struct Wanted<'a> {
    /// The root the file tools work in (absolute).
    pub root: &'a Path,
    /// The definition: the layered config with the named agent and the
    /// flags over it.
    pub effective: &'a Effective,
    /// A command policy file given on the command line.
    pub commands_file: Option<&'a Path>,
    /// The system prompt when the definition sets none.
    pub default_instructions: &'a str,
}

/// A running agent, and what its surface keeps beside it.
pub struct Composed {
    /// The agent.
    pub agent: Agent,
    /// The root's file tools (for `/undo`).
    pub root: Arc<crate::files::Root>,
    /// The MCP servers started for it (stopped when the surface ends).
    pub mcp: Option<crate::mcp::McpClients>,
    /// The memory it remembers in (`[memory]`), for the surface to show a
    /// person.
    pub memory: Option<Remembered>,
    /// What a person should know, said to a surface's information stream
    /// as it was built ([`Product::build`] keeps them here instead).
    pub notes: Vec<String>,
}

/// One scope of a memory store: where an agent remembers, as a surface
/// shows it to a person.
#[derive(Clone)]
pub struct Remembered {
    /// The store.
    pub store: Arc<dyn crate::memory::MemoryBank>,
    /// The scope.
    pub scope: crate::memory::Scope,
}

/// A folder the person has not trusted may still hold an `AGENTS.md` that
/// joins the system prompt (as Codex and Claude Code read theirs): said in
/// one line, never silently.
fn announce_instructions(
    instructions: &[crate::config::Instructions],
    wanted: &Wanted<'_>,
    loaded: &Loaded,
    info: &mut impl Write,
) -> Result<(), AgentError> {
    if instructions.is_empty() {
        return Ok(());
    }
    let trusted = loaded
        .home
        .as_deref()
        .is_some_and(|home| crate::config::trusted(home, wanted.root));
    if trusted {
        return Ok(());
    }
    for file in instructions {
        note(
            info,
            &format!(
                "{} joins the instructions (this folder is not trusted; project_instructions = false leaves it out)",
                file.path.display()
            ),
        )?;
    }
    Ok(())
}

pub(crate) fn invalid(message: String) -> AgentError {
    AgentError::new(codes::CONFIG_INVALID, message)
}

/// rein's home, and the config files for a project at `root`.
pub fn load(home: Option<PathBuf>, root: &Path) -> Result<(PathBuf, Loaded), AgentError> {
    let home = crate::sessions::home::resolve(home)?;
    let loaded = Loaded::load(&home, Some(root))?;
    Ok((home, loaded))
}

/// Build the agent `wanted` describes, calling `resolved`'s provider.
#[expect(
    clippy::too_many_lines,
    reason = "each part of the definition, in the order it is built"
)]
pub async fn compose(
    wanted: &Wanted<'_>,
    loaded: &Loaded,
    resolved: &Resolved,
    store: &Arc<dyn Store>,
    info: &mut impl Write,
) -> Result<Composed, AgentError> {
    let spec = &wanted.effective.spec;
    let tools = spec.tools.clone().unwrap_or_default();
    let protect = commands::Protect::of(wanted.root, loaded, spec)?;
    let root = Arc::new(crate::files::Root::new(wanted.root)?.protecting(protect.for_files()));
    let stash = crate::files::Stash(store.clone());
    let mut registry = if tools.files.unwrap_or(true) {
        crate::files::file_tools(root.clone(), Some(stash))?
    } else {
        crate::tools::Registry::new()
    };
    // The agent's own skills, and every trusted plugin's beside them.
    let mut skills = match &tools.skills {
        Some(dir) => crate::tools::Skills::load(Path::new(dir))?,
        None => crate::tools::Skills::default(),
    };
    for dir in &loaded.plugin_skills {
        skills = skills.joined(crate::tools::Skills::load(dir)?, dir)?;
    }
    if !skills.is_empty() {
        registry = registry.with_skills(skills);
    }
    let mut commands = None;
    if tools.commands.unwrap_or(false) {
        let (tool, isolation) =
            commands::build(loaded, wanted.commands_file, wanted.root, &protect).await?;
        note(info, &format!("run_command: {isolation}"))?;
        registry = registry.with(tool)?;
        commands = Some(isolation);
    }
    let mcp_names = tools.mcp.clone().unwrap_or_default();
    let mcp = mcp_clients(loaded, &mcp_names)?;
    let remembering = memory::remembering(spec.memory.as_ref(), loaded, wanted.root).await?;
    let mut parts: Vec<Arc<dyn ToolBackend>> = vec![Arc::new(registry)];
    if let Some(remembering) = &remembering {
        parts.push(remembering.tools.clone());
    }
    if let Some(clients) = &mcp {
        parts.push(Arc::new(clients.tools()));
    }
    let backend: Arc<dyn ToolBackend> = match parts.len() {
        1 => parts.remove(0),
        _ => Arc::new(crate::tools::Joined::new(parts)),
    };
    // The project's AGENTS.md files, read once: for the prompt and to say.
    let instructions = if spec.project_instructions.unwrap_or(true) {
        crate::config::project_instructions(wanted.root)
    } else {
        Vec::new()
    };
    let mut profile = profile(wanted, resolved, &instructions)?;
    announce_instructions(&instructions, wanted, loaded, info)?;
    if mcp.as_ref().is_some_and(deferred) {
        profile.tools = crate::runner::ToolLoading::Deferred;
    }
    let mut agent =
        Agent::new(resolved.provider.clone(), backend, profile).with_secrets(provider_secrets());
    agent.guards.policy = policy(spec);
    agent.guards.hooks = hooks(spec, wanted.root)?;
    let subagents = spec.subagents.clone().unwrap_or_default();
    let mut authority = json!({
        "root": wanted.root.display().to_string(),
        "commands": commands,
        "mcp": mcp_names,
        "subagents": subagents.enabled.unwrap_or(false),
    });
    if !agent.guards.hooks.is_empty() {
        let names: Vec<&str> = agent.guards.hooks.iter().map(|h| h.name()).collect();
        authority["hooks"] = json!(names);
    }
    // What stands in the prompt beside the instructions: the project's
    // files (a map), the pinned memory.
    let mut standing: Vec<Arc<dyn crate::runner::Standing>> = Vec::new();
    if spec.project_map.unwrap_or(true) && tools.files.unwrap_or(true) {
        standing.push(Arc::new(project_map::ProjectMap(root.clone())));
    }
    let memory = remembering.map(|remembering| {
        authority["memory"] = json!(remembering.scope);
        standing.push(Arc::new(remembering.pinned));
        Remembered {
            store: remembering.store,
            scope: remembering.scope,
        }
    });
    agent.standing = match standing.len() {
        0 => None,
        1 => standing.pop(),
        _ => Some(Arc::new(crate::runner::Stacked::new(standing))),
    };
    agent.guards.authority = authority;
    agent.guards.telemetry_content = loaded
        .file()?
        .telemetry
        .and_then(|t| t.content)
        .unwrap_or(false);
    agent.budgets = budgets(spec);
    agent.context = context(spec)?;
    agent.verification = match verification(spec, wanted.root) {
        Some(check) => Some(sandboxed(check, loaded, wanted.root, &protect).await?),
        None => None,
    };
    if subagents.enabled.unwrap_or(false) {
        let mut delegation = if subagents.writes.unwrap_or(true) {
            Delegation::default()
        } else {
            Delegation::read_only()
        };
        delegation.max_per_turn = subagents.max_per_turn.unwrap_or(delegation.max_per_turn);
        delegation.max_depth = subagents.max_depth.unwrap_or(delegation.max_depth);
        agent.delegation = Some(delegation);
    }
    agent.prices = prices(spec);
    agent.server_info = tools.server_info.unwrap_or(false);
    Ok(Composed {
        agent,
        root,
        mcp,
        memory,
        notes: Vec::new(),
    })
}

/// Every native named agent of `loaded`, built for `wanted`'s root with
/// the same provider resolution: what `rein serve` offers and graph tasks
/// name — with the MCP servers they started (stop them at the end).
pub async fn named_agents(
    wanted: &Wanted<'_>,
    loaded: &Loaded,
    store: &Arc<dyn Store>,
    flags: &AgentSpec,
    info: &mut impl Write,
) -> Result<(BTreeMap<String, Agent>, Vec<crate::mcp::McpClients>), AgentError> {
    let mut agents = BTreeMap::new();
    let mut servers = Vec::new();
    for (name, entry) in loaded.agents()? {
        if !entry.is_native() {
            continue;
        }
        let effective = loaded.agent(Some(&name), flags)?;
        let resolved = resolve_or_explain(&effective.spec, "serve")?;
        let own = Wanted {
            effective: &effective,
            ..*wanted
        };
        let composed = compose(&own, loaded, &resolved, store, info).await?;
        agents.insert(name, composed.agent);
        servers.extend(composed.mcp);
    }
    Ok((agents, servers))
}

/// The agents a surface other than the chat runs: the definition for `root`
/// (the config files, `name`'s agent, `flags`), its provider resolved, and
/// every native named agent beside it.
pub struct Agents {
    /// The agent the surface runs by default.
    pub agent: Agent,
    /// The named agents a caller may pick (`rein serve`'s `{"agent": …}`,
    /// a graph task's `agent = …`).
    pub named: BTreeMap<String, Agent>,
    /// MCP servers started for them (stopped when the surface ends).
    pub mcp: Vec<crate::mcp::McpClients>,
    /// The provider's name, for the surface's first line.
    pub provider: String,
    /// The memory the default agent remembers in, if it does.
    pub memory: Option<Remembered>,
}

/// What [`for_surface`] is asked.
pub struct SurfaceWanted<'a> {
    /// `--home`.
    pub home: Option<PathBuf>,
    /// The root, absolute.
    pub root: &'a Path,
    /// `--agent`.
    pub name: Option<&'a str>,
    /// The surface's flags.
    pub flags: AgentSpec,
    /// The command, for the "no provider" error.
    pub verb: &'a str,
    /// The system prompt when the definition sets none.
    pub default_instructions: &'a str,
}

impl<'a> SurfaceWanted<'a> {
    /// The definition for a project at `root` (absolute): rein's home
    /// (`REIN_HOME`, else `~/.rein`), no named agent, no flags.
    pub fn new(root: &'a Path) -> Self {
        SurfaceWanted {
            home: None,
            root,
            name: None,
            flags: AgentSpec::default(),
            verb: "open a conversation",
            default_instructions: DEFAULT_INSTRUCTIONS,
        }
    }

    /// The named agent `[agents.NAME]`.
    pub fn agent(mut self, name: &'a str) -> Self {
        self.name = Some(name);
        self
    }

    /// rein's home in `home`.
    pub fn home(mut self, home: PathBuf) -> Self {
        self.home = Some(home);
        self
    }

    /// Values set over every config file (as a command's flags are).
    pub fn flags(mut self, flags: AgentSpec) -> Self {
        self.flags = flags;
        self
    }
}

/// The system prompt of an agent whose definition sets none.
pub const DEFAULT_INSTRUCTIONS: &str = "You are a helpful assistant working in the person's project folder. Use the tools to look at files before answering questions about them. Answer concisely.";

/// Build a surface's agents (see [`Agents`]); notes about the config (an
/// untrusted project's file) go to `info`.
pub async fn for_surface(
    wanted: SurfaceWanted<'_>,
    store: &Arc<dyn Store>,
    info: &mut impl Write,
) -> Result<Agents, AgentError> {
    let (_, loaded) = load(wanted.home.clone(), wanted.root)?;
    for note_text in &loaded.notes {
        note(info, note_text)?;
    }
    let effective = loaded.agent(wanted.name, &wanted.flags)?;
    let resolved = resolve_or_explain(&effective.spec, wanted.verb)?;
    let own = Wanted {
        root: wanted.root,
        effective: &effective,
        commands_file: None,
        default_instructions: wanted.default_instructions,
    };
    let mut composed = compose(&own, &loaded, &resolved, store, info).await?;
    let (named, mut mcp) = named_agents(&own, &loaded, store, &wanted.flags, info).await?;
    add_helpers(&mut composed.agent, &named, &loaded, wanted.root)?;
    mcp.extend(composed.mcp);
    Ok(Agents {
        agent: composed.agent,
        named,
        mcp,
        provider: resolved.provider.name().to_owned(),
        memory: composed.memory,
    })
}

/// The guards the config's agent `name` runs under (policy, hooks,
/// secrets) without building the rest: what `rein mcp serve` puts in
/// front of the tools it serves.
pub fn guards_for(
    home: Option<PathBuf>,
    root: &Path,
    name: Option<&str>,
) -> Result<crate::runner::Guards, AgentError> {
    let (_, loaded) = load(home, root)?;
    let spec = loaded.agent(name, &AgentSpec::default())?.spec;
    let guards = crate::runner::Guards {
        secrets: provider_secrets(),
        hooks: hooks(&spec, root)?,
        policy: policy(&spec),
        ..crate::runner::Guards::default()
    };
    Ok(guards)
}

/// Give `agent`'s delegation (when it delegates) the helpers a `delegate`
/// call may name: every native named agent in `named` and every `claude`
/// or `codex` entry of the config, run in `root`.
pub fn add_helpers(
    agent: &mut Agent,
    named: &BTreeMap<String, Agent>,
    loaded: &Loaded,
    root: &Path,
) -> Result<(), AgentError> {
    let Some(delegation) = agent.delegation.as_mut() else {
        return Ok(());
    };
    for (name, helper) in named {
        delegation.helpers.insert(
            name.clone(),
            crate::runner::Helper::Agent(Box::new(helper.clone())),
        );
    }
    let hosted = crate::host::config::AgentsConfig::parse(&loaded.section_text("agents"))?;
    for (name, entry) in hosted.agents {
        if matches!(
            entry.kind,
            crate::host::config::AgentKind::Claude | crate::host::config::AgentKind::Codex
        ) {
            let helper = crate::host::helper::HostedHelper::new(entry, root.to_path_buf())?;
            delegation
                .helpers
                .insert(name, crate::runner::Helper::External(Arc::new(helper)));
        }
    }
    Ok(())
}

/// A note for the person on the surface's information stream.
fn note(info: &mut impl Write, text: &str) -> Result<(), AgentError> {
    writeln!(info, "  ({})", crate::wire::visible::visible(text))
        .map_err(|e| AgentError::new(codes::INTERNAL, format!("writing a note: {e}")))
}

/// The configured MCP servers `names` names, started in the background
/// (`None` when none are named).
pub fn mcp_clients(loaded: &Loaded, names: &[String]) -> Result<Option<McpClients>, AgentError> {
    if names.is_empty() {
        return Ok(None);
    }
    let config = McpConfig::parse(&loaded.section_text("mcp"))?.only(names)?;
    Ok(Some(McpClients::start(&config)))
}

/// Whether the agent is offered its MCP tools deferred: unless every
/// server named says `deferred = false`.
fn deferred(clients: &McpClients) -> bool {
    clients.servers().iter().any(|s| s.config().deferred)
}
