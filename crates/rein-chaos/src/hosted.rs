//! A hosted agent in the campaign: the real Claude Code CLI driven by
//! rein's host (`rein_host`, put together as `rein agents run claude` puts
//! it: the permission server, the driver, the recorder, a keeper), against
//! a stand-in of the Messages API in the trial's process. Its model asks
//! for a command that counts itself (`echo MARK >> ran.txt`, the person
//! approves; it leaves a sleeper behind), a new file (approved) and a
//! removal (the person refuses);
//! Claude Code asks each through rein, and runs what is allowed itself.
//!
//! A kill takes the driver, Claude Code and all it started (its keeper is
//! this binary). The next process does what every `rein agents` command
//! and `rein approve` do first — closes the dead run (`close_dead`): its
//! waiting question decided `stopped`, its open calls interrupted — and,
//! unless a run has finished, starts a new run with a mark of its own, as
//! a person would start one again. So a command run twice, or run without
//! a recorded yes, shows in `ran.txt`.
//!
//! Not here: killing (`campaign`); the checks other surfaces share
//! (`check`), of which these trials take the log's and the calls'.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use futures::future::BoxFuture;
use rein_host::acp::{Answer, Person, Question};
use rein_host::config::{AgentEntry, AgentKind};
use rein_host::{ClaudeStream, Ended, Joined, Recorder};
use rein_sessions::{Event, ResultSource, SqliteStore, Store, StoredEvent, ToolStatus};
use rein_testing::{FakeServer, RecordedRequest, Reply, ScriptedCall, ScriptedMessage};
use rein_wire::permission::Decision;
use serde_json::{Value, json};

use crate::check::{Story, answered_once, closed, read_whole};
use crate::child::{root_path, store_path};

/// What the person asks of the hosted agent.
const PROMPT: &str = "Count this run, write hello to out.txt, and remove old.txt.";

/// The file each run's command adds its mark to.
pub const RAN: &str = "ran.txt";

/// What the counting command leaves behind: a sleeper of its own, which
/// must die with the run (or with rein, killed), never outlive them.
const SLEEPER: &str = "(sleep 30 >/dev/null 2>&1 &)";

/// A hosted run's limit: well inside the campaign's.
const RUN_LIMIT: Duration = Duration::from_secs(100);

/// How long the person takes to answer: a question waits this long, so
/// kills land while one does.
const THINKING: Duration = Duration::from_millis(150);

/// The person: every call allowed but a removal, after a moment's thought.
struct Chaos;

impl Person for Chaos {
    fn ask(&self, question: Question) -> BoxFuture<'static, Option<Answer>> {
        Box::pin(async move {
            tokio::time::sleep(THINKING).await;
            Some(Answer {
                allow: allows(&question.detail),
                surface: rein_approvals::Surface::terminal(),
            })
        })
    }
}

/// What the person answers about a call shown as `detail`.
pub fn allows(detail: &str) -> bool {
    !detail.starts_with("remove")
}

/// Close what a killed run left, and run Claude Code until a run finishes.
pub async fn run(dir: &Path) -> anyhow::Result<()> {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(store_path(dir)).await?);
    rein_host::record::close_dead(store.as_ref(), 1_000).await?;
    if finished(store.as_ref()).await? {
        return Ok(());
    }
    // Claude Code and what it starts are kept by this binary: a kill takes
    // them all.
    rein_host::keeper::keep_with(std::env::current_exe()?);
    let root = root_path(dir).canonicalize()?;
    let cwd = root.display().to_string();
    let mark = mark();
    let model = stand_in(&root, &mark).await?;
    let home = dir.join("home");
    std::fs::create_dir_all(&home)?;
    let entry = AgentEntry {
        kind: AgentKind::Claude,
        argv: vec![
            rein_testing::clis::claude_code().display().to_string(),
            "-p".into(),
            "--output-format".into(),
            "stream-json".into(),
            "--verbose".into(),
        ],
        env: [
            ("ANTHROPIC_BASE_URL", model.base_url()),
            ("ANTHROPIC_API_KEY", "sk-ant-chaos-NOT-A-KEY".to_owned()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
            ("HOME", home.display().to_string()),
        ]
        .map(|(k, v)| (k.to_owned(), v))
        .into(),
        env_from: Vec::new(),
        timeout: RUN_LIMIT,
        max_line: rein_host::driver::DEFAULT_MAX_LINE,
    };
    let (mut spec, hears) = entry.run_spec(&root, Some(PROMPT), &[]);
    let mut recorder = Recorder::start(store, "claude", &entry.program(), PROMPT).await?;
    let (asks, _server) = rein_host::claude::permission::asking(
        Arc::new(Chaos),
        &cwd,
        &mut spec.argv,
        hears.is_none(),
    )
    .await?;
    let mut reducer = ClaudeStream::new(&cwd);
    let joined = Joined {
        view: None,
        asks: Some(asks),
        hears,
    };
    let stop = tokio_util::sync::CancellationToken::new();
    let driven = rein_host::drive(
        &spec,
        &mut reducer,
        Some(&mut recorder),
        &mut |_| {},
        stop,
        joined,
    )
    .await;
    let driven = match driven {
        Ok(driven) => driven,
        Err(e) => {
            recorder.abandon(&e.message).await?;
            return Err(e).context("driving Claude Code");
        }
    };
    match driven.ended {
        Ended::Finished => Ok(()),
        other => bail!(
            "the hosted run ended {other:?}: {:?} {:?}",
            driven.outcome.failure,
            driven.stderr_tail
        ),
    }
}

