//! Running one case: a real SQLite file, the reference tool backend, the
//! scripted model (or a real provider), a simulated person for approvals,
//! then the checks against the log and the backend.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use rein_approvals::Surface;
use rein_gateway::Provider;
use rein_runner::{Agent, Conversation, Profile, ToolLoading, TurnOutcome};
use rein_sessions::{Event, SqliteStore, Store, StoredEvent};
use rein_testing::ScriptedBrain;
use rein_wire::AgentError;

pub use crate::result::{CaseResult, FailedTry};

use crate::concluded::conclude;
use crate::memory::CaseMemory;
use crate::person::{Answers, answer_children, answer_of};
use crate::project::Project;
use crate::suite::{Case, LoadedCase};

/// The model the cases run against.
#[derive(Clone)]
pub enum ModelChoice {
    /// Each case's own scripted rules (offline, deterministic).
    Scripted,
    /// One real provider for every case.
    Real {
        /// The provider.
        provider: Arc<dyn Provider>,
        /// The model name.
        model: String,
        /// How the report names it.
        label: String,
        /// Model calls per turn where a case sets none (a real model that
        /// keeps calling tools should not run for a hundred slow steps).
        max_steps: u32,
        /// The output limit per call.
        max_output_tokens: u32,
        /// The sampling temperature (`None`: the server's).
        temperature: Option<f64>,
    },
}

impl ModelChoice {
    /// How the report names the model.
    pub fn label(&self) -> String {
        match self {
            ModelChoice::Scripted => "scripted".into(),
            ModelChoice::Real { label, .. } => label.clone(),
        }
    }
}

fn outcome_name(outcome: &TurnOutcome) -> String {
    match outcome {
        TurnOutcome::Budget { which } => format!("budget:{which}"),
        TurnOutcome::Error { error } => format!("error:{}", error.code),
        other => other.name().as_str().to_owned(),
    }
}

/// Run `loaded` against `model`, with the reference tool backend.
pub async fn run_case(loaded: &LoadedCase, model: &ModelChoice) -> CaseResult {
    run_case_with(loaded, model, None).await
}

/// Run `loaded` against `model` with a product's own `tools` (`None`: the
/// reference backend's file tools alone). Given, they are the agent's
/// tools — with the file tools beside them only when the case gives files
/// (`backend.files`, `backend.generated`) — so a product's suite checks
/// its own agent: `calls`, `not_called`, approvals, the answer, the cost.
pub async fn run_case_with(
    loaded: &LoadedCase,
    model: &ModelChoice,
    tools: Option<Arc<dyn rein_tools::ToolBackend>>,
) -> CaseResult {
    let case = &loaded.case;
    let mut result = CaseResult {
        suite: loaded.suite.clone(),
        name: case.name.clone(),
        covers: case.covers.clone(),
        skipped: false,
        passed: false,
        failures: Vec::new(),
        outcome: String::new(),
        answer: String::new(),
        steps: 0,
        tokens: 0,
        cost_micro_usd: 0,
        cache_read_share: 0.0,
        compactions: 0,
        summary_checks: Vec::new(),
        pressures: None,
        approvals: 0,
        agents: 0,
        tool_results: 0,
        trail: Vec::new(),
        ms: 0,
        tries: 1,
        passes: 0,
        failed_tries: Vec::new(),
    };
    if matches!(model, ModelChoice::Real { .. }) && !case.real {
        result.skipped = true;
        result.passed = true;
        result.outcome = "skipped".into();
        return result;
    }
    let started = Instant::now();
    match execute(case, model, tools, &mut result).await {
        Ok(()) => {}
        Err(err) => result.failures.push(format!(
            "the case could not run: {} ({})",
            err.message, err.code
        )),
    }
    result.ms = started.elapsed().as_millis() as u64;
    result.passed = result.failures.is_empty();
    result.passes = u64::from(result.passed);
    result
}

fn files_of(case: &Case) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = case
        .backend
        .files
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for i in 0..case.backend.generated {
        let name = format!("f{i}.txt");
        // A file the case gives by name is kept: the generated filler
        // must not overwrite the one file a task is about.
        if case.backend.files.contains_key(&name) {
            continue;
        }
        let line = format!("file {i}: lorem ipsum dolor sit amet, consectetur adipiscing. ");
        let mut body = line.repeat(case.backend.generated_bytes.div_ceil(line.len()).max(1));
        if case.backend.generated_trail {
            body.push_str(&trail(i, case.backend.generated));
        }
        files.push((name, body));
    }
    files
}

