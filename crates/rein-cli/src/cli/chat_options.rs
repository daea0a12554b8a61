//! `rein chat`'s flags (`ChatOptions`) and the agent definition they set
//! over the config files' (`ChatOptions::flags`).
//!
//! Not here: running the chat (`chat.rs`).

use std::path::PathBuf;

use super::provider::ProviderArgs;

/// What the person asked for on the command line (`rein chat`'s flags).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ChatOptions {
    /// The model provider.
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Ask one question, print the answer and exit.
    #[arg(short, long)]
    pub prompt: Option<String>,
    /// The system prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// Continue this session.
    #[arg(long, visible_alias = "resume", value_name = "ID")]
    pub session: Option<String>,
    /// The folder the file tools work in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// How much the model reasons: off, low, medium, high, or a number
    /// of tokens (default: the model's own).
    #[arg(long, value_name = "LEVEL")]
    pub reasoning: Option<rein::wire::Reasoning>,
    /// The sampling temperature, 0 to 2 (default: the provider's).
    #[arg(long, value_name = "T")]
    pub temperature: Option<f64>,
    /// Show the model's reasoning as it comes (dimmed, on the status
    /// stream; never part of the answer).
    #[arg(long)]
    pub show_reasoning: bool,
    /// Let the model hand tasks to sub-agents (`delegate`), side by side;
    /// their writes are asked here like the main agent's.
    #[arg(long)]
    pub subagents: bool,
    /// Offer an MCP server's tools (a name configured in
    /// `REIN_HOME/config.toml`; repeat for more). Servers start in the
    /// background and join at a later turn when slow.
    #[arg(long, value_name = "NAME")]
    pub mcp: Vec<String>,
    /// Offer `run_command`: commands run in the sandbox configured in
    /// `REIN_HOME/config.toml` (`[sandbox]`, Linux isolation by default),
    /// decided by its command policy (`[commands]`, or `--commands FILE`).
    #[arg(long)]
    pub allow_commands: bool,
    /// The command policy file (see examples/commands.toml).
    #[arg(long, value_name = "FILE", requires = "allow_commands")]
    pub commands: Option<PathBuf>,
    /// Offer the skills in this folder (markdown files with front matter).
    #[arg(long, value_name = "DIR")]
    pub skills: Option<PathBuf>,
    /// Run this named agent (`[agents.NAME]` in a config file; `rein
    /// config show --agent NAME` prints what it runs with).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// A check each turn must pass: a command (split on spaces, no shell)
    /// that must exit 0 (or `--verify-exit`) in the root, or the model is
    /// told why and goes on.
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
    /// The exit code `--verify`'s command must give (default 0).
    #[arg(
        long,
        value_name = "CODE",
        requires = "verify",
        allow_negative_numbers = true
    )]
    pub verify_exit: Option<i32>,
    /// Where rein's config lives (set by `rein` from `--home`).
    #[arg(skip)]
    pub home: Option<PathBuf>,
}

impl ChatOptions {
    /// The definition these flags set (over the config files').
    pub fn flags(&self) -> rein::config::AgentSpec {
        let provider = &self.provider;
        let mut tools = rein::config::ToolsSpec::default();
        if self.allow_commands {
            tools.commands = Some(true);
        }
        if !self.mcp.is_empty() {
            tools.mcp = Some(self.mcp.clone());
        }
        tools.skills = self.skills.as_ref().map(|d| d.display().to_string());
        rein::config::AgentSpec {
            reasoning: self.reasoning.map(|r| r.to_string()),
            temperature: self.temperature,
            instructions: self.system.clone(),
            tools: (tools != rein::config::ToolsSpec::default()).then_some(tools),
            subagents: self.subagents.then(|| rein::config::SubagentsSpec {
                enabled: Some(true),
                ..rein::config::SubagentsSpec::default()
            }),
            verify: self.verify.as_ref().map(|line| rein::config::VerifySpec {
                command: line.split_whitespace().map(str::to_owned).collect(),
                expected_exit: self.verify_exit,
                ..rein::config::VerifySpec::default()
            }),
            ..provider.spec()
        }
    }
}
