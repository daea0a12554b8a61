//! A task graph as written (TOML, or built in code) and the checks that
//! refuse it before anything runs: duplicate or empty ids, unknown
//! dependencies, cycles (with the path round), and briefs that reference
//! an output no earlier task declares.
//!
//! Not here: running it (`schedule`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use rein_wire::{AgentError, error::codes};
use serde::{Deserialize, Serialize};

/// What happens to the rest of a graph when a task fails for good.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailurePolicy {
    /// The failed task's dependents (all of them, transitively) are
    /// skipped; every other task still runs.
    #[default]
    SkipDependents,
    /// The graph fails: running tasks are cancelled, the rest skipped.
    FailGraph,
}

/// One task: a brief for an agent, what it needs first, what it yields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// Its id, unique in the graph (letters, digits, `-` and `_`).
    pub id: String,
    /// What the agent is asked to do; `{{task.output}}` is replaced by that
    /// output of an earlier task before it runs.
    pub brief: String,
    /// The agent to run it with, by name (the runner's default if none;
    /// `profile` is an older name for it).
    #[serde(default, alias = "profile", skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A check its answer must pass: a command (program and arguments, no
    /// shell) that must exit 0 (or `verify_exit`), or the task's model is told why and tries
    /// again within its attempt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verify: Vec<String>,
    /// The exit code `verify` must give (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_exit: Option<i32>,
    /// Tasks that must have succeeded first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// The outputs it must yield, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<String>,
    /// Attempts after the first one fails (the graph's default if unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// How long one attempt may take (`90s`, `5m`; the graph's default if
    /// unset).
    #[serde(
        default,
        with = "duration_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
}

impl TaskSpec {
    /// A task with a brief and nothing else.
    pub fn new(id: impl Into<String>, brief: impl Into<String>) -> Self {
        TaskSpec {
            id: id.into(),
            brief: brief.into(),
            agent: None,
            verify: Vec::new(),
            verify_exit: None,
            depends_on: Vec::new(),
            outputs: Vec::new(),
            retries: None,
            timeout: None,
        }
    }

    /// This task, run after `ids`.
    pub fn after(mut self, ids: &[&str]) -> Self {
        self.depends_on
            .extend(ids.iter().map(|id| (*id).to_owned()));
        self
    }

    /// This task, yielding outputs named `names`.
    pub fn yields(mut self, names: &[&str]) -> Self {
        self.outputs.extend(names.iter().map(|n| (*n).to_owned()));
        self
    }
}

/// Limits and defaults for a whole graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GraphSettings {
    /// Tasks running at once, at most.
    pub max_parallel: usize,
    /// What a task's final failure does to the rest.
    pub on_failure: FailurePolicy,
    /// Retries of a task that sets none.
    pub retries: u32,
    /// Time limit of one attempt of a task that sets none.
    #[serde(with = "duration_text_required")]
    pub timeout: Duration,
    /// The first retry's wait; each later one waits twice as long, up to
    /// [`MAX_BACKOFF`].
    #[serde(with = "duration_text_required")]
    pub backoff: Duration,
}

/// The longest wait between attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Tasks in one graph, at most.
pub const MAX_TASKS: usize = 10_000;

impl Default for GraphSettings {
    fn default() -> Self {
        GraphSettings {
            max_parallel: 4,
            on_failure: FailurePolicy::SkipDependents,
            retries: 1,
            timeout: Duration::from_secs(30 * 60),
            backoff: Duration::from_secs(2),
        }
    }
}

/// A graph of tasks as written: not yet checked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphSpec {
    /// Limits and defaults.
    #[serde(default)]
    pub graph: GraphSettings,
    /// The tasks, in the order they are listed (ready tasks start in it).
    #[serde(default, rename = "task")]
    pub tasks: Vec<TaskSpec>,
}

impl GraphSpec {
    /// Read a graph from TOML text (`[graph]` settings, `[[task]]` tables).
    pub fn from_toml(text: &str) -> Result<Self, AgentError> {
        toml::from_str(text).map_err(|err| {
            AgentError::new(
                codes::GRAPH_INVALID,
                format!("the graph file cannot be read: {err}"),
            )
        })
    }

