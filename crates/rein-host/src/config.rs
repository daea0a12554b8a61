//! The agents a person configured: `[agents.NAME]` tables in rein's config
//! file (`REIN_HOME/config.toml`), checked whole at load.
//!
//! ```toml
//! [agents.reviewer]
//! kind = "claude"                     # claude | codex | acp | tui
//! command = "claude"
//! args = ["-p", "--output-format", "stream-json", "--verbose"]
//! env_from = ["HOME", "ANTHROPIC_API_KEY"]   # copied from rein's environment by name
//! env = { CLAUDE_CODE_MAX_OUTPUT_TOKENS = "8000" }   # literal values
//! timeout_secs = 1800                 # the run's limit (at most a day)
//! max_line_bytes = 4194304            # a longer stdout line is skipped
//! permission_mode = "acceptEdits"     # claude only: its own mode decides
//! ```
//!
//! A `claude` entry with no `permission_mode` (and no permission argument
//! of its own) asks rein's person: each permission question Claude Code
//! has becomes a rein approval (`claude::permission`).
//!
//! A hosted child gets exactly `PATH`, `HOME`, `LANG`, `TERM`, what its entry's
//! `env` and `env_from` name, and nothing else of rein's. Without an entry,
//! `rein agents run claude|codex|acp|tui` takes the command after `--`.
//!
//! Not here: running anything (`driver.rs`, `acp.rs`, `pty.rs`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use rein_wire::{AgentError, error::codes};
use serde::Deserialize;

use crate::child::{DEFAULT_MAX_LINE, DEFAULT_TIMEOUT};

/// The longest a run's limit may be set to.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// The largest stdout line bound a config may set.
pub const MAX_LINE_LIMIT: usize = 64 * 1024 * 1024;

/// Variables every hosted child gets (when set): what a program needs to
/// run at all, none of them a secret.
pub const BASE_ENV: &[&str] = &["PATH", "HOME", "LANG", "TERM"];

/// How rein talks to a hosted agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    /// `claude -p --output-format stream-json --verbose`.
    Claude,
    /// `codex exec --json`.
    Codex,
    /// The Agent Client Protocol on the child's stdio.
    Acp,
    /// The program's own terminal UI, in a PTY.
    Tui,
}

impl AgentKind {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Acp => "acp",
            AgentKind::Tui => "tui",
        }
    }

    /// The kind a bare name stands for (`claude`, `codex`, `acp`, `tui`).
    pub fn named(name: &str) -> Option<AgentKind> {
        [
            AgentKind::Claude,
            AgentKind::Codex,
            AgentKind::Acp,
            AgentKind::Tui,
        ]
        .into_iter()
        .find(|k| k.as_str() == name)
    }
}

/// One configured agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentEntry {
    /// How it is driven.
    pub kind: AgentKind,
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// Literal variables.
    pub env: BTreeMap<String, String>,
    /// Variables copied from rein's environment, by name.
    pub env_from: Vec<String>,
    /// The run's limit.
    pub timeout: Duration,
    /// The stdout line bound.
    pub max_line: usize,
}

impl AgentEntry {
    /// The program this entry runs, in `cwd`: its arguments with `prompt`
    /// last when given; the base environment, the entry's, and the
    /// variables `more` names (copied from rein's); the entry's limits.
    pub fn host_spec(
        &self,
        cwd: &Path,
        prompt: Option<&str>,
        more: &[String],
    ) -> crate::child::HostSpec {
        let mut argv = self.argv.clone();
        argv.extend(prompt.map(str::to_owned));
        let mut spec = crate::child::HostSpec::new(argv, cwd.to_path_buf())
            .env_from(BASE_ENV.iter().copied())
            .env_from(self.env_from.iter().map(String::as_str))
            .env_from(more.iter().map(String::as_str));
        spec.env.extend(self.env.clone());
        spec.timeout = self.timeout;
        spec.max_line = self.max_line;
        spec
    }

    /// Whether it is driven through `codex app-server` (its arguments name
    /// it): its request goes through the protocol, and its approvals are
    /// asked of rein's person (`codex_app`).
    pub fn speaks_app_server(&self) -> bool {
        self.kind == AgentKind::Codex && self.argv.iter().any(|a| a == "app-server")
    }

