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

/// The tool, and a line saying how isolated its commands run.
pub async fn build(
    loaded: &crate::config::Loaded,
    policy: Option<&Path>,
    root: &Path,
) -> Result<(RunCommand, String), AgentError> {
    let mut config = config(loaded)?;
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
