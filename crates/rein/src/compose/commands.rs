//! An agent's `run_command` (`tools.commands`, `rein chat
//! --allow-commands`): the sandbox and command policy from the loaded
//! config's `[sandbox]` and `[commands]` (or a policy file given beside
//! them), with the running program as the sandbox's helper.
//!
//! Not here: the sandbox or the policy (`rein-sandbox`).

use std::path::{Path, PathBuf};

use crate::sandbox::RunCommand;
use crate::sandbox::config::CommandsConfig;
use crate::wire::AgentError;

/// The loaded config's `[sandbox]` and `[commands]`, read by their part.
pub fn config(loaded: &crate::config::Loaded) -> Result<CommandsConfig, AgentError> {
    let text = format!(
        "{}\n{}",
        loaded.section_text("sandbox"),
        loaded.section_text("commands")
    );
    let origin = loaded
        .files
        .last()
        .cloned()
        .unwrap_or_else(|| PathBuf::from(crate::config::CONFIG_FILE));
    CommandsConfig::parse(&text, &origin)
}

/// [`config`], keeping read-only what `protect` names beside `.git` and
/// `.rein`.
pub fn protecting(
    loaded: &crate::config::Loaded,
    protect: &Protect,
) -> Result<CommandsConfig, AgentError> {
    let mut config = config(loaded)?;
    config.protect = protect.absolute();
    Ok(config)
}

/// The protected paths beyond `.git` and `.rein` of a root: rein's home
/// when it lies under it, and the definition's `policy.protect` — one
/// list for the file tools and the sandbox.
#[derive(Debug, Clone)]
pub struct Protect {
    root: PathBuf,
    home: Option<PathBuf>,
    paths: Vec<PathBuf>,
}

impl Protect {
    /// Those of `root` for the definition `spec` with the `loaded` config.
    pub fn of(
        root: &Path,
        loaded: &crate::config::Loaded,
        spec: &crate::config::AgentSpec,
    ) -> Result<Protect, AgentError> {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let home = loaded
            .home
            .as_ref()
            .and_then(|h| h.canonicalize().ok())
            .and_then(|h| h.strip_prefix(&root).ok().map(Path::to_path_buf))
            .filter(|h| !h.as_os_str().is_empty());
        let paths = Protect::checked(spec)?;
        Ok(Protect { root, home, paths })
    }

    /// The definition's `policy.protect`, each a path inside the root.
    pub fn checked(spec: &crate::config::AgentSpec) -> Result<Vec<PathBuf>, AgentError> {
        let mut paths = Vec::new();
        for path in spec.policy.iter().flat_map(|p| p.protect.iter().flatten()) {
            let rel = Path::new(path);
            let inside = !path.is_empty()
                && rel
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)));
            if !inside {
                return Err(super::invalid(format!(
                    "policy.protect: `{path}` is not a path inside the root (relative, no `..`)"
                )));
            }
            paths.push(rel.to_path_buf());
        }
        Ok(paths)
    }

    /// The file tools' set.
    pub fn for_files(&self) -> crate::files::Protected {
        let set = crate::files::Protected::default().with_paths(self.paths.iter().cloned());
        match &self.home {
            Some(home) => set.with_home(home.clone()),
            None => set,
        }
    }

    /// The sandbox's: the same paths, absolute.
    pub fn absolute(&self) -> Vec<PathBuf> {
        self.home
            .iter()
            .chain(&self.paths)
            .map(|p| self.root.join(p))
            .collect()
    }
}

/// The tool, and a line saying how isolated its commands run.
pub async fn build(
    loaded: &crate::config::Loaded,
    policy: Option<&Path>,
    root: &Path,
    protect: &Protect,
) -> Result<(RunCommand, String), AgentError> {
    let mut config = protecting(loaded, protect)?;
    if let Some(file) = policy {
        config = config.with_policy_file(file)?;
    }
    let sandbox = config.sandbox(root, true, None).await?;
    let isolation = sandbox.isolation();
    let tool = RunCommand::new(
        sandbox,
        config.policy.clone(),
        root.to_path_buf(),
        config.env(),
    )?;
    Ok((tool, isolation))
}
