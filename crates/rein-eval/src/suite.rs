//! The eval suite format: TOML (or JSON) files of cases.
//!
//! A case is one conversation: the files the tool backend starts with, the
//! person's turns (or a structured question), the answers a simulated person
//! gives when asked to approve, the offline model's rules, and the checks.
//! Unknown fields are refused, so a misspelt check never silently passes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rein_testing::Rule;
use serde::Deserialize;
use serde_json::Value;

/// A file of cases.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile {
    /// What the suite is about.
    #[serde(default)]
    pub about: String,
    /// Its cases.
    #[serde(rename = "case", default)]
    pub cases: Vec<Case>,
}

/// One eval case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// A unique name (within all suites).
    pub name: String,
    /// The area it covers (`loop`, `approvals`, `offload`, ...).
    #[serde(default)]
    pub covers: String,
    /// Run it against a real provider too (some cases only make sense
    /// against the scripted model: a simulated cache, a tiny window).
    #[serde(default = "yes")]
    pub real: bool,
    /// The product's system prompt.
    #[serde(default = "default_system")]
    pub system: String,
    /// The tool backend scenario.
    #[serde(default)]
    pub backend: Backend,
    /// Whether the model may hand tasks to sub-agents (`delegate`).
    #[serde(default)]
    pub subagents: bool,
    /// Whether sub-agents may write (each write asked of the person):
    /// `false` gives read-only sub-agents.
    #[serde(default = "yes")]
    pub subagent_writes: bool,
    /// How tools reach the model: `native` or `deferred`.
    #[serde(default = "native")]
    pub tools: String,
    /// The reasoning asked for: `off`, `low`, `medium`, `high` or a token
    /// budget (default: none asked).
    #[serde(default)]
    pub reasoning: Option<String>,
    /// The person's messages, one turn each.
    #[serde(default)]
    pub turns: Vec<String>,
    /// A task graph (the TOML of `rein run`) run instead of turns: each
    /// task a conversation; the outcome is the graph's (`succeeded`,
    /// `failed`, `cancelled`), the answer its last tasks' answers.
    #[serde(default)]
    pub graph: Option<String>,
    /// A structured question asked after the turns.
    #[serde(default)]
    pub ask: Option<Ask>,
    /// The simulated person's answers to approvals, in order: `yes`
    /// (this call), `always` (this tool for the conversation), `no`.
    #[serde(default)]
    pub approvals: Vec<String>,
    /// What the simulated person answers once `approvals` runs out (a
    /// real model asks a varying number of times): `yes`, `no`, or none —
    /// the call waits. At most [`MORE_ANSWERS`] more asks are answered.
    #[serde(default)]
    pub approvals_after: Option<String>,
    /// Limits and windows.
    #[serde(default)]
    pub limits: Limits,
    /// Long-term memory: the agent remembers in a scope that outlives
    /// its sessions (none: no memory).
    #[serde(default)]
    pub memory: Option<MemoryCase>,
    /// The offline model.
    #[serde(default)]
    pub model: ScriptedModel,
    /// What must hold afterwards.
    #[serde(default)]
    pub expect: Expect,
}

/// A case's long-term memory: the `remember`, `recall` and `forget` tools
/// over an in-memory store and the scope's pinned items in the prompt, as
/// an agent definition's `[memory]` gives them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryCase {
    /// The scope the agent remembers in (default `project:eval`).
    #[serde(default)]
    pub scope: Option<String>,
    /// Turns (by index, from 0) that start a new session: the memory
    /// stays, the conversation does not.
    #[serde(default)]
    pub new_session_at: Vec<usize>,
    /// Items kept before the case starts (by a person).
    #[serde(default)]
    pub items: Vec<SeedItem>,
    /// Each `remember` is asked of the person (default: run and shown).
    #[serde(default)]
    pub ask: bool,
}

