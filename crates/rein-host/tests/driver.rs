//! The driver over real child processes: a shell script stands in for the
//! CLI, printing recorded lines with delays; the run is recorded in a real
//! SQLite session and read back by the trace report.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rein_host::{ClaudeStream, Ended, HostSpec, Joined, Progress, Recorder, drive};
use rein_sessions::{Event, ResultSource, SqliteStore, Store, read_all};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const SECRET: &str = "sk-ant-api03-CANARY-7f3a9c";

fn lines() -> Vec<Value> {
    vec![
        json!({"type": "system", "subtype": "init", "model": "claude-test"}),
        json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Bash",
               "input": {"command": format!("curl -H 'key: {SECRET}' x"), "description": "Fetch the page"}}]}}),
        json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "page", "is_error": false}]}}),
        json!({"type": "assistant", "message": {"content": [{"type": "text", "text": "done"}]}}),
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "All done.",
               "num_turns": 2, "duration_ms": 1500, "total_cost_usd": 0.0123,
               "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 50, "cache_creation_input_tokens": 0}}),
    ]
}

/// A script printing `lines` 20 ms apart, then running `tail` (shell).
fn script(dir: &Path, lines: &[Value], tail: &str) -> Vec<String> {
    let data = dir.join("lines.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&data, text).unwrap();
    let path = dir.join("fake-claude.sh");
    std::fs::write(
        &path,
        format!(
            "while IFS= read -r line; do printf '%s\\n' \"$line\"; sleep 0.02; done < '{}'\n{tail}\n",
            data.display()
        ),
    )
    .unwrap();
    vec!["/bin/sh".into(), path.display().to_string()]
}

async fn store(dir: &Path) -> Arc<dyn Store> {
    Arc::new(SqliteStore::open(dir.join("rein.db")).await.unwrap())
}

fn spec(argv: Vec<String>, dir: &Path) -> HostSpec {
    let mut spec = HostSpec::new(argv, dir.to_path_buf()).env_from(["PATH"]);
    spec.env.insert("ANTHROPIC_API_KEY".into(), SECRET.into());
    spec
}

#[tokio::test]
async fn a_hosted_run_is_recorded_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path()).await;
    let mut recorder = Recorder::start(store.clone(), "claude", "claude", "fetch it")
        .await
        .unwrap();
    let session = recorder.session().to_owned();
    let mut shown: Vec<String> = Vec::new();
    let mut show = |p: &Progress| shown.push(p.to_string());
    let mut reducer = ClaudeStream::new(&dir.path().display().to_string());
    let driven = drive(
        &spec(script(dir.path(), &lines(), ""), dir.path()),
        &mut reducer,
        Some(&mut recorder),
        &mut show,
        CancellationToken::new(),
        Joined::default(),
    )
    .await
    .unwrap();
    assert_eq!(driven.ended, Ended::Finished);
    assert_eq!(driven.outcome.text.as_deref(), Some("All done."));
    assert_eq!(driven.exit_code, Some(0));
    assert!(
        shown.contains(&"tool Bash: Fetch the page".to_owned()),
        "{shown:?}"
    );

    let events = read_all(store.as_ref(), &session).await.unwrap();
    let report = rein_trace::report(&session, &events);
    assert_eq!(report.totals.model_calls, 1);
    assert_eq!(report.totals.cost_micro_usd, 12_300);
    assert_eq!(report.totals.usage.cache_read, 50);
    assert_eq!((report.totals.tools.total, report.totals.tools.ok), (1, 1));
    assert_eq!(report.runs[0].outcome.map(|o| o.as_str()), Some("finished"));
    let log = serde_json::to_string(&events).unwrap();
    assert!(!log.contains(SECRET) && !log.contains("curl"), "{log}");
    assert!(!format!("{shown:?}").contains(SECRET));
}

