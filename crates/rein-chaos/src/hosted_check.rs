//! What must hold after a hosted trial (`hosted`), however often it was
//! killed: each run's log whole with nothing left unfinished and every
//! call answered once; one run finished, the last, and every run before it
//! closed as its driver's death left it (or never begun); every decision
//! the person's, or a stop by the rein that closed a dead run; each run's
//! command run at most once, never without its recorded yes, and once when
//! its result says it ran; the files as the results say.
//!
//! Not here: the checks of the log and calls every surface shares
//! (`check`, used here), running a trial (`hosted`).

use std::collections::HashMap;
use std::path::Path;

use rein_sessions::{Event, ResultSource, SqliteStore, Store, StoredEvent, ToolStatus};
use rein_wire::permission::Decision;

use crate::check::{Story, answered_once, closed, read_whole};
use crate::child::{root_path, store_path};
use crate::hosted::{RAN, allows, ending};

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
    let called = calls(&all);
    ran_once(dir, &all, &called, &mut broken);
    files_as_results_say(dir, &called, &mut broken);
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
    let called = calls(&all);
    let done = |tool: &str, detail: &str| {
        called
            .iter()
            .any(|(t, d, ran)| t == tool && d.starts_with(detail) && *ran)
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

/// Every call recorded, with its one detail and whether its result says
/// it ran (not interrupted, not an error): (tool, detail, ran).
fn calls(log: &[StoredEvent]) -> Vec<(String, String, bool)> {
    let ran: HashMap<&str, bool> = log
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolResult {
                call_id,
                status,
                source,
                ..
            } => Some((
                call_id.as_str(),
                *status == ToolStatus::Ok && *source != ResultSource::Interrupted,
            )),
            _ => None,
        })
        .collect();
    log.iter()
        .filter_map(|e| match &e.event {
            Event::ToolCalled {
                call_id,
                tool,
                arguments,
                ..
            } => Some((
                tool.clone(),
                arguments["detail"].as_str().unwrap_or_default().to_owned(),
                ran.get(call_id.as_str()) == Some(&true),
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
fn ran_once(
    dir: &Path,
    log: &[StoredEvent],
    called: &[(String, String, bool)],
    broken: &mut Vec<String>,
) {
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
    for (_, detail, ran) in called.iter().filter(|(tool, _, _)| tool == "Bash") {
        let Some(mark) = detail.strip_prefix("count ") else {
            continue;
        };
        if *ran && counts.get(mark) != Some(&1) {
            broken.push(format!(
                "the command of run {mark} is recorded as run but ran {} times",
                counts.get(mark).copied().unwrap_or(0)
            ));
        }
    }
}

/// A refused removal left its file; a file reported written holds what
/// was written.
fn files_as_results_say(dir: &Path, called: &[(String, String, bool)], broken: &mut Vec<String>) {
    let root = root_path(dir);
    if !root.join("old.txt").exists() {
        broken.push("old.txt is gone, though its removal was refused".into());
    }
    let written = called.iter().any(|(tool, _, ran)| tool == "Write" && *ran);
    let out = std::fs::read_to_string(root.join("out.txt")).ok();
    if written && out.as_deref() != Some("hello\n") {
        broken.push(format!("out.txt holds {out:?} after it was written"));
    }
}
