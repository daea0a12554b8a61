//! A definition's settings made into the runner's values: the words
//! (with the project's `AGENTS.md`), hooks from external commands, the
//! policy, budgets, the compaction shares, the verification gate (run in
//! the `[sandbox]` sandbox), prices — and the check `rein config check`
//! runs on each agent without building it.
//!
//! Not here: the tools and the provider (`super`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{AgentSpec, Loaded};
use crate::runner::hooks::{CommandHook, HookPoint};
use crate::runner::{Budgets, ContextPolicy, Profile, Verification};
use crate::wire::{AgentError, ModelPrice, PriceTable};

use super::provider::Resolved;
use super::{Wanted, invalid};

/// How long a config hook may take when its entry does not say.
const HOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// The words: the definition's instructions (or the surface's), the
/// project's `AGENTS.md` files as read (`project_files`), the model,
/// reasoning.
pub(crate) fn profile(
    wanted: &Wanted<'_>,
    resolved: &Resolved,
    project_files: &[crate::config::Instructions],
) -> Result<Profile, AgentError> {
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
    if let Some(block) = crate::config::as_system_block(project_files) {
        profile = profile.with_system(block);
    }
    if let Some(level) = &spec.reasoning {
        profile.reasoning = Some(level.parse()?);
    }
    if let Some(t) = spec.temperature {
        profile = profile.with_temperature(temperature(t)?);
    }
    Ok(profile)
}

pub(crate) fn hooks(
    spec: &AgentSpec,
    root: &Path,
) -> Result<Vec<Arc<dyn crate::runner::hooks::Hook>>, AgentError> {
    let mut hooks: Vec<Arc<dyn crate::runner::hooks::Hook>> = Vec::new();
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

pub(crate) fn policy(spec: &AgentSpec) -> crate::approvals::Policy {
    let mut policy = crate::approvals::Policy::default();
    if let Some(set) = &spec.policy {
        policy.writes_allowed = set.writes.unwrap_or(true);
    }
    policy
}

pub(crate) fn budgets(spec: &AgentSpec) -> Budgets {
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

pub(crate) fn context(spec: &AgentSpec) -> Result<ContextPolicy, AgentError> {
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
pub(crate) async fn sandboxed(
    check: Verification,
    loaded: &Loaded,
    root: &Path,
    protect: &super::commands::Protect,
) -> Result<Verification, AgentError> {
    let config = super::commands::protecting(loaded, protect)?;
    let sandbox = config.sandbox(root, true, None).await?;
    let place = crate::SandboxChecks::new(sandbox, config.env(), config.policy.clone());
    Ok(check.in_place(std::sync::Arc::new(place)))
}

/// The verification gate: the person's own command (from their config or
/// a flag), run in the root.
pub(crate) fn verification(spec: &AgentSpec, root: &Path) -> Option<Verification> {
    let set = spec.verify.as_ref().filter(|v| !v.command.is_empty())?;
    let command: Vec<&str> = set.command.iter().map(String::as_str).collect();
    let mut check = Verification::new(&command);
    check.cwd = Some(root.to_path_buf());
    check.attempts = set.attempts.unwrap_or(check.attempts);
    check.expected = set.expected_exit.unwrap_or(check.expected);
    if let Some(secs) = set.timeout_secs {
        check.timeout = Duration::from_secs(secs);
    }
    Some(check)
}

pub(crate) fn prices(spec: &AgentSpec) -> PriceTable {
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

/// A temperature the APIs take (`Sampling::checked_temperature`).
fn temperature(t: f64) -> Result<f64, AgentError> {
    crate::wire::Sampling::checked_temperature(t)
        .map_err(|e| invalid(format!("temperature: {}", e.message)))
}

/// Refuse a definition that could not be built: a hook's point, the
/// compaction shares, the reasoning word, the temperature (`rein config
/// check`).
pub fn check_spec(spec: &AgentSpec) -> Result<(), AgentError> {
    hooks(spec, Path::new("."))?;
    context(spec)?;
    super::commands::Protect::checked(spec)?;
    if let Some(level) = &spec.reasoning {
        level
            .parse::<crate::wire::Reasoning>()
            .map_err(|e| invalid(format!("reasoning: {}", e.message)))?;
    }
    if let Some(t) = spec.temperature {
        temperature(t)?;
    }
    if spec.verify.as_ref().is_some_and(|v| v.command.is_empty()) {
        return Err(invalid("verify: `command` is empty".into()));
    }
    Ok(())
}