#[tokio::test]
async fn a_run_killed_at_its_limit_mid_turn_leaves_nothing_running() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path()).await;
    let mut recorder = Recorder::start(store.clone(), "claude", "claude", "p")
        .await
        .unwrap();
    let session = recorder.session().to_owned();
    let pid_file = dir.path().join("bg.pid");
    // Two records of the turn, a call left open, a background child, a hang.
    let tail = format!("sleep 300 & echo $! > '{}'\nsleep 300", pid_file.display());
    let mut spec = spec(script(dir.path(), &lines()[..2], &tail), dir.path());
    spec.timeout = Duration::from_secs(2);
    let mut reducer = ClaudeStream::new("");
    let driven = drive(
        &spec,
        &mut reducer,
        Some(&mut recorder),
        &mut |_| {},
        CancellationToken::new(),
        Joined::default(),
    )
    .await
    .unwrap();
    assert_eq!(driven.ended, Ended::Timeout);
    assert_eq!(
        driven.outcome.failure.as_deref(),
        Some("stopped at the time limit (2 s)")
    );
    let bg: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !Path::new(&format!("/proc/{bg}")).exists() || is_zombie(bg),
        "the background child survived"
    );

    let events = read_all(store.as_ref(), &session).await.unwrap();
    let interrupted = events
        .iter()
        .filter(|e| {
            matches!(&e.event,
        Event::ToolResult { call_id, source: ResultSource::Interrupted, .. } if call_id == "t1")
        })
        .count();
    assert_eq!(interrupted, 1, "the open call has exactly one result");
    assert!(
        events.iter().any(
            |e| matches!(&e.event, Event::RunFinished { outcome, .. } if outcome == "timeout")
        )
    );
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}

#[tokio::test]
async fn a_child_killed_mid_turn_is_a_failure_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("me.pid");
    let tail = format!(
        "echo $$ > '{}'\necho \"oops $ANTHROPIC_API_KEY\" >&2\nsleep 300",
        pid_file.display()
    );
    let argv = script(dir.path(), &lines()[..2], &tail);
    let spec = spec(argv, dir.path());
    let killer = tokio::spawn(async move {
        for _ in 0..500 {
            if let Ok(pid) = std::fs::read_to_string(&pid_file)
                && let Ok(pid) = pid.trim().parse::<i32>()
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let mut reducer = ClaudeStream::new("");
    let driven = drive(
        &spec,
        &mut reducer,
        None,
        &mut |_| {},
        CancellationToken::new(),
        Joined::default(),
    )
    .await
    .unwrap();
    killer.await.unwrap();
    assert_eq!(driven.ended, Ended::Failed);
    let failure = driven.outcome.failure.unwrap();
    assert!(
        failure.starts_with("claude: exited without a result event (killed by a signal)"),
        "{failure}"
    );
    assert!(failure.contains("stderr: oops [redacted]"), "{failure}");
    assert!(!failure.contains(SECRET));
}

#[tokio::test]
async fn the_child_sees_only_the_named_environment_and_long_lines_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let env_file = dir.path().join("env.txt");
    // SAFETY-free: a variable of this test process the child must not see.
    let mut lines = lines();
    lines.insert(2, json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "x", "content": "y".repeat(4000)}]}}));
    let argv = script(
        dir.path(),
        &lines,
        &format!("env > '{}'", env_file.display()),
    );
    let mut spec = spec(argv, dir.path());
    spec.max_line = 1000;
    let mut reducer = ClaudeStream::new("");
    let driven = drive(
        &spec,
        &mut reducer,
        None,
        &mut |_| {},
        CancellationToken::new(),
        Joined::default(),
    )
    .await
    .unwrap();
    assert_eq!(driven.ended, Ended::Finished, "{:?}", driven.outcome);
    assert_eq!(driven.summary["oversize_records"], 1);
    let env = std::fs::read_to_string(&env_file).unwrap();
    let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
    for name in &names {
        assert!(
            ["PATH", "ANTHROPIC_API_KEY", "PWD", "SHLVL", "_"].contains(name),
            "unexpected {name} in {names:?}"
        );
    }
}

#[tokio::test]
async fn a_person_stops_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let argv = script(dir.path(), &lines()[..1], "sleep 300");
    let stop = CancellationToken::new();
    let later = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        later.cancel();
    });
    let mut reducer = ClaudeStream::new("");
    let driven = drive(
        &spec(argv, dir.path()),
        &mut reducer,
        None,
        &mut |_| {},
        stop,
        Joined::default(),
    )
    .await
    .unwrap();
    assert_eq!(driven.ended, Ended::Stopped);
    assert_eq!(
        driven.outcome.failure.as_deref(),
        Some("stopped by a person")
    );
}

