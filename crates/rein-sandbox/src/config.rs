//! The sandbox a person configured: `[sandbox]` and `[commands]` in rein's
//! config file (`REIN_HOME/config.toml`).
//!
//! ```toml
//! [sandbox]
//! backend = "linux"                   # or "container", which also needs:
//! # image = "rust:1.95"               # a local image (never pulled)
//! # runtime = "docker"                # or "podman" (unset: whichever is installed)
//! # or "host", which also needs:
//! # unsafe_host_not_isolated = true   # "I accept commands run with all my rights"
//! network = false
//! # bubblewrap = true                # require it (unset: used when installed)
//! env_from = ["PATH", "HOME"]         # the commands' environment, by name
//! env = { CARGO_TERM_COLOR = "never" }
//!
//! [commands]                          # the command policy (see `policy`)
//! default = "ask"
//! [[commands.rule]]
//! prefix = ["cargo", "test"]
//! decision = "allow"
//! examples = ["cargo test"]
//! ```
//!
//! Not here: running anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_wire::{AgentError, error::codes};
use serde::Deserialize;

use crate::container::ContainerSandbox;
use crate::policy::CommandPolicy;
use crate::run::{HostSandbox, LinuxSandbox, Sandbox};

/// Which backend runs commands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// landlock + seccomp + rlimits (refuses to start without landlock).
    #[default]
    Linux,
    /// A fresh container of a local image per command (Docker or
    /// Podman); needs `image`.
    Container,
    /// No isolation; needs `unsafe_host_not_isolated = true`.
    Host,
}

/// The `[sandbox]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// The backend.
    #[serde(default)]
    pub backend: Backend,
    /// The host backend's acknowledgement.
    #[serde(default)]
    pub unsafe_host_not_isolated: bool,
    /// Whether commands may open network sockets.
    #[serde(default)]
    pub network: bool,
    /// The container backend's image (a local one: never pulled).
    #[serde(default)]
    pub image: Option<String>,
    /// The container backend's runtime (unset: Docker where installed,
    /// else Podman).
    #[serde(default)]
    pub runtime: Option<crate::container::Runtime>,
    /// Bubblewrap around the Linux backend: unset uses it when installed,
    /// `true` requires it, `false` never uses it.
    #[serde(default)]
    pub bubblewrap: Option<bool>,
    /// Variables copied from rein's environment, by name.
    #[serde(default = "default_env_from")]
    pub env_from: Vec<String>,
    /// Literal variables.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

fn default_env_from() -> Vec<String> {
    vec!["PATH".into()]
}

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    sandbox: Option<SandboxConfig>,
    #[serde(default)]
    commands: Option<CommandPolicy>,
}

/// What a config file says about commands.
#[derive(Debug, Clone, Default)]
pub struct CommandsConfig {
    /// The sandbox.
    pub sandbox: SandboxConfig,
    /// The command policy.
    pub policy: CommandPolicy,
    /// Paths kept read-only beside every root's `.git` and `.rein`
    /// (rein's home under the root, the definition's `policy.protect`):
    /// set by the caller, not read from the file.
    pub protect: Vec<PathBuf>,
}

fn invalid(path: &Path, why: impl std::fmt::Display) -> AgentError {
    AgentError::new(
        codes::COMMAND_POLICY_INVALID,
        format!("{}: {why}", path.display()),
    )
}