    /// Whether a run of it hears words said mid-run: a `claude` entry whose
    /// arguments do not set its input format; its request and later words
    /// go as stream-json messages on its stdin (`heard`).
    pub fn hears_rein(&self) -> bool {
        self.kind == AgentKind::Claude
            && !self
                .argv
                .iter()
                .any(|a| a == "--input-format" || a.starts_with("--input-format="))
    }

    /// The spec of a run asked `prompt`, with the request the driver sends
    /// on the program's stdin when it hears words (`Joined::hears`);
    /// otherwise the prompt is its last argument.
    pub fn run_spec(
        &self,
        cwd: &Path,
        prompt: Option<&str>,
        more: &[String],
    ) -> (crate::child::HostSpec, Option<String>) {
        if self.hears_rein()
            && let Some(prompt) = prompt
        {
            let mut spec = self.host_spec(cwd, None, more);
            spec.argv
                .extend(["--input-format".to_owned(), "stream-json".to_owned()]);
            return (spec, Some(prompt.to_owned()));
        }
        (self.host_spec(cwd, prompt, more), None)
    }

    /// Whether a run of it asks rein's person its permission questions: a
    /// `claude` entry whose arguments do not decide them already (a
    /// `permission_mode`, `--permission-prompt-tool`, …).
    pub fn asks_rein(&self) -> bool {
        self.kind == AgentKind::Claude
            && !self.argv.iter().any(|a| {
                crate::claude::permission::DECIDING_ARGS
                    .iter()
                    .any(|d| a == d || a.starts_with(&format!("{d}=")))
            })
    }