    /// Check the graph: it runs only if this succeeds.
    pub fn check(self) -> Result<Graph, AgentError> {
        Graph::new(self)
    }
}

/// A reference to another task's output inside a brief.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutputRef {
    /// The whole `{{task.output}}` text.
    pub(crate) text: String,
    /// Where it starts in the brief (bytes).
    pub(crate) at: usize,
    pub(crate) task: String,
    pub(crate) output: String,
}

/// The `{{task.output}}` references in `brief`, in order.
pub(crate) fn references(brief: &str) -> Vec<OutputRef> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(start) = brief[from..].find("{{").map(|s| s + from) {
        let Some(end) = brief[start + 2..].find("}}").map(|e| e + start + 2) else {
            break;
        };
        let inner = brief[start + 2..end].trim();
        if let Some((task, output)) = inner.split_once('.') {
            out.push(OutputRef {
                text: brief[start..end + 2].to_owned(),
                at: start,
                task: task.trim().to_owned(),
                output: output.trim().to_owned(),
            });
        }
        from = end + 2;
    }
    out
}

fn invalid(message: String) -> AgentError {
    AgentError::new(codes::GRAPH_INVALID, message)
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A checked graph: ids unique, dependencies known and acyclic, every
/// output reference to a declared output of a task that runs before.
#[derive(Debug, Clone)]
pub struct Graph {
    pub(crate) settings: GraphSettings,
    pub(crate) tasks: Vec<TaskSpec>,
    /// Task index -> the indices of its dependencies.
    pub(crate) deps: Vec<Vec<usize>>,
    /// Task index -> the indices of the tasks that depend on it.
    pub(crate) dependents: Vec<Vec<usize>>,
}

impl Graph {
    fn new(spec: GraphSpec) -> Result<Self, AgentError> {
        let GraphSpec { graph, tasks } = spec;
        if tasks.is_empty() {
            return Err(invalid("the graph has no tasks".into()));
        }
        if tasks.len() > MAX_TASKS {
            return Err(invalid(format!(
                "the graph has {} tasks; at most {MAX_TASKS} run in one graph",
                tasks.len()
            )));
        }
        if graph.max_parallel == 0 {
            return Err(invalid("`max_parallel` must be at least 1".into()));
        }
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (i, task) in tasks.iter().enumerate() {
            if !valid_id(&task.id) {
                return Err(invalid(format!(
                    "task id `{}` is not valid: use letters, digits, `-` and `_` (at most 128)",
                    task.id
                )));
            }
            if index.insert(task.id.as_str(), i).is_some() {
                return Err(invalid(format!("two tasks are named `{}`", task.id)));
            }
        }
        let mut deps = vec![Vec::new(); tasks.len()];
        let mut dependents = vec![Vec::new(); tasks.len()];
        for (i, task) in tasks.iter().enumerate() {
            let mut seen = BTreeSet::new();
            for dep in &task.depends_on {
                let Some(&d) = index.get(dep.as_str()) else {
                    return Err(invalid(format!(
                        "task `{}` depends on `{dep}`, which is not in the graph",
                        task.id
                    )));
                };
                if seen.insert(d) {
                    deps[i].push(d);
                    dependents[d].push(i);
                }
            }
        }
        if let Some(cycle) = find_cycle(&deps) {
            let path: Vec<&str> = cycle.iter().map(|&i| tasks[i].id.as_str()).collect();
            return Err(invalid(format!(
                "the tasks depend on each other in a circle: {}",
                path.join(" → ")
            )));
        }
        let ancestors = ancestors(&deps);
        for (i, task) in tasks.iter().enumerate() {
            for r in references(&task.brief) {
                let Some(&t) = index.get(r.task.as_str()) else {
                    return Err(invalid(format!(
                        "task `{}`'s brief uses {}, but there is no task `{}`",
                        task.id, r.text, r.task
                    )));
                };
                if !tasks[t].outputs.contains(&r.output) {
                    return Err(invalid(format!(
                        "task `{}`'s brief uses {}, but task `{}` declares no output `{}`",
                        task.id, r.text, r.task, r.output
                    )));
                }
                if !ancestors[i].contains(&t) {
                    return Err(invalid(format!(
                        "task `{}`'s brief uses {}, but does not depend on `{}` (add it to depends_on)",
                        task.id, r.text, r.task
                    )));
                }
            }
        }
        Ok(Graph {
            settings: graph,
            tasks,
            deps,
            dependents,
        })
    }

    /// The tasks, in the order they were written.
    pub fn tasks(&self) -> &[TaskSpec] {
        &self.tasks
    }

    /// The graph's settings.
    pub fn settings(&self) -> &GraphSettings {
        &self.settings
    }

    /// `task`'s brief with its output references replaced from `outputs`
    /// (task id -> output name -> value).
    pub(crate) fn brief_of(
        &self,
        task: usize,
        outputs: &HashMap<usize, BTreeMap<String, String>>,
    ) -> String {
        // One pass over the brief: an output holding `{{…}}` text of its
        // own is inserted as it is, never expanded again.
        let spec = &self.tasks[task];
        let mut brief = String::with_capacity(spec.brief.len());
        let mut from = 0;
        for r in references(&spec.brief) {
            let value = self
                .tasks
                .iter()
                .position(|t| t.id == r.task)
                .and_then(|t| outputs.get(&t))
                .and_then(|o| o.get(&r.output))
                .map_or("", String::as_str);
            brief.push_str(&spec.brief[from..r.at]);
            brief.push_str(value);
            from = r.at + r.text.len();
        }
        brief.push_str(&spec.brief[from..]);
        brief
    }
}

/// A cycle in `deps` (task indices, the first repeated at the end), if any.
fn find_cycle(deps: &[Vec<usize>]) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut mark = vec![Mark::New; deps.len()];
    for root in 0..deps.len() {
        if mark[root] != Mark::New {
            continue;
        }
        // An explicit stack: (task, next dependency to look at).
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        mark[root] = Mark::Open;
        while let Some(&mut (task, ref mut next)) = stack.last_mut() {
            if let Some(&dep) = deps[task].get(*next) {
                *next += 1;
                match mark[dep] {
                    Mark::New => {
                        mark[dep] = Mark::Open;
                        stack.push((dep, 0));
                    }
                    Mark::Open => {
                        let from = stack.iter().position(|(t, _)| *t == dep).unwrap_or(0);
                        let mut cycle: Vec<usize> = stack[from..].iter().map(|(t, _)| *t).collect();
                        cycle.push(dep);
                        // Written in the order the work flows.
                        cycle.reverse();
                        return Some(cycle);
                    }
                    Mark::Done => {}
                }
            } else {
                mark[task] = Mark::Done;
                stack.pop();
            }
        }
    }
    None
}

