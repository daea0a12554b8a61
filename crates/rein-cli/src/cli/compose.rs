//! The `rein` command's composition root: a definition
//! (`rein::config::AgentSpec`, layered from the config files, a named agent
//! and the flags) made into a running [`Agent`] — provider, words with the
//! project's `AGENTS.md`, the root's file tools, skills, `run_command` in
//! the sandbox, MCP servers' tools, policy, hooks, budgets, the
//! verification gate, compaction, sub-agents and prices. `rein chat`,
//! `rein serve`, `rein run`, `rein mcp serve` and `rein acp` all build
//! their agents here, so a value set once in a config file reaches every
//! one of them (and, by the runner's one rule, every child).
//!
//! Not here: what a surface does with its agent; the tools themselves.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rein::config::{AgentSpec, Effective, Loaded};
use rein::runner::hooks::{CommandHook, HookPoint};
use rein::runner::{Agent, Budgets, ContextPolicy, Delegation, Profile, Verification};
use rein::sessions::Store;
use rein::tools::ToolBackend;
use rein::wire::{AgentError, ModelPrice, PriceTable, error::codes};
use serde_json::json;

use super::provider::{ProviderArgs, Resolved};

/// How long a config hook may take when its entry does not say.
const HOOK_TIMEOUT: Duration = Duration::from_secs(10);

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
    pub root: Arc<rein::files::Root>,
    /// The MCP servers started for it (stopped when the surface ends).
    pub mcp: Option<rein::mcp::McpClients>,
}

fn invalid(message: String) -> AgentError {
    AgentError::new(codes::CONFIG_INVALID, message)
}

/// rein's home, and the config files for a project at `root`.
pub fn load(home: Option<PathBuf>, root: &Path) -> Result<(PathBuf, Loaded), AgentError> {
    let home = rein::sessions::home::resolve(home)?;
    let loaded = Loaded::load(&home, Some(root))?;
    Ok((home, loaded))
}

/// The provider flags a definition stands for.
pub fn provider_args(spec: &AgentSpec) -> ProviderArgs {
    ProviderArgs {
        scripted: spec.provider.as_deref() == Some("scripted"),
        provider: spec.provider.clone(),
        model: spec.model.clone(),
        base_url: spec.base_url.clone(),
    }
}

/// The definition the provider flags set (over the config files').
pub fn provider_flags(args: &ProviderArgs) -> AgentSpec {
    AgentSpec {
        provider: if args.scripted {
            Some("scripted".into())
        } else {
            args.provider.clone()
        },
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        ..AgentSpec::default()
    }
}