/// An item kept before a case starts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedItem {
    /// Its id, for a turn to name (default: a fresh one).
    #[serde(default)]
    pub id: Option<String>,
    /// Its text.
    pub text: String,
    /// In every prompt.
    #[serde(default)]
    pub pinned: bool,
    /// Another scope than the case's.
    #[serde(default)]
    pub scope: Option<String>,
}

/// How many asks past the scripted answers `approvals_after` answers.
pub const MORE_ANSWERS: usize = 10;

/// The simulated person's answers, in order: the scripted ones, then
/// `approvals_after` up to [`MORE_ANSWERS`] times.
pub fn answers_of(case: &Case) -> std::collections::VecDeque<String> {
    let more = case
        .approvals_after
        .iter()
        .cycle()
        .take(if case.approvals_after.is_some() {
            MORE_ANSWERS
        } else {
            0
        });
    case.approvals.iter().chain(more).cloned().collect()
}

fn yes() -> bool {
    true
}

fn native() -> String {
    "native".into()
}

fn default_system() -> String {
    "You are a careful assistant working on a small software project. Use the tools to look before you answer. Call a tool once for each thing you need; when its result answers the question, answer with it instead of calling again. Be brief.".into()
}

/// The tool backend a case runs against.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backend {
    /// The project's files (path → content) for the reference backend.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Generated files: this many `f{i}.txt` of about `generated_bytes`.
    #[serde(default)]
    pub generated: usize,
    /// The size of each generated file.
    #[serde(default = "generated_bytes")]
    pub generated_bytes: usize,
    /// Each generated file ends by naming the next (`Next: read
    /// f{i+1}.txt.`; the last says it is the last): a trail a small model
    /// can follow one read at a time.
    #[serde(default)]
    pub generated_trail: bool,
    /// The files in a real folder under rein's own file tools (read before
    /// write, atomic, edits that must match), instead of the reference
    /// backend in memory.
    #[serde(default)]
    pub folder: bool,
    /// `run_command` over the folder too (needs `folder`), in rein's Linux
    /// sandbox writing only in the folder, every command asked (the
    /// case's person answers), `PATH` its whole environment: what
    /// `rein chat --allow-commands` gives a model.
    #[serde(default)]
    pub commands: bool,
}

fn generated_bytes() -> usize {
    1_000
}

/// A structured question.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ask {
    /// The question.
    pub prompt: String,
    /// The JSON schema the answer must follow.
    pub schema: Value,
}

/// Limits of the case's conversation.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Model calls per turn (default: the runner's).
    pub max_steps: Option<u32>,
    /// The context window in tokens (default: the provider's).
    pub context_window: Option<u64>,
    /// Characters of a tool result the model sees before it is offloaded.
    pub result_chars: Option<usize>,
    /// Seconds of wall time a turn may take (default: the runner's); a
    /// real model on a small machine needs more than a scripted one.
    pub wall_secs: Option<u64>,
}

/// The scripted model used offline.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedModel {
    /// The model name it reports (prices are looked up by it).
    #[serde(default = "scripted_name")]
    pub name: String,
    /// Behave like a provider with Anthropic's prompt cache (a model of it).
    #[serde(default)]
    pub anthropic_cache: bool,
    /// Reason when asked, and refuse a tool loop that does not bring its
    /// signed reasoning back unchanged (as Anthropic does).
    #[serde(default)]
    pub reasons: bool,
    /// Its rules, first match wins.
    #[serde(default)]
    pub rules: Vec<Rule>,
}

impl Default for ScriptedModel {
    fn default() -> Self {
        ScriptedModel {
            name: scripted_name(),
            anthropic_cache: false,
            reasons: false,
            rules: Vec::new(),
        }
    }
}

fn scripted_name() -> String {
    "rein-scripted".into()
}

