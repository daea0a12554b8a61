//! The product's settings for a conversation: its words ([`Profile`],
//! [`Wording`]), how tools reach the model, the per-turn budgets and the
//! verification check.
//!
//! Not here: anything that runs; these are plain values the loop reads.

use std::time::{Duration, Instant};

use rein_wire::{AgentError, error::codes};

/// The product's words: its prompt, names and wording.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The product's name for its assistant.
    pub name: String,
    /// System prompt blocks, in order.
    pub system: Vec<String>,
    /// The model to call.
    pub model: String,
    /// The output limit per call.
    pub max_output_tokens: u32,
    /// How the model gets the tools.
    pub tools: ToolLoading,
    /// What rein itself says to the model, in the product's words.
    pub wording: Wording,
    /// How much the model reasons before it answers (`None`: its default).
    pub reasoning: Option<rein_wire::Reasoning>,
    /// Temperature and nucleus sampling for every call, the summary's too
    /// (each `None`: the provider's default).
    pub sampling: rein_wire::Sampling,
}

impl Profile {
    /// A profile for `model` under the assistant name `name`: no system
    /// prompt yet, 4,096 output tokens per call, tools loaded natively up
    /// to 16 (deferred beyond), rein's default wording.
    pub fn new(name: impl Into<String>, model: impl Into<String>) -> Self {
        Profile {
            name: name.into(),
            system: Vec::new(),
            model: model.into(),
            max_output_tokens: 4096,
            tools: ToolLoading::default(),
            wording: Wording::default(),
            reasoning: None,
            sampling: rein_wire::Sampling::default(),
        }
    }

    /// Ask the model to reason this much before it answers.
    pub fn with_reasoning(mut self, reasoning: rein_wire::Reasoning) -> Self {
        self.reasoning = Some(reasoning);
        self
    }

    /// Sample at this temperature (0 picks the likeliest token each time).
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.sampling.temperature = Some(temperature);
        self
    }

    /// Add a system prompt block.
    pub fn with_system(mut self, text: impl Into<String>) -> Self {
        self.system.push(text.into());
        self
    }
}

/// The sentences rein says to the model on the product's behalf. `{tool}`,
/// `{decision}`, `{command}` and `{report}` are filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wording {
    /// A call a person did not approve (denied, let expire, stopped).
    pub not_approved: String,
    /// The nudge when the model repeats a call without progress; `{asked}`
    /// becomes the person's words for the turn, quoted, and `{found}` the
    /// lines found in the files read as the turn's latest compaction keeps
    /// them (nothing without one). The call after it is asked for words
    /// (tool calls off for that call), so it should ask for an answer, not
    /// another approach.
    pub loop_nudge: String,
    /// A verification check that failed.
    pub check_failed: String,
    /// The header of the deferred tool catalog.
    pub tool_catalog: String,
    /// The header of the skills list.
    pub skills: String,
}

impl Default for Wording {
    fn default() -> Self {
        Wording {
            not_approved: "The person {decision} the call to `{tool}`. It was not run. Do not try to reach the same result another way; ask the person what they want instead.".into(),
            loop_nudge: "(rein) You have made the same call with the same arguments and got the same result three times. Do not make it again. The person asked:\n{asked}\n{found}Answer them now, in words, with what you have found, or say what stops you.".into(),
            check_failed: "(rein) The check `{command}` failed, so the task is not done yet:\n{report}\nFix the cause, then answer again.".into(),
            tool_catalog: "Tools: call load_tool with a name to get its arguments, then call_tool with the name and arguments.".into(),
            skills: "Skills: read one with read_skill when it applies to the task.".into(),
        }
    }
}

impl Wording {
    pub(crate) fn not_approved(&self, tool: &str, decision: &str) -> String {
        self.not_approved
            .replace("{tool}", tool)
            .replace("{decision}", decision)
    }
}

/// How tools reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolLoading {
    /// Every tool's full definition in every request.
    Native,
    /// The stable prefix lists the catalog (name and purpose, sorted); the
    /// model fetches a schema with `load_tool` and calls with `call_tool`.
    Deferred,
    /// Native up to this many tools, deferred beyond.
    Auto {
        /// The largest catalog given natively.
        max_native: usize,
    },
}

impl ToolLoading {
    /// Whether a catalog of `tools` tools is offered deferred.
    pub(crate) fn defers(self, tools: usize) -> bool {
        match self {
            ToolLoading::Native => false,
            ToolLoading::Deferred => true,
            ToolLoading::Auto { max_native } => tools > max_native,
        }
    }
}

impl Default for ToolLoading {
    fn default() -> Self {
        ToolLoading::Auto { max_native: 16 }
    }
}

