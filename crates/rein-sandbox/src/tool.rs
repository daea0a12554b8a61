//! `run_command`: the model runs a command (argv, no shell unless the
//! policy allows one) in the person's folder, through a [`Sandbox`].
//!
//! The class of a call is the command policy's (allow → runs, ask → waits
//! for a person, forbid → refused before anyone is asked). The working
//! directory must be inside the root, decided on the resolved path. The
//! command's environment is exactly what the config names (never a
//! provider key). Every result says how isolated the run was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rein_tools::{Outcome, PermissionClass, Tool, ToolContext};
use rein_wire::error::io_reason;
use rein_wire::{AgentError, error::codes};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::policy::CommandPolicy;
use crate::run::{Request, Sandbox};

/// The longest a model may ask a command to run.
const MAX_TIMEOUT_SECS: u64 = 30 * 60;
const DEFAULT_TIMEOUT_SECS: u64 = 120;

/// What the model sends.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunInput {
    /// The program and its arguments, one word each (no shell parsing).
    pub command: Vec<String>,
    /// The working directory, relative to the project root (default: the root).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Seconds before the command and everything it started are killed (default 120).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

/// The `run_command` tool.
pub struct RunCommand {
    sandbox: Arc<dyn Sandbox>,
    policy: CommandPolicy,
    root: PathBuf,
    env: BTreeMap<String, String>,
}

impl RunCommand {
    /// Commands under `root`, through `sandbox`, decided by `policy`, with
    /// exactly `env` as their environment (a provider key is refused).
    pub fn new(
        sandbox: Arc<dyn Sandbox>,
        policy: CommandPolicy,
        root: PathBuf,
        env: BTreeMap<String, String>,
    ) -> Result<RunCommand, AgentError> {
        if let Some(key) = env
            .keys()
            .find(|k| rein_wire::env::SECRET_VARS.contains(&k.as_str()))
        {
            return Err(AgentError::new(
                codes::COMMAND_POLICY_INVALID,
                format!("`{key}` is a key of rein's own; a command never gets it"),
            ));
        }
        let root = root.canonicalize().map_err(|e| {
            AgentError::new(
                codes::INVALID_INPUT,
                format!("the root {}: {}", root.display(), io_reason(&e)),
            )
        })?;
        Ok(RunCommand {
            sandbox,
            policy,
            root,
            env,
        })
    }

    fn cwd(&self, cwd: Option<&str>) -> Result<PathBuf, AgentError> {
        working_dir(&self.root, cwd)
    }
}

/// The folder a command runs in: `cwd` under `root` (the root without
/// one), refused when it does not exist — saying why in words and naming
/// the folders there are — or is not a folder inside the root.
fn working_dir(root: &Path, cwd: Option<&str>) -> Result<PathBuf, AgentError> {
    let Some(cwd) = cwd else {
        return Ok(root.to_path_buf());
    };
    let resolved = root.join(cwd).canonicalize().map_err(|e| {
        AgentError::new(
            codes::INVALID_INPUT,
            format!(
                "the working directory `{cwd}`: {}; {}",
                io_reason(&e),
                folders_near(root, cwd)
            ),
        )
    })?;
    if resolved.starts_with(root) && resolved.is_dir() {
        Ok(resolved)
    } else {
        Err(AgentError::new(
            codes::OUTSIDE_ROOT,
            format!("the working directory `{cwd}` is not a folder inside the root"),
        ))
    }
}

/// The folders in the deepest folder of `cwd` that exists under `root`
/// (at most [`MAX_NAMED`], a dead end that points somewhere), or that
/// the command runs at the root when `cwd` is left out.
fn folders_near(root: &Path, cwd: &str) -> String {
    let mut at = root.to_path_buf();
    // Only names, each checked where it really leads: never a folder
    // outside the root by `..` or a link.
    for part in Path::new(cwd).components() {
        let std::path::Component::Normal(part) = part else {
            break;
        };
        let Ok(next) = at.join(part).canonicalize() else {
            break;
        };
        if !next.starts_with(root) || !next.is_dir() {
            break;
        }
        at = next;
    }
    let mut names: Vec<String> = std::fs::read_dir(&at)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .take(MAX_LISTED)
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let more = names.len() > MAX_NAMED;
    names.truncate(MAX_NAMED);
    let shown = at.strip_prefix(root).map_or(".".into(), |p| {
        if p.as_os_str().is_empty() {
            ".".into()
        } else {
            p.display().to_string()
        }
    });
    match (names.is_empty(), more) {
        (true, _) => format!("`{shown}` has no folders (leave `cwd` out to run at the root)"),
        (false, false) => format!("the folders in `{shown}`: {}", names.join(", ")),
        (false, true) => format!("the folders in `{shown}` include: {}", names.join(", ")),
    }
}