#[tokio::test]
async fn a_hosted_agent_repeating_itself_is_nudged_on_screen_then_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = vec![json!({"type": "system", "subtype": "init", "model": "m"})];
    for i in 0..8 {
        let id = format!("t{i}");
        lines.push(json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": "/a"}}]}}));
        lines.push(json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": id, "content": "same"}]}}));
    }
    let argv = script(dir.path(), &lines, "sleep 300");
    let mut shown: Vec<String> = Vec::new();
    let mut reducer = ClaudeStream::new("");
    let driven = drive(
        &spec(argv, dir.path()),
        &mut reducer,
        None,
        &mut |p: &Progress| shown.push(p.to_string()),
        CancellationToken::new(),
        Joined::default(),
    )
    .await
    .unwrap();
    assert_eq!(driven.ended, Ended::LoopDetected);
    assert_eq!(
        shown.iter().filter(|s| s.starts_with("repeating")).count(),
        1,
        "{shown:?}"
    );
    assert_eq!(
        driven.summary["tool_calls"], 5,
        "stopped at the fifth repeat"
    );
}

#[tokio::test]
async fn a_stream_run_is_watched_as_a_session_and_closing_it_stops_the_run() {
    use rein_host::session::{InputHolder, InputResult, SessionHost};
    use std::sync::{Arc, Mutex};
    let dir = tempfile::tempdir().unwrap();
    let host = SessionHost::new();
    let screen: Arc<Mutex<Vec<u8>>> = Arc::default();
    // Watch from the moment the session opens, then close it mid-turn.
    let watcher = {
        let (host, screen) = (host.clone(), screen.clone());
        tokio::spawn(async move {
            while host.listed("run-1").is_none() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let sink = screen.clone();
            host.attach("run-1", "w", move |c| {
                sink.lock().unwrap().extend_from_slice(c)
            });
            let typed = (
                host.take_over("run-1", "w", b"hello?"),
                host.route_input("run-1", "w", "hello?"),
                host.listed("run-1").unwrap().holder,
            );
            while !String::from_utf8_lossy(&screen.lock().unwrap()).contains("done Bash") {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            host.close("run-1");
            typed
        })
    };
    let argv = script(dir.path(), &lines()[..3], "sleep 300");
    let mut reducer = ClaudeStream::new("");
    let driven = drive(
        &spec(argv, dir.path()),
        &mut reducer,
        None,
        &mut |_| {},
        CancellationToken::new(),
        Joined {
            view: Some((host.clone(), "run-1".into())),
            asks: None,
            hears: None,
            stays: None,
        },
    )
    .await
    .unwrap();
    // A run that hears no words: neither keys nor a line are sent, and
    // neither takes the session from the agent.
    assert_eq!(
        watcher.await.unwrap(),
        (
            Err(InputResult::NotHeard),
            InputResult::NotHeard,
            InputHolder::Agent
        ),
        "a stream that hears nothing takes no typed input"
    );
    assert_eq!(driven.ended, Ended::Stopped);
    let seen = String::from_utf8_lossy(&screen.lock().unwrap()).into_owned();
    assert!(
        seen.contains(".. started: claude-test") && seen.contains(".. tool Bash: Fetch the page"),
        "{seen}"
    );
    assert!(!seen.contains(SECRET) && !seen.contains("curl"), "{seen}");
    assert!(host.listed("run-1").is_none());
}

#[tokio::test]
async fn an_agent_quiet_for_longer_than_its_lock_keeps_its_session_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path()).await;
    let mut recorder = Recorder::start(store.clone(), "claude", "claude", "p")
        .await
        .unwrap()
        .lock_ttl(Duration::from_millis(400))
        .await
        .unwrap();
    let session = recorder.session().to_owned();
    // Thinking for longer than the hold lasts, between a call and its result.
    let all = lines();
    let data = dir.path().join("rest.jsonl");
    std::fs::write(
        &data,
        all[2..]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    )
    .unwrap();
    let tail = format!("sleep 1.5\ncat '{}'", data.display());
    let argv = script(dir.path(), &all[..2], &tail);
    let mut reducer = ClaudeStream::new("");
    // Meanwhile another writer tries to take the session, again and again.
    let other = {
        let (store, session) = (store.clone(), session.clone());
        tokio::spawn(async move {
            for _ in 0..12 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let taken = store
                    .acquire(&session, "another", Duration::from_secs(5))
                    .await;
                if taken.is_ok() {
                    return true;
                }
            }
            false
        })
    };
    let driven = drive(
        &spec(argv, dir.path()),
        &mut reducer,
        Some(&mut recorder),
        &mut |_| {},
        CancellationToken::new(),
        Joined::default(),
    )
    .await
    .unwrap();
    assert_eq!(driven.ended, Ended::Finished, "{:?}", driven.outcome);
    assert!(
        !other.await.unwrap(),
        "another writer took the session while its agent was quiet"
    );
    let events = read_all(store.as_ref(), &session).await.unwrap();
    assert!(
        events.iter().any(
            |e| matches!(&e.event, Event::RunFinished { outcome, .. } if outcome == "finished")
        )
    );
}

