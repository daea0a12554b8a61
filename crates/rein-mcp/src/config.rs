//! The MCP servers a person configured: `[mcp.servers.NAME]` tables in
//! rein's config file (`REIN_HOME/config.toml`), checked whole at load.
//!
//! ```toml
//! [mcp.servers.everything]
//! command = "node"
//! args = ["server/index.js", "stdio"]
//! env = { LOG_LEVEL = "warn" }        # literal values
//! env_from = ["HOME"]                 # copied from rein's environment by name
//! default_class = "ask"               # read | ask | destructive
//! timeout_secs = 60                   # one call
//! start_timeout_secs = 30             # initialize + the first tools/list
//! deferred = true                     # offer its tools by name, loaded on use
//! [mcp.servers.everything.tools]
//! get-env = "destructive"             # a class per tool, over the server's hints
//!
//! [mcp.servers.remote]
//! url = "http://127.0.0.1:8931/mcp"   # streamable HTTP
//! bearer_env = "REMOTE_MCP_TOKEN"     # the token's variable, never the token
//! ```
//!
//! A child process gets only the environment its entry names — never
//! rein's own (so never a provider key), and naming a provider key is a
//! config error. Not here: starting anything (`server.rs`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use rein_wire::permission::PermissionClass;
use rein_wire::{AgentError, error::codes};
use serde::Deserialize;

/// The config file's name inside `REIN_HOME`.
pub const CONFIG_FILE: &str = "config.toml";

/// Variables a server is never given, whatever its entry says.
pub use rein_wire::env::SECRET_VARS as PROTECTED_VARS;

const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a config may set a call or start timeout to.
const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP over its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its whole environment: the literal values and the variables
        /// copied by name (resolved when it starts).
        env: BTreeMap<String, String>,
        /// Variables copied from rein's environment, by name.
        env_from: Vec<String>,
        /// Its working directory (rein's when absent).
        cwd: Option<String>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// The endpoint.
        url: String,
        /// The variable holding the bearer token, if the server wants one.
        bearer_env: Option<String>,
    },
}

/// How a tool's calls are classed when nothing more specific says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClassName {
    /// Reads only: runs without asking.
    Read,
    /// Waits for a person (rein's `write` class).
    Ask,
    /// Cannot be undone: waits for a person.
    Destructive,
}

impl ClassName {
    /// rein's class.
    pub fn class(self) -> PermissionClass {
        match self {
            ClassName::Read => PermissionClass::Read,
            ClassName::Ask => PermissionClass::Write,
            ClassName::Destructive => PermissionClass::Destructive,
        }
    }
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Its name: the prefix of its tools' names.
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// The class of a tool whose hints say neither read-only nor
    /// destructive.
    pub default_class: ClassName,
    /// Classes per tool (the server's own names), over its hints.
    pub tools: BTreeMap<String, ClassName>,
    /// The longest one call may take.
    pub call_timeout: Duration,
    /// The longest start (initialize and the first list) may take.
    pub start_timeout: Duration,
    /// Whether its tools are offered deferred (named in a catalog, their
    /// definitions loaded when the model asks): the default, since a
    /// server may bring many.
    pub deferred: bool,
}

/// Every configured server, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpConfig {
    /// The servers.
    pub servers: BTreeMap<String, ServerConfig>,
}