/// The line that ends generated file `i` of `n` on a trail.
fn trail(i: usize, n: usize) -> String {
    if i + 1 < n {
        format!("Next: read f{}.txt.", i + 1)
    } else {
        "This is the last file.".to_owned()
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "a case's run in order: its project, its turns, its checks"
)]
async fn execute(
    case: &Case,
    model: &ModelChoice,
    tools: Option<Arc<dyn rein_tools::ToolBackend>>,
    result: &mut CaseResult,
) -> Result<(), AgentError> {
    let dir = tempfile::tempdir().map_err(|e| {
        AgentError::new(
            rein_wire::error::codes::INTERNAL,
            format!("no temporary folder: {e}"),
        )
    })?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("rein.db")).await?);
    let kind = (case.backend.folder, case.backend.commands);
    let project = Project::new(&files_of(case), kind, &store).await?;
    let backend: Arc<dyn rein_tools::ToolBackend> = match tools {
        Some(own) if case.backend.files.is_empty() && case.backend.generated == 0 => own,
        Some(own) => Arc::new(rein_tools::Joined::new(vec![project.backend(), own])),
        None => project.backend(),
    };
    let mut default_steps = None;
    let mut max_output_tokens = 1024;
    let mut temperature = None;
    let (provider, model_name): (Arc<dyn Provider>, String) = match model {
        ModelChoice::Scripted => {
            let mut brain =
                ScriptedBrain::new(case.model.rules.clone()).with_model(case.model.name.clone());
            if case.model.anthropic_cache {
                brain = brain.with_anthropic_cache();
            }
            if case.model.reasons {
                brain = brain.with_reasoning();
            }
            (Arc::new(brain), case.model.name.clone())
        }
        ModelChoice::Real {
            provider,
            model,
            max_steps,
            max_output_tokens: output,
            temperature: t,
            ..
        } => {
            default_steps = Some(*max_steps);
            max_output_tokens = *output;
            temperature = *t;
            (provider.clone(), model.clone())
        }
    };
    let mut profile = Profile::new("Eval", model_name).with_system(case.system.clone());
    profile.max_output_tokens = max_output_tokens;
    profile.reasoning = case.reasoning.as_deref().and_then(|l| l.parse().ok());
    profile.sampling.temperature = temperature;
    profile.tools = if case.tools == "deferred" {
        ToolLoading::Deferred
    } else {
        ToolLoading::Native
    };
    let mut agent = case_agent(case, provider, backend.clone(), profile, default_steps);
    if let Some(graph) = &case.graph {
        return crate::graph::execute(case, graph, store, agent, &project, result).await;
    }
    let memory = match &case.memory {
        Some(spec) => Some(CaseMemory::new(spec).await?),
        None => None,
    };
    if let Some(memory) = &memory {
        agent = memory.give(agent)?;
    }
    let mut conv = agent.open(store.clone()).await?;
    let answers: Answers = Arc::new(Mutex::new(crate::suite::answers_of(case)));
    let mut children = answer_children(&conv, answers.clone());
    let mut outcome = String::new();
    let mut answer = String::new();
    let mut sessions = vec![conv.session_id().to_owned()];
    for (at, text) in case.turns.iter().enumerate() {
        // A new session: the memory stays, the conversation does not.
        if case
            .memory
            .as_ref()
            .is_some_and(|m| m.new_session_at.contains(&at))
        {
            children.abort();
            conv.close().await?;
            conv = agent.open(store.clone()).await?;
            children = answer_children(&conv, answers.clone());
            sessions.push(conv.session_id().to_owned());
        }
        let first = conv.turn(text).await;
        let last = settle(&mut conv, first, &answers).await;
        match last {
            Ok(done) => {
                outcome = outcome_name(&done);
                answer = match done {
                    TurnOutcome::Finished { reply } => reply,
                    _ => String::new(),
                };
            }
            Err(err) => {
                outcome = format!("error:{}", err.code);
                answer.clear();
                break;
            }
        }
        if outcome != "finished" {
            break;
        }
    }
    if let Some(ask) = &case.ask
        && (outcome.is_empty() || outcome == "finished")
    {
        match conv.ask_with_schema(&ask.prompt, ask.schema.clone()).await {
            Ok(value) => {
                outcome = "finished".into();
                answer = value.to_string();
            }
            Err(err) => {
                outcome = format!("error:{}", err.code);
                answer.clear();
            }
        }
    }
    children.abort();
    // Only the scripted answers must all be used.
    let extra = if case.approvals_after.is_some() {
        crate::suite::MORE_ANSWERS
    } else {
        0
    };
    let unasked = answers.lock().map_or(0, |a| a.len()).saturating_sub(extra);
    if unasked > 0 {
        result.failures.push(format!(
            "{unasked} scripted approval answer(s) were never asked for"
        ));
    }
    let session = conv.session_id().to_owned();
    conv.close().await?;
    let events = store.read(&session, 0, usize::MAX).await?;
    let family = with_children(store.as_ref(), &events).await?;
    let report = rein_trace::report(&session, &events);
    result.outcome = outcome;
    result.answer = answer;
    conclude(case, result, &report.totals, &family, &events, &project).await;
    if let Some(memory) = &memory {
        let mut every = Vec::new();
        for id in &sessions {
            every.extend(store.read(id, 0, usize::MAX).await?);
        }
        memory.check(case, result, &every).await;
    }
    Ok(())
}