/// For each task, every task it depends on, directly or not (`deps` is
/// acyclic).
fn ancestors(deps: &[Vec<usize>]) -> Vec<BTreeSet<usize>> {
    let mut memo: Vec<Option<BTreeSet<usize>>> = vec![None; deps.len()];
    fn visit(t: usize, deps: &[Vec<usize>], memo: &mut Vec<Option<BTreeSet<usize>>>) {
        if memo[t].is_some() {
            return;
        }
        let mut all = BTreeSet::new();
        for &d in &deps[t] {
            visit(d, deps, memo);
            all.insert(d);
            if let Some(of) = &memo[d] {
                all.extend(of.iter().copied());
            }
        }
        memo[t] = Some(all);
    }
    for t in 0..deps.len() {
        visit(t, deps, &mut memo);
    }
    memo.into_iter().map(Option::unwrap_or_default).collect()
}

/// `timeout = "90s"` in the file, a `Duration` in code.
mod duration_text {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&humantime::format_duration(*d).to_string()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text)
            .map(Some)
            .map_err(|err| serde::de::Error::custom(format!("`{text}` is not a duration: {err}")))
    }
}

mod duration_text_required {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text)
            .map_err(|err| serde::de::Error::custom(format!("`{text}` is not a duration: {err}")))
    }
}