/// A mark no other run of the trial has.
fn mark() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("m{:x}{:x}", std::process::id(), nanos % (1 << 40))
}

/// The Messages API stand-in of a run marked `mark`: each request that
/// offers Claude Code's tools is answered by how many results it carries —
/// the counting command, the new file, the removal, then "All done.".
/// Anything else (a count, a side request) gets a plain answer.
async fn stand_in(root: &Path, mark: &str) -> anyhow::Result<FakeServer> {
    let server = FakeServer::start(Vec::new()).await?;
    let steps = [
        (
            "Bash",
            json!({"command": format!("echo {mark} >> {RAN}; {SLEEPER}"), "description": format!("count {mark}")}),
        ),
        (
            "Write",
            json!({"file_path": root.join("out.txt").display().to_string(), "content": "hello\n"}),
        ),
        (
            "Bash",
            json!({"command": "rm old.txt", "description": "remove old.txt"}),
        ),
    ];
    let mark = mark.to_owned();
    server.respond_with(Arc::new(move |request: &RecordedRequest, _| {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let main = body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "Bash"));
        if !request.path.starts_with("/v1/messages") || request.path.contains("count_tokens") {
            return Reply::status(200, json!({"input_tokens": 10}).to_string());
        }
        let message = match steps.get(results_in(&body)).filter(|_| main) {
            Some((tool, input)) => ScriptedMessage::text(&["On it."]).with_call(ScriptedCall::new(
                &format!("toolu_{mark}_{}", results_in(&body)),
                tool,
                input.clone(),
                2,
            )),
            None => ScriptedMessage::text(&["All done."]),
        };
        if body["stream"] == true {
            return Reply::sse(message.anthropic_sse());
        }
        Reply::status(
            200,
            json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": message.text.concat()}], "stop_reason": "end_turn",
                "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 5}})
            .to_string(),
        )
    }));
    Ok(server)
}

/// How many tool results a Messages request carries.
fn results_in(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .count()
}