impl CommandsConfig {
    /// Read `path` (a missing file: the defaults — the Linux backend, no
    /// network, `PATH` only, every command asked, no shell).
    pub fn load(path: &Path) -> Result<CommandsConfig, AgentError> {
        match std::fs::read_to_string(path) {
            Ok(text) => CommandsConfig::parse(&text, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => CommandsConfig::parse("", path),
            Err(e) => Err(invalid(path, e)),
        }
    }

    /// The `[sandbox]` and `[commands]` tables in `text` (what rein's
    /// config loader hands over; other tables are not this part's), errors
    /// naming `origin`. Without them: the defaults, as for a missing file.
    pub fn parse(text: &str, origin: &Path) -> Result<CommandsConfig, AgentError> {
        let file: File = toml::from_str(text).map_err(|e| invalid(origin, e))?;
        let policy = file.commands.unwrap_or_default();
        policy.check().map_err(|e| invalid(origin, e.message))?;
        let sandbox = file.sandbox.unwrap_or(SandboxConfig {
            env_from: default_env_from(),
            ..SandboxConfig::default()
        });
        for name in sandbox.env_from.iter().chain(sandbox.env.keys()) {
            if rein_wire::env::SECRET_VARS.contains(&name.as_str()) {
                return Err(invalid(
                    origin,
                    format!("`{name}` is a key of rein's own; a command never gets it"),
                ));
            }
        }
        Ok(CommandsConfig {
            sandbox,
            policy,
            protect: Vec::new(),
        })
    }

    /// Replace the policy with the one in `path` (a file of its own).
    pub fn with_policy_file(mut self, path: &Path) -> Result<CommandsConfig, AgentError> {
        let text = std::fs::read_to_string(path).map_err(|e| invalid(path, e))?;
        self.policy = CommandPolicy::parse(&text).map_err(|e| invalid(path, e.message))?;
        Ok(self)
    }

    /// The commands' environment: the literal values and the named ones.
    /// The container backend copies no `PATH` from rein's environment:
    /// the host's means nothing inside an image, whose own `PATH` holds
    /// (a literal `env.PATH` is passed).
    pub fn env(&self) -> BTreeMap<String, String> {
        let mut env = self.sandbox.env.clone();
        for name in &self.sandbox.env_from {
            if self.sandbox.backend == Backend::Container && name == "PATH" {
                continue;
            }
            if let Ok(value) = std::env::var(name) {
                env.insert(name.clone(), value);
            }
        }
        env
    }

    /// The backend, writing only under `root`; `self_helper`: this binary
    /// is its own helper. The Linux backend is checked (it refuses to start
    /// where it cannot confine); the host backend needs its acknowledgement.
    pub async fn sandbox(
        &self,
        root: &Path,
        self_helper: bool,
        helper: Option<PathBuf>,
    ) -> Result<Arc<dyn Sandbox>, AgentError> {
        match self.sandbox.backend {
            Backend::Container => {
                let image = self.sandbox.image.as_deref().ok_or_else(|| {
                    AgentError::new(
                        codes::SANDBOX_UNAVAILABLE,
                        "`backend = \"container\"` needs `image = \"…\"` in `[sandbox]` (a local image)",
                    )
                })?;
                let container =
                    ContainerSandbox::new(self.sandbox.runtime, image, vec![root.to_path_buf()])?
                        .protecting(self.protect.iter().cloned())
                        .with_network(self.sandbox.network);
                container.check().await?;
                Ok(Arc::new(container))
            }
            Backend::Host => Ok(Arc::new(HostSandbox::new(
                self.sandbox.unsafe_host_not_isolated,
            )?)),
            Backend::Linux => {
                let write = vec![root.to_path_buf()];
                let linux = match (self_helper, helper) {
                    (_, Some(helper)) => LinuxSandbox::new(helper, write),
                    (true, None) => LinuxSandbox::self_helper(write)?,
                    (false, None) => {
                        return Err(AgentError::new(
                            codes::SANDBOX_UNAVAILABLE,
                            "no sandbox helper was named",
                        ));
                    }
                };
                let mut linux = linux
                    .reading([root.to_path_buf()])
                    .protecting(self.protect.iter().cloned())
                    .with_network(self.sandbox.network);
                match (self.sandbox.bubblewrap, crate::bwrap::find()) {
                    (Some(false), _) | (None, None) => {}
                    (_, Some(bwrap)) => linux = linux.with_bubblewrap(bwrap),
                    (Some(true), None) => {
                        return Err(AgentError::new(
                            codes::SANDBOX_UNAVAILABLE,
                            "the config asks for bubblewrap, which is not installed (apt-get install bubblewrap)",
                        ));
                    }
                }
                linux.check().await?;
                Ok(Arc::new(linux))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_container_backend_carries_no_host_path_but_a_literal_one() {
        let origin = Path::new("config.toml");
        let host = CommandsConfig::parse("[sandbox]\nenv_from = ['PATH']\n", origin).expect("ok");
        let container = CommandsConfig::parse(
            "[sandbox]\nbackend = 'container'\nimage = 'x'\nenv_from = ['PATH']\n",
            origin,
        )
        .expect("ok");
        assert_eq!(container.sandbox.image.as_deref(), Some("x"));
        if std::env::var_os("PATH").is_some() {
            assert!(host.env().contains_key("PATH"));
        }
        assert!(!container.env().contains_key("PATH"));
        let literal = CommandsConfig::parse(
            "[sandbox]\nbackend = 'container'\nimage = 'x'\nenv = { PATH = '/opt/bin:/bin' }\n",
            origin,
        )
        .expect("ok");
        assert_eq!(
            literal.env().get("PATH").map(String::as_str),
            Some("/opt/bin:/bin")
        );
    }

    #[tokio::test]
    async fn the_container_backend_without_an_image_says_what_is_missing() {
        let config =
            CommandsConfig::parse("[sandbox]\nbackend = 'container'\n", Path::new("c.toml"))
                .expect("parsed");
        let err = config
            .sandbox(Path::new("/tmp"), true, None)
            .await
            .expect_err("no image");
        assert_eq!(err.code, codes::SANDBOX_UNAVAILABLE);
        assert!(err.message.contains("image"), "{}", err.message);
    }
}