/// The file as the MCP part reads it: other tables (`[sandbox]`,
/// `[commands]`) belong to other parts.
#[derive(Deserialize)]
struct File {
    #[serde(default)]
    mcp: Option<Section>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Section {
    #[serde(default)]
    servers: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    env_from: Vec<String>,
    cwd: Option<String>,
    url: Option<String>,
    bearer_env: Option<String>,
    default_class: Option<ClassName>,
    #[serde(default)]
    tools: BTreeMap<String, ClassName>,
    timeout_secs: Option<u64>,
    start_timeout_secs: Option<u64>,
    deferred: Option<bool>,
}

impl McpConfig {
    /// The config at `path`; a missing file is an empty config.
    pub fn load(path: &Path) -> Result<McpConfig, AgentError> {
        match std::fs::read_to_string(path) {
            Ok(text) => McpConfig::parse(&text).map_err(|err| {
                AgentError::new(err.code, format!("{}: {}", path.display(), err.message))
            }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(McpConfig::default()),
            Err(err) => Err(AgentError::new(
                codes::MCP_CONFIG_INVALID,
                format!("{}: {err}", path.display()),
            )),
        }
    }

    /// The config in `text` (TOML).
    pub fn parse(text: &str) -> Result<McpConfig, AgentError> {
        let file: File = toml::from_str(text)
            .map_err(|err| AgentError::new(codes::MCP_CONFIG_INVALID, err.to_string()))?;
        let mut servers = BTreeMap::new();
        for (name, entry) in file.mcp.map(|s| s.servers).unwrap_or_default() {
            let server = entry.check(&name)?;
            servers.insert(name, server);
        }
        Ok(McpConfig { servers })
    }

    /// Only the servers named (each must exist).
    pub fn only(&self, names: &[String]) -> Result<McpConfig, AgentError> {
        let mut servers = BTreeMap::new();
        for name in names {
            let server = self.servers.get(name).ok_or_else(|| {
                let known: Vec<&str> = self.servers.keys().map(String::as_str).collect();
                AgentError::new(
                    codes::MCP_CONFIG_INVALID,
                    format!(
                        "no MCP server `{name}` is configured (configured: {})",
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                )
            })?;
            servers.insert(name.clone(), server.clone());
        }
        Ok(McpConfig { servers })
    }
}

fn bad(name: &str, why: impl std::fmt::Display) -> AgentError {
    AgentError::new(
        codes::MCP_CONFIG_INVALID,
        format!("MCP server `{name}`: {why}"),
    )
}

fn seconds(
    name: &str,
    field: &str,
    value: Option<u64>,
    default: Duration,
) -> Result<Duration, AgentError> {
    match value {
        None => Ok(default),
        Some(0) => Err(bad(name, format!("`{field}` must be at least 1"))),
        Some(s) if Duration::from_secs(s) > MAX_TIMEOUT => Err(bad(
            name,
            format!("`{field}` is at most {}", MAX_TIMEOUT.as_secs()),
        )),
        Some(s) => Ok(Duration::from_secs(s)),
    }
}

impl Entry {
    fn check(self, name: &str) -> Result<ServerConfig, AgentError> {
        let fine = !name.is_empty()
            && name.len() <= 32
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
            && !name.contains("__");
        if !fine {
            return Err(bad(
                name,
                "a server's name is 1–32 of a-z, 0-9, `-`, `_` (no `__`: it joins server and tool)",
            ));
        }
        for var in self
            .env
            .keys()
            .chain(&self.env_from)
            .chain(&self.bearer_env)
        {
            if PROTECTED_VARS.contains(&var.as_str()) {
                return Err(bad(
                    name,
                    format!("`{var}` is a key of rein's own; it is never given to an MCP server"),
                ));
            }
        }
        let transport = match (self.command, self.url) {
            (Some(command), None) => {
                if self.bearer_env.is_some() {
                    return Err(bad(name, "`bearer_env` is for a `url` server"));
                }
                Transport::Stdio {
                    command,
                    args: self.args,
                    env: self.env,
                    env_from: self.env_from,
                    cwd: self.cwd,
                }
            }
            (None, Some(url)) => {
                if !self.args.is_empty()
                    || !self.env.is_empty()
                    || !self.env_from.is_empty()
                    || self.cwd.is_some()
                {
                    return Err(bad(
                        name,
                        "`args`, `env`, `env_from` and `cwd` are for a `command` server",
                    ));
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(bad(
                        name,
                        format!("`url` must be http:// or https://, not `{url}`"),
                    ));
                }
                Transport::Http {
                    url,
                    bearer_env: self.bearer_env,
                }
            }
            (Some(_), Some(_)) => return Err(bad(name, "give `command` or `url`, not both")),
            (None, None) => {
                return Err(bad(
                    name,
                    "give `command` (stdio) or `url` (streamable HTTP)",
                ));
            }
        };
        Ok(ServerConfig {
            name: name.to_owned(),
            transport,
            default_class: self.default_class.unwrap_or(ClassName::Ask),
            tools: self.tools,
            call_timeout: seconds(
                name,
                "timeout_secs",
                self.timeout_secs,
                DEFAULT_CALL_TIMEOUT,
            )?,
            start_timeout: seconds(
                name,
                "start_timeout_secs",
                self.start_timeout_secs,
                DEFAULT_START_TIMEOUT,
            )?,
            deferred: self.deferred.unwrap_or(true),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stdio_and_an_http_server_load() {
        let config = McpConfig::parse(
            r#"
            [mcp.servers.ev]
            command = "node"
            args = ["index.js", "stdio"]
            env_from = ["HOME"]
            [mcp.servers.ev.tools]
            get-env = "destructive"
            [mcp.servers.remote]
            url = "http://127.0.0.1:1/mcp"
            bearer_env = "T"
            default_class = "read"
            "#,
        )
        .expect("valid");
        let ev = &config.servers["ev"];
        assert_eq!(ev.default_class, ClassName::Ask);
        assert_eq!(ev.tools["get-env"], ClassName::Destructive);
        assert!(matches!(ev.transport, Transport::Stdio { .. }));
        assert_eq!(config.servers["remote"].default_class, ClassName::Read);
    }

    #[test]
    fn bad_entries_are_refused_with_the_reason() {
        for (text, why) in [
            ("[mcp.servers.a]\n", "give `command`"),
            ("[mcp.servers.a]\ncommand='x'\nurl='http://h'\n", "not both"),
            (
                "[mcp.servers.a]\ncommand='x'\nenv_from=['ANTHROPIC_API_KEY']\n",
                "never given",
            ),
            (
                "[mcp.servers.a]\ncommand='x'\nenv={OPENAI_API_KEY='k'}\n",
                "never given",
            ),
            (
                "[mcp.servers.a]\nurl='http://h/mcp'\nbearer_env='OPENAI_API_KEY'\n",
                "never given",
            ),
            // The surfaces' tokens and the store's password are rein's too.
            (
                "[mcp.servers.a]\nurl='http://h/mcp'\nbearer_env='REIN_MCP_TOKEN'\n",
                "never given",
            ),
            (
                "[mcp.servers.a]\ncommand='x'\nenv_from=['PGPASSWORD']\n",
                "never given",
            ),
            ("[mcp.servers.A]\ncommand='x'\n", "a server's name"),
            ("[mcp.servers.a__b]\ncommand='x'\n", "a server's name"),
            ("[mcp.servers.a]\nurl='ftp://h'\n", "http://"),
            (
                "[mcp.servers.a]\ncommand='x'\ntimeout_secs=0\n",
                "at least 1",
            ),
            (
                "[mcp.servers.a]\ncommand='x'\ncomand='y'\n",
                "unknown field",
            ),
            (
                "[mcp.servers.a]\ncommand='x'\ndefault_class='maybe'\n",
                "unknown variant",
            ),
        ] {
            let err = McpConfig::parse(text).expect_err(text);
            assert_eq!(err.code, codes::MCP_CONFIG_INVALID);
            assert!(err.message.contains(why), "{text}: {}", err.message);
        }
    }

    #[test]
    fn only_names_what_exists() {
        let config = McpConfig::parse("[mcp.servers.a]\ncommand='x'\n").expect("valid");
        assert_eq!(config.only(&["a".into()]).expect("a").servers.len(), 1);
        let err = config.only(&["b".into()]).expect_err("b");
        assert!(err.message.contains("configured: a"), "{}", err.message);
    }
}