/// Limits on one turn. Every one is finite by default except cost and
/// tokens, which have no sensible universal default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budgets {
    /// Model calls per turn.
    pub max_steps: u32,
    /// Tokens (prompt + output) per turn.
    pub max_tokens: Option<u64>,
    /// Cost per turn in micro-USD.
    pub max_cost_micro_usd: Option<u64>,
    /// Wall time per turn.
    pub max_wall: Duration,
}

impl Budgets {
    /// The budgets as `run.started` records them.
    pub(crate) fn recorded(&self) -> serde_json::Value {
        serde_json::json!({
            "max_steps": self.max_steps,
            "max_tokens": self.max_tokens,
            "max_cost_micro_usd": self.max_cost_micro_usd,
            "max_wall_s": self.max_wall.as_secs(),
        })
    }

    /// Which budget a turn has used up, if any (`steps`, `tokens`, `cost`,
    /// `wall_time`).
    pub(crate) fn exceeded(
        &self,
        steps: u32,
        tokens: u64,
        cost: u64,
        started: Instant,
    ) -> Option<&'static str> {
        if steps >= self.max_steps {
            return Some("steps");
        }
        if self.max_tokens.is_some_and(|max| tokens >= max) {
            return Some("tokens");
        }
        if self.max_cost_micro_usd.is_some_and(|max| cost >= max) {
            return Some("cost");
        }
        if started.elapsed() >= self.max_wall {
            return Some("wall_time");
        }
        None
    }
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            max_steps: 100,
            max_tokens: None,
            max_cost_micro_usd: None,
            max_wall: Duration::from_secs(30 * 60),
        }
    }
}

/// A command that must exit 0 for a turn to count as a success.
#[derive(Debug, Clone)]
pub struct Verification {
    /// The program and its arguments (run directly, not through a shell).
    pub command: Vec<String>,
    /// Where to run it.
    pub cwd: Option<std::path::PathBuf>,
    /// The exit code that passes (0 unless set).
    pub expected: i32,
    /// How many failed checks the model gets to fix before the turn fails.
    pub attempts: u32,
    /// How long one check may run.
    pub timeout: Duration,
    /// Where it runs (`None`: straight on the host, with rein's
    /// environment less its secrets — only for a command the product
    /// trusts).
    pub place: Option<std::sync::Arc<dyn crate::CheckPlace>>,
}

impl Verification {
    /// Run `command` (at most 2 fixes, 5 minutes per check).
    pub fn new(command: &[&str]) -> Self {
        Verification {
            command: command.iter().map(|s| (*s).to_owned()).collect(),
            cwd: None,
            expected: 0,
            attempts: 2,
            timeout: Duration::from_secs(300),
            place: None,
        }
    }

    /// This check's place — its sandbox, folder, environment and limits —
    /// running `command`, which someone other than the person sent (an
    /// HTTP client's turn, a stored graph's task): only in a place that
    /// confines, and only a command the person's policy lets run unasked.
    /// Nobody is there to be asked when a check runs, so what the policy
    /// would ask about is refused, saying why.
    pub fn for_command(&self, command: Vec<String>, expected: i32) -> Result<Self, AgentError> {
        let refused = |why: String| AgentError::new(codes::COMMAND_FORBIDDEN, why);
        let Some(place) = self.place.as_ref().filter(|place| place.confines()) else {
            return Err(refused(
                "a check someone else sends runs only in a sandbox that confines it; this agent's checks run unconfined (or it has none)".into(),
            ));
        };
        if let Err(why) = place.runs_unasked(&command) {
            return Err(refused(format!(
                "`{}` is not a command the person's policy runs unasked ({why}); a check someone else sends runs only what the policy allows",
                command.join(" "),
            )));
        }
        let mut check = self.clone();
        check.command = command;
        check.expected = expected;
        Ok(check)
    }

    /// Run it in `place` (for a product with a sandbox, the one its
    /// `run_command` uses: `rein::SandboxChecks`).
    pub fn in_place(mut self, place: std::sync::Arc<dyn crate::CheckPlace>) -> Self {
        self.place = Some(place);
        self
    }
}

// The loop rule (how many repeats nudge, how many stop) is `rein_wire::loops`,
// shared with the agents rein hosts.

/// What a turn has used of its budgets.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Spent {
    pub(crate) steps: u32,
    pub(crate) tokens: u64,
    pub(crate) cost: u64,
}

impl Spent {
    pub(crate) fn add(&mut self, other: Spent) {
        self.steps = self.steps.saturating_add(other.steps);
        self.tokens = self.tokens.saturating_add(other.tokens);
        self.cost = self.cost.saturating_add(other.cost);
    }
}
