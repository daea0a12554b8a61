//! Hosted sessions as every surface names them: what renders in one, who
//! holds its input, and a live session as a list shows it. The session
//! host (`rein-host`) keeps them; the CLI, the API and the page show them.
//!
//! Not here: the rules that change them (`rein-host`'s session host).

use serde::{Deserialize, Serialize};

/// What renders in a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RenderMode {
    /// The agent's own terminal UI, in the PTY.
    NativeTui,
    /// The agent speaks ACP on its own channel; its messages are rendered.
    Acp,
    /// A CLI's JSON stream (`claude -p`, `codex exec --json`) on its own
    /// channel; its progress and answer are rendered.
    Stream,
}

impl RenderMode {
    /// Its name, as it is written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            RenderMode::NativeTui => "native-tui",
            RenderMode::Acp => "acp",
            RenderMode::Stream => "stream",
        }
    }
}

/// Who may write into the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "holder", rename_all = "snake_case")]
pub enum InputHolder {
    /// The agent's driver (no person is typing).
    Agent,
    /// A person took it over.
    Person {
        /// The viewer who took it.
        viewer: String,
        /// Takeovers of this session so far.
        interventions: u32,
    },
}

/// A live session as a list shows it: what renders, since when, who
/// watches and who holds the input. Names and counts only, never output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listed {
    /// The session (the hosted run's session id).
    pub session: String,
    /// What renders.
    pub mode: RenderMode,
    /// Whether it can be switched to its other mode (a protocol stream to
    /// the program's own terminal UI and back; never both at once).
    #[serde(default)]
    pub switchable: bool,
    /// When it was opened, in milliseconds since the Unix epoch.
    pub opened_at_ms: i64,
    /// The viewers watching it now, by name.
    pub viewers: Vec<String>,
    /// Who holds the input.
    #[serde(flatten)]
    pub holder: InputHolder,
}