/// The checks. Every one left out is not checked.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// How the last turn ended: `finished`, `budget:steps`, `loop_detected`,
    /// `awaiting_approval`, `error:CODE`, ...
    pub outcome: Option<String>,
    /// Texts the final answer contains (case-insensitive).
    #[serde(default)]
    pub answer_contains: Vec<String>,
    /// Texts the final answer does not contain (case-insensitive).
    #[serde(default)]
    pub answer_lacks: Vec<String>,
    /// A regular expression the final answer matches.
    pub answer_matches: Option<String>,
    /// Fields of a structured answer: JSON pointer → value.
    #[serde(default)]
    pub answer_fields: BTreeMap<String, Value>,
    /// Tools that ran at least once.
    #[serde(default)]
    pub called: Vec<String>,
    /// Tools that never ran.
    #[serde(default)]
    pub not_called: Vec<String>,
    /// How many times tools ran: tool → count.
    #[serde(default)]
    pub calls: BTreeMap<String, u64>,
    /// Approvals requested, exactly.
    pub approvals_requested: Option<u64>,
    /// Sub-agents started, exactly.
    pub agents: Option<u64>,
    /// Model calls (all turns), at most.
    pub steps_at_most: Option<u64>,
    /// Model calls (all turns), at least.
    pub steps_at_least: Option<u64>,
    /// Tokens (prompt and output, all calls), at most.
    pub tokens_at_most: Option<u64>,
    /// Reasoning tokens (all calls), at least.
    pub reasoning_tokens_at_least: Option<u64>,
    /// Cost in micro-USD, at most.
    pub cost_at_most_micro_usd: Option<u64>,
    /// Share of prompt tokens read from the cache, at least.
    pub cache_read_share_at_least: Option<f64>,
    /// Compactions recorded, at least.
    pub compactions_at_least: Option<u64>,
    /// Outcomes each of which some compaction's summary check had
    /// (`kept`, `rewritten` — a lying summary asked again —, `dropped`).
    #[serde(default)]
    pub summary_checks_include: Vec<String>,
    /// The largest share of the window a request was sent at, at most.
    pub request_share_at_most: Option<f64>,
    /// The cache's read share over the calls after each compaction, at
    /// least (the cache comes back).
    pub cache_after_compaction_at_least: Option<f64>,
    /// Results offloaded to artifacts, at least.
    pub offloaded_at_least: Option<u64>,
    /// Results answered from the result cache, at least.
    pub cached_at_least: Option<u64>,
    /// Tool results that were errors, at least.
    pub tool_errors_at_least: Option<u64>,
    /// The backend's files afterwards: path → content.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Texts a file holds afterwards (it must exist): path → texts.
    #[serde(default)]
    pub file_contains: BTreeMap<String, Vec<String>>,
    /// Texts a file does not hold afterwards (it must exist): path → texts.
    #[serde(default)]
    pub file_lacks: BTreeMap<String, Vec<String>>,
    /// Commands (program and arguments) that must each exit 0 in the
    /// project folder when the case ends — its tests pass, a hidden check
    /// of what was asked (needs `folder`).
    #[serde(default)]
    pub commands_pass: Vec<Vec<String>>,
    /// Files that must exist afterwards (any content).
    #[serde(default)]
    pub present: Vec<String>,
    /// Files that must not exist afterwards.
    #[serde(default)]
    pub absent: Vec<String>,
    /// Texts an item of the case's memory scope holds afterwards.
    #[serde(default)]
    pub memory_holds: Vec<String>,
    /// Texts no item of the case's memory scope holds afterwards.
    #[serde(default)]
    pub memory_lacks: Vec<String>,
    /// Every model call of a turn sent the same stable prefix.
    #[serde(default)]
    pub prefix_stable_within_turns: bool,
    /// Distinct stable prefixes sent (all sessions), exactly.
    pub prefixes: Option<u64>,
}

/// A case with the suite it came from.
#[derive(Debug, Clone)]
pub struct LoadedCase {
    /// The suite's file stem.
    pub suite: String,
    /// The case.
    pub case: Case,
}