    /// The program's file name, as a run records it.
    pub fn program(&self) -> String {
        self.argv
            .first()
            .and_then(|p| Path::new(p).file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// The configured agents, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentsConfig {
    /// Each agent.
    pub agents: BTreeMap<String, AgentEntry>,
}

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    agents: BTreeMap<String, toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    kind: AgentKind,
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    env_from: Vec<String>,
    timeout_secs: Option<u64>,
    max_line_bytes: Option<usize>,
    permission_mode: Option<String>,
}

/// Claude Code's permission modes (`--permission-mode`).
pub const PERMISSION_MODES: &[&str] = &[
    "acceptEdits",
    "auto",
    "bypassPermissions",
    "manual",
    "dontAsk",
    "plan",
];

fn invalid(message: String) -> AgentError {
    AgentError::new(codes::AGENT_CONFIG_INVALID, message)
}

impl AgentsConfig {
    /// The config at `path`; a missing file is an empty config.
    pub fn load(path: &Path) -> Result<AgentsConfig, AgentError> {
        match std::fs::read_to_string(path) {
            Ok(text) => AgentsConfig::parse(&text)
                .map_err(|e| invalid(format!("{}: {}", path.display(), e.message))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(AgentsConfig::default()),
            Err(e) => Err(invalid(format!("{}: {e}", path.display()))),
        }
    }

    /// The config in `text` (TOML); other sections are not this module's,
    /// and neither are rein's own agents (`kind = "rein"`, or no kind:
    /// `rein-config` reads those).
    pub fn parse(text: &str) -> Result<AgentsConfig, AgentError> {
        let file: File = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let mut agents = BTreeMap::new();
        for (name, value) in file.agents {
            let kind = value.get("kind").and_then(toml::Value::as_str);
            if kind.is_none_or(|k| k == "rein") {
                continue;
            }
            let entry = Entry::deserialize(value)
                .map_err(|e| invalid(format!("agent `{name}`: {}", e.message())))?;
            let checked = entry.check(&name)?;
            agents.insert(name, checked);
        }
        Ok(AgentsConfig { agents })
    }
}

impl Entry {
    fn check(self, name: &str) -> Result<AgentEntry, AgentError> {
        let bad = |what: &str| invalid(format!("agent `{name}`: {what}"));
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(bad("a name is letters, digits, `-` and `_`"));
        }
        if self.command.trim().is_empty() {
            return Err(bad("`command` is empty"));
        }
        for var in self.env.keys().chain(self.env_from.iter()) {
            if var.is_empty() || var.contains('=') || var.contains('\0') {
                return Err(bad(&format!("`{var}` is not a variable name")));
            }
        }
        let timeout = match self.timeout_secs {
            None => DEFAULT_TIMEOUT,
            Some(0) => return Err(bad("`timeout_secs` must be above 0")),
            Some(s) if Duration::from_secs(s) > MAX_TIMEOUT => {
                return Err(bad("`timeout_secs` is at most a day (86400)"));
            }
            Some(s) => Duration::from_secs(s),
        };
        let max_line = match self.max_line_bytes {
            None => DEFAULT_MAX_LINE,
            Some(n) if (1024..=MAX_LINE_LIMIT).contains(&n) => n,
            Some(_) => return Err(bad("`max_line_bytes` is between 1024 and 67108864")),
        };
        let mut argv = vec![self.command];
        argv.extend(self.args);
        if let Some(mode) = self.permission_mode {
            if self.kind != AgentKind::Claude {
                return Err(bad("`permission_mode` is for `claude` entries"));
            }
            if !PERMISSION_MODES.contains(&mode.as_str()) {
                return Err(bad(&format!(
                    "`permission_mode` is one of {}",
                    PERMISSION_MODES.join(", ")
                )));
            }
            argv.extend(["--permission-mode".to_owned(), mode]);
        }
        Ok(AgentEntry {
            kind: self.kind,
            argv,
            env: self.env,
            env_from: self.env_from,
            timeout,
            max_line,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn an_entry_is_checked_whole() {
        let config = AgentsConfig::parse(
            "[mcp.servers.x]\ncommand = \"y\"\n\n[agents.reviewer]\nkind = \"claude\"\ncommand = \"claude\"\nargs = [\"-p\"]\nenv_from = [\"HOME\"]\ntimeout_secs = 60\n",
        )
        .unwrap();
        let entry = &config.agents["reviewer"];
        assert_eq!(entry.kind, AgentKind::Claude);
        assert_eq!(entry.argv, ["claude", "-p"]);
        assert_eq!(entry.timeout, Duration::from_secs(60));
        for (bad, says) in [
            (
                "[agents.a]\nkind = \"gpt\"\ncommand = \"x\"",
                "unknown variant",
            ),
            (
                "[agents.a]\nkind = \"acp\"\ncommand = \"x\"\nshell = true",
                "unknown field",
            ),
            (
                "[agents.a]\nkind = \"acp\"\ncommand = \"  \"",
                "`command` is empty",
            ),
            (
                "[agents.a]\nkind = \"acp\"\ncommand = \"x\"\ntimeout_secs = 0",
                "above 0",
            ),
            (
                "[agents.a]\nkind = \"acp\"\ncommand = \"x\"\nmax_line_bytes = 10",
                "between 1024",
            ),
            (
                "[agents.a]\nkind = \"acp\"\ncommand = \"x\"\nenv_from = [\"A=B\"]",
                "not a variable name",
            ),
            (
                "[agents.\"a b\"]\nkind = \"acp\"\ncommand = \"x\"",
                "a name is",
            ),
        ] {
            let err = AgentsConfig::parse(bad).unwrap_err();
            assert_eq!(err.code, codes::AGENT_CONFIG_INVALID);
            assert!(err.message.contains(says), "{bad}: {}", err.message);
        }
    }

    #[test]
    fn a_claude_entry_asks_rein_unless_its_mode_or_arguments_decide() {
        let parsed = |text: &str| AgentsConfig::parse(text).map(|c| c.agents["a"].clone());
        let asks = parsed("[agents.a]\nkind = \"claude\"\ncommand = \"claude\"\n");
        assert!(asks.is_ok_and(|e| e.asks_rein()));
        let moded = parsed(
            "[agents.a]\nkind = \"claude\"\ncommand = \"claude\"\npermission_mode = \"acceptEdits\"\n",
        );
        let moded = moded.unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(moded.argv, ["claude", "--permission-mode", "acceptEdits"]);
        assert!(!moded.asks_rein());
        let own = parsed(
            "[agents.a]\nkind = \"claude\"\ncommand = \"claude\"\nargs = [\"--permission-prompt-tool=mcp__x__y\"]\n",
        );
        assert!(own.is_ok_and(|e| !e.asks_rein()));
        for (bad, says) in [
            (
                "kind = \"claude\"\ncommand = \"c\"\npermission_mode = \"yolo\"",
                "one of",
            ),
            (
                "kind = \"codex\"\ncommand = \"c\"\npermission_mode = \"plan\"",
                "for `claude`",
            ),
        ] {
            let err = parsed(&format!("[agents.a]\n{bad}\n")).unwrap_err();
            assert!(err.message.contains(says), "{}", err.message);
        }
    }
}