/// A person who, asked, has a yes and then a stop posted at once (as two
/// surfaces might), and answers nothing here.
struct YesThenStop(Arc<dyn Store>, String);

impl rein_host::person::Person for YesThenStop {
    fn ask(
        &self,
        question: rein_host::person::Question,
    ) -> futures::future::BoxFuture<'static, Option<rein_host::person::Answer>> {
        let (store, session) = (self.0.clone(), self.1.clone());
        Box::pin(async move {
            use rein_sessions::InboxItem;
            let yes = InboxItem::Decision {
                approval_id: question.approval_id,
                decision: rein_wire::permission::Decision::Approved,
                lease: Some(rein_wire::permission::LeaseScope::Once),
                by: "alice".into(),
            };
            store.post(&session, yes).await.unwrap();
            let stop = InboxItem::Stop { by: "bob".into() };
            store.post(&session, stop).await.unwrap();
            None
        })
    }
}

/// A yes and a stop taken from the inbox together: the yes is recorded,
/// the stop wins — the program is told no and the run ends stopped.
#[tokio::test(flavor = "current_thread")]
async fn a_stop_taken_with_a_yes_ends_the_run_and_the_call_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(rein_sessions::MemoryStore::new());
    let mut recorder = Recorder::start(store.clone(), "claude", "claude", "write a.txt")
        .await
        .unwrap();
    let session = recorder.session().to_owned();
    let person = Arc::new(YesThenStop(store.clone(), session.clone()));
    let (questions, asks) = rein_host::asks::Asks::new(person);
    let (reply, verdict) = tokio::sync::oneshot::channel();
    questions
        .send(rein_host::asks::Asked {
            question: rein_host::person::Question {
                approval_id: String::new(),
                call_id: "t1".into(),
                tool: "Write".into(),
                detail: "a.txt".into(),
                shows: "a.txt: hello".into(),
            },
            reply,
        })
        .await
        .unwrap();
    let argv = script(dir.path(), &lines()[..1], "sleep 300");
    let mut reducer = ClaudeStream::new("");
    let joined = Joined {
        asks: Some(asks),
        ..Joined::default()
    };
    let driven = drive(
        &spec(argv, dir.path()),
        &mut reducer,
        Some(&mut recorder),
        &mut |_| {},
        CancellationToken::new(),
        joined,
    )
    .await
    .unwrap();
    assert_eq!(driven.ended, Ended::Stopped);
    assert_eq!(verdict.await, Ok(false), "the call is never run");
    let log = read_all(store.as_ref(), &session).await.unwrap();
    let decided: Vec<_> = log
        .iter()
        .filter_map(|e| match &e.event {
            Event::ApprovalDecided { decision, by, .. } => Some((*decision, by.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        decided,
        vec![(rein_wire::permission::Decision::Approved, "alice".into())]
    );
    assert!(
        log.iter()
            .any(|e| matches!(&e.event, Event::Stopped { by } if by == "bob")),
        "the stop is recorded"
    );
    assert!(store.control(&session).await.unwrap().pending.is_empty());
}
