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
//! Not here: killing (`campaign`); checking (`hosted_check`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use futures::future::BoxFuture;
use rein_host::config::{AgentEntry, AgentKind};
use rein_host::person::{Answer, Person, Question};
use rein_host::{ClaudeStream, Ended, Joined, Recorder};
use rein_sessions::{Event, SqliteStore, Store, StoredEvent};
use rein_testing::{FakeServer, RecordedRequest, Reply, ScriptedCall, ScriptedMessage};
use serde_json::{Value, json};

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
    let entry = claude(&model.base_url(), &home);
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
        stays: None,
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

/// Claude Code as the trial runs it: printing stream-json, its model the
/// stand-in at `base_url`, its own home.
fn claude(base_url: &str, home: &Path) -> AgentEntry {
    AgentEntry {
        kind: AgentKind::Claude,
        argv: vec![
            rein_testing::clis::claude_code().display().to_string(),
            "-p".into(),
            "--output-format".into(),
            "stream-json".into(),
            "--verbose".into(),
        ],
        env: [
            ("ANTHROPIC_BASE_URL", base_url.to_owned()),
            ("ANTHROPIC_API_KEY", "sk-ant-chaos-NOT-A-KEY".to_owned()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
            ("HOME", home.display().to_string()),
        ]
        .map(|(k, v)| (k.to_owned(), v))
        .into(),
        env_from: Vec::new(),
        timeout: RUN_LIMIT,
        max_line: rein_host::child::DEFAULT_MAX_LINE,
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
        let step = results_in(&body);
        let message = match steps.get(step).filter(|_| main) {
            Some((tool, input)) => ScriptedMessage::text(&["On it."]).with_call(ScriptedCall::to(tool, input.clone()).id(&format!("toolu_{mark}_{step}")).in_fragments(2)),
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
pub(crate) fn ending(log: &[StoredEvent]) -> Option<rein_wire::Ending> {
    log.iter().find_map(|e| match &e.event {
        Event::RunFinished { outcome, .. } => Some(*outcome),
        _ => None,
    })
}
