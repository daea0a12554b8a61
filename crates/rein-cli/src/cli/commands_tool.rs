//! The chat's `run_command` (`rein chat --allow-commands`): the sandbox
//! and command policy from `REIN_HOME/config.toml` (or `--commands FILE`),
//! with this binary as the sandbox's helper.
//!
//! Not here: the sandbox or the policy (`rein-sandbox`).

use std::path::{Path, PathBuf};

use rein_sandbox::RunCommand;
use rein_sandbox::config::CommandsConfig;
use rein_wire::AgentError;

/// The tool, and a line saying how isolated its commands run.
pub async fn build(
    home: Option<PathBuf>,
    policy: Option<&Path>,
    root: &Path,
) -> Result<(RunCommand, String), AgentError> {
    let home = rein_sessions::home::resolve(home)?;
    let mut config = CommandsConfig::load(&home.join(rein_mcp::config::CONFIG_FILE))?;
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