/// A session's events followed by its sub-agents' (theirs, recursively).
async fn with_children(
    store: &dyn Store,
    events: &[StoredEvent],
) -> Result<Vec<StoredEvent>, AgentError> {
    let mut all = events.to_vec();
    let mut next = 0;
    while next < all.len() {
        if let Event::AgentStarted {
            session: Some(child),
            ..
        } = &all[next].event
        {
            let child = child.clone();
            all.extend(store.read(&child, 0, usize::MAX).await?);
        }
        next += 1;
    }
    Ok(all)
}

/// Answer approvals as the case scripts them until the turn ends or the
/// script runs out of answers.
async fn settle(
    conv: &mut Conversation,
    mut outcome: Result<TurnOutcome, AgentError>,
    answers: &Answers,
) -> Result<TurnOutcome, AgentError> {
    loop {
        let Ok(TurnOutcome::AwaitingApproval(rein_runner::ApprovalRequest { approval_id, .. })) =
            &outcome
        else {
            return outcome;
        };
        let Some(said) = answers.lock().ok().and_then(|mut a| a.pop_front()) else {
            return outcome;
        };
        let answer = answer_of(&said);
        let id = approval_id.clone();
        conv.decide(&id, answer, &Surface::simulated_person())
            .await?;
        outcome = conv.resume().await;
    }
}

/// The case's definition: its words, the project's tools, the limits and
/// sub-agents it sets — the value every task of its graph runs too.
fn case_agent(
    case: &Case,
    provider: Arc<dyn Provider>,
    tools: Arc<dyn rein_tools::ToolBackend>,
    profile: Profile,
    default_steps: Option<u32>,
) -> Agent {
    let mut agent = Agent::new(provider, tools, profile);
    if let Some(steps) = case.limits.max_steps.or(default_steps) {
        agent.budgets.max_steps = steps;
    }
    if let Some(window) = case.limits.context_window {
        agent.context.window = Some(window);
    }
    if let Some(secs) = case.limits.wall_secs {
        agent.budgets.max_wall = std::time::Duration::from_secs(secs);
    }
    if case.subagents {
        agent.delegation = Some(if case.subagent_writes {
            rein_runner::Delegation::default()
        } else {
            rein_runner::Delegation::read_only()
        });
    }
    if let Some(chars) = case.limits.result_chars {
        agent.bounds.max_chars = chars;
        agent.bounds.max_string = agent.bounds.max_string.max(chars);
    }
    agent
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

    use crate::suite::SuiteFile;

    #[test]
    fn a_file_given_by_name_is_not_overwritten_by_the_generated_ones() {
        let suite: SuiteFile = toml::from_str(
            r#"
            [[case]]
            name = "c"
            turns = ["which file mentions BLUE?"]
            backend.generated = 5
            backend.files = { "f3.txt" = "the sea is BLUE" }
            "#,
        )
        .unwrap();
        let files = super::files_of(&suite.cases[0]);
        let f3: Vec<_> = files.iter().filter(|(name, _)| name == "f3.txt").collect();
        assert_eq!(f3.len(), 1, "{files:?}");
        assert_eq!(f3[0].1, "the sea is BLUE");
        assert_eq!(files.len(), 5);
    }

    #[test]
    fn a_trail_names_each_next_file_and_ends() {
        let suite: SuiteFile = toml::from_str(
            r#"
            [[case]]
            name = "c"
            turns = ["read them all"]
            backend.generated = 3
            backend.generated_trail = true
            "#,
        )
        .unwrap();
        let files = super::files_of(&suite.cases[0]);
        assert!(files[0].1.ends_with("Next: read f1.txt."), "{files:?}");
        assert!(files[1].1.ends_with("Next: read f2.txt."), "{files:?}");
        assert!(files[2].1.ends_with("This is the last file."), "{files:?}");
    }
}