/// Whether a hosted run of the trial has finished.
async fn finished(store: &dyn Store) -> anyhow::Result<bool> {
    for info in store.list_sessions(1_000).await? {
        let log = rein_sessions::read_all(store, &info.id).await?;
        if ending(&log) == Some(rein_wire::Ending::Finished) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// How a run's log says it ended, if it did.
fn ending(log: &[StoredEvent]) -> Option<rein_wire::Ending> {
    log.iter().find_map(|e| match &e.event {
        Event::RunFinished { outcome, .. } => Some(*outcome),
        _ => None,
    })
}

/// A finished trial's runs, oldest first, each read whole.
async fn runs(dir: &Path) -> Result<Vec<Vec<StoredEvent>>, String> {
    let store = SqliteStore::open(store_path(dir))
        .await
        .map_err(|e| format!("the store does not open: {e}"))?;
    let mut sessions = store
        .list_sessions(1_000)
        .await
        .map_err(|e| format!("the sessions do not list: {e}"))?;
    // UUIDv7 ids sort by creation.
    sessions.sort_by(|a, b| a.id.cmp(&b.id));
    let mut runs = Vec::new();
    for info in sessions {
        if info.metadata["hosted"] != "claude" {
            return Err(format!("a session that is no hosted run: {}", info.id));
        }
        runs.push(read_whole(&store, &info.id).await?);
    }
    Ok(runs)
}

/// Check a finished hosted trial: every run's log whole with nothing left
/// unfinished and every call answered once; one run finished, the last,
/// and each before it closed as its driver's death left it; every
/// decision the person's, or a stop of a question whose driver died; each
/// run's command run at most once, never without a recorded yes, and once
/// when its result says it ran; the files as the results say.
pub async fn check(dir: &Path) -> Result<Story, Vec<String>> {
    let runs = runs(dir).await.map_err(|e| vec![e])?;
    let mut broken = Vec::new();
    let mut whole = story_of(&[]);
    let mut finished = 0;
    for (n, log) in runs.iter().enumerate() {
        let whose = format!("run {}'s ", n + 1);
        closed(log, &whose, &mut broken);
        let story = story_of(log);
        answered_once(log, &story, &mut broken);
        decided_by_the_person(log, &whose, &mut broken);
        // A process killed between making the session and beginning the
        // run leaves a session with nothing in it: nothing to close.
        let begun = log
            .iter()
            .any(|e| matches!(e.event, Event::TurnStarted { .. }));
        match ending(log) {
            None if !begun => {}
            Some(rein_wire::Ending::Finished) => finished += 1,
            Some(rein_wire::Ending::Failed) if closed_as_dead(log) => {}
            other => broken.push(format!(
                "{whose}run ended {other:?}: neither finished nor closed after its driver died"
            )),
        }
        if finished > 0 && ending(log) != Some(rein_wire::Ending::Finished) && begun {
            broken.push(format!("{whose}run began after one had finished"));
        }
        whole.calls.extend(story.calls);
        whole.results.extend(story.results);
        whole.replies.extend(story.replies);
    }
    if finished != 1 {
        broken.push(format!("{finished} runs finished, not 1"));
    }
    let all: Vec<StoredEvent> = runs.concat();
    ran_once(dir, &all, &mut broken);
    files_as_results_say(dir, &all, &mut broken);
    if broken.is_empty() {
        Ok(whole)
    } else {
        Err(broken)
    }
}

/// Whether the uninterrupted run in `dir` ran the whole scenario: the
/// command and the file approved and done, the removal refused.
pub async fn scenario_ran(dir: &Path) -> Result<(), String> {
    let all = runs(dir).await?.concat();
    let decided = |wanted: Decision| {
        all.iter().any(
            |e| matches!(&e.event, Event::ApprovalDecided { decision, .. } if *decision == wanted),
        )
    };
    let done = |tool: &str, detail: &str| {
        let ends = ends(&all);
        calls(&all)
            .iter()
            .any(|(call, t, d)| t == tool && d.starts_with(detail) && ends.get(call) == Some(&true))
    };
    match (
        decided(Decision::Approved),
        decided(Decision::Denied),
        done("Bash", "count "),
        done("Write", "out.txt"),
    ) {
        (true, true, true, true) => Ok(()),
        seen => Err(format!(
            "the hosted scenario did not run whole (approved, denied, counted, written): {seen:?}"
        )),
    }
}

/// How many of the trial's runs were closed after their driver died, and
/// how many questions were stopped with them.
pub async fn closed_dead(dir: &Path) -> (usize, usize) {
    let runs = runs(dir).await.unwrap_or_default();
    let closed = runs.iter().filter(|log| closed_as_dead(log)).count();
    let stopped = runs
        .iter()
        .flatten()
        .filter(|e| {
            matches!(&e.event, Event::ApprovalDecided { decision: Decision::Stopped, by, .. }
                if by == rein_host::record::DEAD_DRIVER)
        })
        .count();
    (closed, stopped)
}

/// Whether a run was closed by the next rein after its driver died.
fn closed_as_dead(log: &[StoredEvent]) -> bool {
    log.iter().any(|e| match &e.event {
        Event::RunFinished { totals, .. } => totals["failure"]
            .as_str()
            .is_some_and(|f| f.starts_with("its driver (pid")),
        _ => false,
    })
}

/// A run's story: the calls recorded, their results, the reply.
fn story_of(log: &[StoredEvent]) -> Story {
    let mut story = Story {
        calls: Vec::new(),
        results: Vec::new(),
        replies: Vec::new(),
    };
    for e in log {
        match &e.event {
            Event::ToolCalled { call_id, tool, .. } => {
                story.calls.push((call_id.clone(), tool.clone()));
            }
            Event::ToolResult {
                call_id,
                status,
                source,
                ..
            } => {
                let how = match (status, source) {
                    (_, ResultSource::Interrupted) => "interrupted",
                    (ToolStatus::Ok, _) => "ok",
                    (ToolStatus::Error, _) => "error",
                };
                story.results.push((call_id.clone(), how.to_owned()));
            }
            Event::TurnFinished { reply, .. } => {
                story.replies.push(reply.clone().unwrap_or_default());
            }
            _ => {}
        }
    }
    story
}

/// Every call recorded: (call id, tool, its detail).
fn calls(log: &[StoredEvent]) -> Vec<(String, String, String)> {
    log.iter()
        .filter_map(|e| match &e.event {
            Event::ToolCalled {
                call_id,
                tool,
                arguments,
                ..
            } => Some((
                call_id.clone(),
                tool.clone(),
                arguments["detail"].as_str().unwrap_or_default().to_owned(),
            )),
            _ => None,
        })
        .collect()
}

/// Each call's result: whether it says the call ran (not interrupted).
fn ends(log: &[StoredEvent]) -> HashMap<String, bool> {
    log.iter()
        .filter_map(|e| match &e.event {
            Event::ToolResult {
                call_id,
                status,
                source,
                ..
            } => Some((
                call_id.clone(),
                *status == ToolStatus::Ok && *source != ResultSource::Interrupted,
            )),
            _ => None,
        })
        .collect()
}

/// Every decision the person's answer, made once — or a stop by the rein
/// that closed a run whose driver died.
fn decided_by_the_person(log: &[StoredEvent], whose: &str, broken: &mut Vec<String>) {
    let mut asked: HashMap<&str, &str> = HashMap::new();
    let mut decided = HashMap::new();
    for e in log {
        match &e.event {
            Event::ApprovalRequested {
                approval_id,
                arguments,
                ..
            } => {
                let detail = arguments["detail"].as_str().unwrap_or_default();
                asked.insert(approval_id, detail);
            }
            Event::ApprovalDecided {
                approval_id,
                decision,
                by,
                ..
            } => {
                let detail = asked.get(approval_id.as_str()).copied().unwrap_or_default();
                let wanted = if allows(detail) {
                    Decision::Approved
                } else {
                    Decision::Denied
                };
                let person = *decision == wanted && by == "terminal";
                let dead = *decision == Decision::Stopped && by == rein_host::record::DEAD_DRIVER;
                if !person && !dead {
                    broken.push(format!(
                        "{whose}question {approval_id} ({detail}) {decision:?} by {by}; the person said {wanted:?}"
                    ));
                }
                if decided.insert(approval_id.clone(), *decision).is_some() {
                    broken.push(format!("{whose}question {approval_id} decided twice"));
                }
            }
            _ => {}
        }
    }
}

/// Each run's command ran at most once, never without a recorded yes, and
/// once when its result says it ran.
fn ran_once(dir: &Path, log: &[StoredEvent], broken: &mut Vec<String>) {
    let text = std::fs::read_to_string(root_path(dir).join(RAN)).unwrap_or_default();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for mark in text.lines() {
        *counts.entry(mark).or_default() += 1;
    }
    let asked: HashMap<&str, &str> = log
        .iter()
        .filter_map(|e| match &e.event {
            Event::ApprovalRequested {
                approval_id,
                arguments,
                ..
            } => Some((approval_id.as_str(), arguments["detail"].as_str()?)),
            _ => None,
        })
        .collect();
    let approved: Vec<&str> = log
        .iter()
        .filter_map(|e| match &e.event {
            Event::ApprovalDecided {
                approval_id,
                decision: Decision::Approved,
                ..
            } => asked.get(approval_id.as_str()).copied(),
            _ => None,
        })
        .collect();
    for (mark, n) in &counts {
        if *n > 1 {
            broken.push(format!("the command of run {mark} ran {n} times"));
        }
        if !approved.contains(&format!("count {mark}").as_str()) {
            broken.push(format!(
                "the command of run {mark} ran with no yes recorded"
            ));
        }
    }
    let ends = ends(log);
    for (call, _, detail) in calls(log).iter().filter(|(_, tool, _)| tool == "Bash") {
        let Some(mark) = detail.strip_prefix("count ") else {
            continue;
        };
        if ends.get(call) == Some(&true) && counts.get(mark) != Some(&1) {
            broken.push(format!(
                "the command of run {mark} is recorded as run but ran {} times",
                counts.get(mark).copied().unwrap_or(0)
            ));
        }
    }
}

/// A refused removal left its file; a file reported written holds what
/// was written.
fn files_as_results_say(dir: &Path, log: &[StoredEvent], broken: &mut Vec<String>) {
    let root = root_path(dir);
    if !root.join("old.txt").exists() {
        broken.push("old.txt is gone, though its removal was refused".into());
    }
    let ends = ends(log);
    let written = calls(log)
        .iter()
        .any(|(call, tool, _)| tool == "Write" && ends.get(call) == Some(&true));
    let out = std::fs::read_to_string(root.join("out.txt")).ok();
    if written && out.as_deref() != Some("hello\n") {
        broken.push(format!("out.txt holds {out:?} after it was written"));
    }
}