/// Build the agent `wanted` describes, calling `resolved`'s provider.
pub async fn compose(
    wanted: &Wanted<'_>,
    loaded: &Loaded,
    resolved: &Resolved,
    store: &Arc<dyn Store>,
    info: &mut impl Write,
) -> Result<Composed, AgentError> {
    let spec = &wanted.effective.spec;
    let tools = spec.tools.clone().unwrap_or_default();
    let root = Arc::new(rein::files::Root::new(wanted.root)?);
    let stash = rein::files::Stash(store.clone());
    let mut registry = if tools.files.unwrap_or(true) {
        rein::files::file_tools(root.clone(), Some(stash))?
    } else {
        rein::tools::Registry::new()
    };
    if let Some(dir) = &tools.skills {
        registry = registry.with_skills(rein::tools::Skills::load(Path::new(dir))?);
    }
    let mut commands = None;
    if tools.commands.unwrap_or(false) {
        let (tool, isolation) =
            super::commands_tool::build(loaded, wanted.commands_file, wanted.root).await?;
        super::chat::say(info, &format!("  (run_command: {isolation})"))?;
        registry = registry.with(tool)?;
        commands = Some(isolation);
    }
    let mcp_names = tools.mcp.clone().unwrap_or_default();
    let mcp = super::mcp::clients(loaded, &mcp_names)?;
    let backend: Arc<dyn ToolBackend> = match &mcp {
        Some(clients) => Arc::new(rein::tools::Joined::new(vec![
            Arc::new(registry),
            Arc::new(clients.tools()),
        ])),
        None => Arc::new(registry),
    };
    let mut profile = profile(wanted, resolved)?;
    if mcp.as_ref().is_some_and(super::mcp::deferred) {
        profile.tools = rein::runner::ToolLoading::Deferred;
    }
    let mut agent = Agent::new(resolved.provider.clone(), backend, profile)
        .with_secrets(super::provider::provider_secrets());
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
    agent.guards.authority = authority;
    agent.guards.telemetry_content = loaded
        .file()?
        .telemetry
        .and_then(|t| t.content)
        .unwrap_or(false);
    agent.budgets = budgets(spec);
    agent.context = context(spec)?;
    agent.verification = match verification(spec, wanted.root) {
        Some(check) => Some(sandboxed(check, loaded, wanted.root).await?),
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
    Ok(Composed { agent, root, mcp })
}

/// Refuse a definition that could not be built: a hook's point, the
/// compaction shares, the reasoning word (`rein config check`).
pub fn check_spec(spec: &AgentSpec) -> Result<(), AgentError> {
    hooks(spec, Path::new("."))?;
    context(spec)?;
    if let Some(level) = &spec.reasoning {
        level
            .parse::<rein::wire::Reasoning>()
            .map_err(|e| invalid(format!("reasoning: {}", e.message)))?;
    }
    if spec.verify.as_ref().is_some_and(|v| v.command.is_empty()) {
        return Err(invalid("verify: `command` is empty".into()));
    }
    Ok(())
}

/// The words: the definition's instructions (or the surface's), the
/// project's `AGENTS.md`, the model, reasoning.
fn profile(wanted: &Wanted<'_>, resolved: &Resolved) -> Result<Profile, AgentError> {
    let spec = &wanted.effective.spec;
    let name = wanted
        .effective
        .name
        .clone()
        .unwrap_or_else(|| "rein".into());
    let instructions = spec
        .instructions
        .clone()
        .unwrap_or_else(|| wanted.default_instructions.to_owned());
    let mut profile = Profile::new(name, resolved.model.clone()).with_system(instructions);
    if spec.project_instructions.unwrap_or(true) {
        let files = rein::config::project_instructions(wanted.root);
        if let Some(block) = rein::config::as_system_block(&files) {
            profile = profile.with_system(block);
        }
    }
    if let Some(level) = &spec.reasoning {
        profile.reasoning = Some(level.parse()?);
    }
    Ok(profile)
}

fn hooks(
    spec: &AgentSpec,
    root: &Path,
) -> Result<Vec<Arc<dyn rein::runner::hooks::Hook>>, AgentError> {
    let mut hooks: Vec<Arc<dyn rein::runner::hooks::Hook>> = Vec::new();
    for entry in spec.hooks.iter().flatten() {
        if entry.command.is_empty() {
            return Err(invalid(format!(
                "hook `{}`: `command` is empty",
                entry.name
            )));
        }
        let points = entry
            .points
            .iter()
            .map(|p| {
                HookPoint::named(p).ok_or_else(|| {
                    invalid(format!(
                        "hook `{}`: `{p}` is not before_call, after_call, before_model_call or turn_end",
                        entry.name
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        hooks.push(Arc::new(CommandHook {
            name: entry.name.clone(),
            command: entry.command.clone(),
            points,
            timeout: entry.timeout_ms.map_or(HOOK_TIMEOUT, Duration::from_millis),
            cwd: Some(root.to_path_buf()),
        }));
    }
    Ok(hooks)
}

fn policy(spec: &AgentSpec) -> rein::approvals::Policy {
    let mut policy = rein::approvals::Policy::default();
    if let Some(set) = &spec.policy {
        policy.writes_allowed = set.writes.unwrap_or(true);
        policy.egress_allow = set.egress_allow.clone().unwrap_or_default();
    }
    policy
}

fn budgets(spec: &AgentSpec) -> Budgets {
    let mut budgets = Budgets::default();
    if let Some(set) = &spec.budgets {
        budgets.max_steps = set.max_steps.unwrap_or(budgets.max_steps);
        budgets.max_tokens = set.max_tokens.or(budgets.max_tokens);
        budgets.max_cost_micro_usd = set
            .max_cost_usd
            .map(|usd| (usd.max(0.0) * 1_000_000.0).round() as u64);
        if let Some(secs) = set.max_wall_secs {
            budgets.max_wall = Duration::from_secs(secs);
        }
    }
    budgets
}

fn context(spec: &AgentSpec) -> Result<ContextPolicy, AgentError> {
    let mut policy = ContextPolicy::default();
    if let Some(set) = &spec.compaction {
        policy.soft = set.soft.unwrap_or(policy.soft);
        policy.hard = set.hard.unwrap_or(policy.hard);
        policy.target = set.target.unwrap_or(policy.target);
        policy.window = set.window.or(policy.window);
        let ordered = 0.0 < policy.target
            && policy.target < policy.hard
            && policy.soft <= policy.hard
            && policy.hard < 1.0;
        if !ordered {
            return Err(invalid(
                "compaction: the shares must hold 0 < target < hard < 1 and soft ≤ hard".into(),
            ));
        }
    }
    Ok(policy)
}

/// The check in the sandbox `run_command` uses (`[sandbox]`), with its
/// environment: it runs code the model wrote, which reaches nothing
/// outside the root.
async fn sandboxed(
    check: Verification,
    loaded: &Loaded,
    root: &Path,
) -> Result<Verification, AgentError> {
    let config = super::commands_tool::config(loaded)?;
    let sandbox = config.sandbox(root, true, None).await?;
    Ok(check.in_sandbox(sandbox, config.env()))
}

/// The verification gate: the person's own command (from their config or
/// a flag), run in the root.
fn verification(spec: &AgentSpec, root: &Path) -> Option<Verification> {
    let set = spec.verify.as_ref().filter(|v| !v.command.is_empty())?;
    let command: Vec<&str> = set.command.iter().map(String::as_str).collect();
    let mut check = Verification::new(&command);
    check.cwd = Some(root.to_path_buf());
    check.attempts = set.attempts.unwrap_or(check.attempts);
    if let Some(secs) = set.timeout_secs {
        check.timeout = Duration::from_secs(secs);
    }
    Some(check)
}

fn prices(spec: &AgentSpec) -> PriceTable {
    let mut table = PriceTable::builtin();
    for (model, price) in spec.prices.iter().flatten() {
        let mut set = ModelPrice::usd_per_mtok(price.input, price.output);
        let micro = |usd: f64| (usd.max(0.0) * 1_000_000.0).round() as u64;
        set.cache_read = price.cache_read.map_or(set.input / 10, micro);
        set.cache_write = price.cache_write.map_or(set.input * 5 / 4, micro);
        table.insert(model.clone(), set);
    }
    table
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
) -> Result<(BTreeMap<String, Agent>, Vec<rein::mcp::McpClients>), AgentError> {
    let mut agents = BTreeMap::new();
    let mut servers = Vec::new();
    for (name, entry) in loaded.agents()? {
        if !entry.is_native() {
            continue;
        }
        let effective = loaded.agent(Some(&name), flags)?;
        let resolved = provider_args(&effective.spec).resolve("serve")?;
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

/// An agent a surface other than the chat runs: the definition for `root`
/// (the config files, `name`'s agent, `flags`), its provider resolved, and
/// every native named agent beside it.
pub struct Surface {
    /// The agent the surface runs by default.
    pub agent: Agent,
    /// The named agents a caller may pick (`rein serve`'s `{"agent": …}`,
    /// a graph task's `agent = …`).
    pub named: BTreeMap<String, Agent>,
    /// MCP servers started for them (stopped when the surface ends).
    pub mcp: Vec<rein::mcp::McpClients>,
    /// The provider's name, for the surface's first line.
    pub provider: String,
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

/// Build a surface's agents (see [`Surface`]); notes about the config (an
/// untrusted project's file) go to `info`.
pub async fn for_surface(
    wanted: SurfaceWanted<'_>,
    store: &Arc<dyn Store>,
    info: &mut impl Write,
) -> Result<Surface, AgentError> {
    let (_, loaded) = load(wanted.home.clone(), wanted.root)?;
    for note in &loaded.notes {
        super::chat::say(info, &format!("  ({note})"))?;
    }
    let effective = loaded.agent(wanted.name, &wanted.flags)?;
    let resolved = provider_args(&effective.spec).resolve(wanted.verb)?;
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
    Ok(Surface {
        agent: composed.agent,
        named,
        mcp,
        provider: resolved.provider.name().to_owned(),
    })
}

/// The guards the config's agent `name` runs under (policy, hooks,
/// secrets) without building the rest: what `rein mcp serve` puts in
/// front of the tools it serves.
pub fn guards_for(
    home: Option<PathBuf>,
    root: &Path,
    name: Option<&str>,
) -> Result<rein::runner::Guards, AgentError> {
    let (_, loaded) = load(home, root)?;
    let spec = loaded.agent(name, &AgentSpec::default())?.spec;
    let guards = rein::runner::Guards {
        secrets: super::provider::provider_secrets(),
        hooks: hooks(&spec, root)?,
        policy: policy(&spec),
        ..rein::runner::Guards::default()
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
            rein::runner::Helper::Agent(Box::new(helper.clone())),
        );
    }
    let hosted = rein::host::config::AgentsConfig::parse(&loaded.section_text("agents"))?;
    for (name, entry) in hosted.agents {
        if matches!(
            entry.kind,
            rein::host::config::AgentKind::Claude | rein::host::config::AgentKind::Codex
        ) {
            let helper = rein::host::helper::HostedHelper::new(entry, root.to_path_buf())?;
            delegation
                .helpers
                .insert(name, rein::runner::Helper::External(Arc::new(helper)));
        }
    }
    Ok(())
}