/// Folders named in a dead end's answer, at most.
const MAX_NAMED: usize = 20;
/// Entries read to find them, at most.
const MAX_LISTED: usize = 1_000;

impl Tool for RunCommand {
    type Input = RunInput;

    fn name(&self) -> &str {
        "run_command"
    }

    fn description(&self) -> &str {
        "Run a command (tests, builds, linters) in the project folder and read its output.\n\
         Give the program and its arguments as separate words; there is no shell. It runs \
         isolated: it can write only inside the project, read only the project and the \
         system's programs, and has no network unless the person allowed it."
    }

    fn permission(&self, input: &RunInput) -> PermissionClass {
        // `precheck` refused a forbidden command already; this never runs
        // for one, and asks if it somehow did.
        self.policy
            .class(&input.command)
            .unwrap_or(PermissionClass::Destructive)
    }

    fn precheck(&self, input: &RunInput) -> Result<(), AgentError> {
        if input.command.is_empty() || input.command[0].is_empty() {
            return Err(AgentError::new(
                codes::TOOL_ARGUMENTS_INVALID,
                "an empty command",
            ));
        }
        self.policy.class(&input.command)?;
        self.cwd(input.cwd.as_deref())?;
        crate::program::on_path(&input.command[0], &self.env)
    }

    async fn invoke(&self, input: RunInput, _ctx: &ToolContext) -> Outcome {
        // Decided again on what runs now: the folder may have changed.
        if let Err(err) = self.policy.class(&input.command) {
            return Outcome::from_error(&err);
        }
        let cwd = match self.cwd(input.cwd.as_deref()) {
            Ok(cwd) => cwd,
            Err(err) => return Outcome::from_error(&err),
        };
        let request = Request {
            argv: input.command,
            cwd,
            env: self.env.clone(),
            timeout: Duration::from_secs(
                input
                    .timeout_secs
                    .unwrap_or(DEFAULT_TIMEOUT_SECS)
                    .clamp(1, MAX_TIMEOUT_SECS),
            ),
        };
        match self.sandbox.run(&request).await {
            Ok(ran) => Outcome::ok(result(&ran, &self.root)),
            Err(err) => Outcome::from_error(&err),
        }
    }
}

/// What the model reads of a run: its outputs, how it ended, how isolated,
/// and any protected path it made (said, so the person sees it too).
fn result(ran: &crate::Ran, root: &std::path::Path) -> serde_json::Value {
    let mut result = json!({
        "exit_code": ran.code,
        "timed_out": ran.timed_out,
        "stdout": ran.stdout.text,
        "stdout_bytes_dropped": ran.stdout.dropped,
        "stderr": ran.stderr.text,
        "stderr_bytes_dropped": ran.stderr.dropped,
        "duration_ms": ran.duration_ms,
        "isolation": ran.isolation,
    });
    if !ran.made_protected.is_empty() {
        let named: Vec<String> = ran
            .made_protected
            .iter()
            .map(|p| p.strip_prefix(root).unwrap_or(p).display().to_string())
            .collect();
        result["made_protected"] = json!(format!(
            "this command made {}: what runs later on the host (git's hooks and config, rein's project config); it is read-only to commands from now on, and rein's project config is not applied until the person trusts it",
            named.join(", ")
        ));
    }
    result
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

    use super::{folders_near, working_dir};

    #[test]
    fn a_missing_working_directory_is_said_in_words_without_an_error_number() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let err = working_dir(&root, Some("src")).unwrap_err();
        assert!(
            err.message.contains("No such file or directory;"),
            "{}",
            err.message
        );
        assert!(!err.message.contains("os error"), "{}", err.message);
        assert_eq!(working_dir(&root, None).unwrap(), root);
    }

    #[test]
    fn a_missing_working_directory_names_the_folders_there_are() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(outside.path().join("secret-outside")).unwrap();
        let root = outside.path().join("root");
        for folder in ["src", "test", "docs/api"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        std::os::unix::fs::symlink(outside.path(), root.join("up")).unwrap();
        let root = root.canonicalize().unwrap();
        assert_eq!(
            folders_near(&root, "tests"),
            "the folders in `.`: docs, src, test"
        );
        assert_eq!(
            folders_near(&root, "docs/apis"),
            "the folders in `docs`: api"
        );
        // Never a folder outside the root, by `..` or by a link.
        for cwd in ["../x", "up/x", "docs/../../x"] {
            assert!(!folders_near(&root, cwd).contains("secret"), "{cwd}");
        }
    }
}