/// Why suites could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not a valid suite.
    #[error("{path} is not a valid eval suite: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Two cases share a name.
    #[error("two cases are named `{0}`; names must be unique")]
    Duplicate(String),
}

/// What is wrong with a case that parsed, if anything.
fn check(case: &Case) -> Result<(), String> {
    if let Some(pattern) = &case.expect.answer_matches
        && let Err(e) = regex::Regex::new(pattern)
    {
        return Err(format!("answer_matches: {e}"));
    }
    if let Some(bad) = case
        .approvals
        .iter()
        .find(|a| !matches!(a.as_str(), "yes" | "no" | "always"))
    {
        return Err(format!("approval answer `{bad}` is not yes, no or always"));
    }
    if let Some(level) = &case.reasoning
        && let Err(e) = level.parse::<rein_wire::Reasoning>()
    {
        return Err(format!("reasoning: {e}"));
    }
    if let Some(memory) = &case.memory {
        if case.graph.is_some() {
            return Err("a graph case has no memory".into());
        }
        if let Some(at) = memory
            .new_session_at
            .iter()
            .find(|&&at| at == 0 || at >= case.turns.len())
        {
            return Err(format!(
                "memory.new_session_at: turn {at} is not one of turns 1..{}",
                case.turns.len()
            ));
        }
    }
    if !matches!(case.tools.as_str(), "native" | "deferred") {
        return Err("tools must be native or deferred".into());
    }
    match (&case.graph, case.turns.is_empty() && case.ask.is_none()) {
        (None, true) => return Err("it has neither turns, ask nor graph".into()),
        (Some(_), false) => return Err("a graph case has no turns or ask".into()),
        (Some(graph), true) => {
            rein_orchestrator::GraphSpec::from_toml(graph)
                .and_then(rein_orchestrator::GraphSpec::check)
                .map_err(|e| format!("its graph: {}", e.message))?;
        }
        (None, false) => {}
    }
    Ok(())
}

/// Load every `.toml` and `.json` suite in `dir` (sorted by name), or the
/// one file `dir` names.
pub fn load(dir: &Path) -> Result<Vec<LoadedCase>, LoadError> {
    let mut files = Vec::new();
    if dir.is_file() {
        files.push(dir.to_path_buf());
    } else {
        let entries = std::fs::read_dir(dir).map_err(|source| LoadError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        for entry in entries.flatten() {
            let path = entry.path();
            if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("toml" | "json")
            ) {
                files.push(path);
            }
        }
        files.sort();
    }
    let mut cases: Vec<LoadedCase> = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|source| LoadError::Read {
            path: path.clone(),
            source,
        })?;
        for loaded in parse(&text, &path)? {
            if cases.iter().any(|c| c.case.name == loaded.case.name) {
                return Err(LoadError::Duplicate(loaded.case.name));
            }
            cases.push(loaded);
        }
    }
    Ok(cases)
}

/// The checked cases of one suite's `text`, read from `path` (JSON when it
/// ends in `.json`, else TOML; its stem names the suite).
pub fn parse(text: &str, path: &Path) -> Result<Vec<LoadedCase>, LoadError> {
    let suite: SuiteFile = if path.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(text).map_err(|e| e.to_string())
    } else {
        toml::from_str(text).map_err(|e| e.to_string())
    }
    .map_err(|message| LoadError::Parse {
        path: path.to_path_buf(),
        message,
    })?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("suite")
        .to_owned();
    let mut cases: Vec<LoadedCase> = Vec::new();
    for case in suite.cases {
        if cases.iter().any(|c| c.case.name == case.name) {
            return Err(LoadError::Duplicate(case.name));
        }
        if let Err(problem) = check(&case) {
            return Err(LoadError::Parse {
                path: path.to_path_buf(),
                message: format!("case `{}`: {problem}", case.name),
            });
        }
        cases.push(LoadedCase {
            suite: stem.clone(),
            case,
        });
    }
    Ok(cases)
}
