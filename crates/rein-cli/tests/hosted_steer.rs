//! Steering a hosted Claude Code run: the real CLI (npm, pinned:
//! `rein_testing::clis`) under `rein agents run claude`, against a loopback
//! Messages API stand-in this test owns. While the model's first answer is
//! held, words are said two ways — `rein say` from another process, and a
//! line typed into `rein agents attach` — and both are recorded in the
//! session and reach the model's next request; the attached viewer's line
//! takes no lease (nothing is recorded as a takeover). A stop posted from
//! another process ends a hosted run that waits on no question.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `rein agents run claude` on the real CLI in `work`, asked to read
/// `notes.txt`, against a stand-in whose answer is held until `gate`
/// opens; bounded, so that a word or stop not heard fails, never hangs.
async fn reading_run(
    home: &Path,
    work: &Path,
    gate: Arc<tokio::sync::Notify>,
) -> (rein_testing::FakeServer, std::process::Command) {
    std::fs::write(work.join("notes.txt"), "the notes\n").unwrap();
    let notes = work.join("notes.txt").display().to_string();
    let server =
        common::hosted::messages_stand_in("Read", json!({"file_path": notes}), Some(gate)).await;
    let mut cmd = common::rein_at(home);
    cmd.current_dir(work)
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test-NOT-A-KEY")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args(["agents", "run", "claude", "--prompt", "read notes.txt"])
        .args(["--timeout", "60"])
        .args(["--env", "ANTHROPIC_BASE_URL", "--env", "ANTHROPIC_API_KEY"])
        .args(["--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "--"])
        .arg(rein_testing::clis::claude_code())
        .args(["-p", "--output-format", "stream-json", "--verbose"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    (server, cmd)
}

fn said_in(events: &[rein::sessions::Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            rein::sessions::Event::SteerSaid { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn words_said_mid_run_by_rein_say_and_an_attached_line_reach_the_models_next_request() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let gate = Arc::new(tokio::sync::Notify::new());
    // The model asks to read notes.txt; its answer is held until the gate opens.
    let (server, mut cmd) = reading_run(home.path(), work.path(), gate.clone()).await;
    let mut run = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let out = common::hosted::capture(run.stdout.take().unwrap());
    let mut lines = std::io::BufReader::new(run.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    let session = loop {
        let line = lines.next().unwrap().unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if let Some(rest) = line.split("rein agents attach ").nth(1) {
            break rest.split('`').next().unwrap().to_owned();
        }
    };
    let err: common::hosted::Buf = Arc::default();
    {
        let sink = err.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut sink = sink.lock().unwrap();
                sink.extend_from_slice(line.as_bytes());
                sink.push(b'\n');
            }
        });
    }

    // The model is "thinking" (its answer held) when the words are said.
    wait_until("the model was asked", || {
        server.requests().iter().any(|r| {
            let body = String::from_utf8_lossy(&r.body);
            body.contains("read notes.txt") && body.contains("\"Read\"")
        })
    });
    let said = common::rein_at(home.path())
        .args(["say", &session, "also mention the bananas"])
        .output()
        .unwrap();
    assert!(said.status.success(), "{}", common::stderr(&said));

    let mut viewer = common::rein_at(home.path())
        .args(["agents", "attach", &session, "--as", "bob"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let viewer_err = common::hosted::capture(viewer.stderr.take().unwrap());
    let _viewer_out = common::hosted::capture(viewer.stdout.take().unwrap());
    let text = common::hosted::text;
    wait_until("the viewer attached", || {
        text(&viewer_err).contains("attached as bob#")
    });
    let mut keys = viewer.stdin.take().unwrap();
    keys.write_all(b"and the cherries\r").unwrap();
    keys.flush().unwrap();
    wait_until("the viewer's line was said", || {
        text(&viewer_err).contains("said: the agent hears it at its next step")
    });

    // Both are in the log before the model answers.
    let events = loop {
        let events = common::hosted::recorded(home.path(), &session).await;
        if said_in(&events).len() == 2 {
            break events;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        said_in(&events),
        ["also mention the bananas", "and the cherries"]
    );
    gate.notify_one();

    let status = tokio::task::spawn_blocking(move || run.wait().unwrap())
        .await
        .unwrap();
    let _ = viewer.kill();
    let _ = viewer.wait();
    let (stdout, stderr) = (text(&out), seen + &text(&err));
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("All done."), "{stdout}\n{stderr}");
    // The model's next request carries both, after the read's result.
    let next = server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .find(|body| body.contains("\"tool_result\""))
        .unwrap_or_default();
    assert!(
        next.contains("also mention the bananas") && next.contains("and the cherries"),
        "{next}"
    );
    // A line said is not a takeover: the agent kept its session.
    let events = common::hosted::recorded(home.path(), &session).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, rein::sessions::Event::HostIntervened { .. })),
        "{events:?}"
    );
    assert!(!stderr.contains("NOT-A-KEY") && !stdout.contains("NOT-A-KEY"));
}

/// A stop posted from another process ends a hosted run that is not
/// waiting on any question: the run ends stopped at once (its model's
/// answer never arrives), the stop is in its log, and it exits non-zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rein_stop_ends_a_hosted_run_mid_answer() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // The gate never opens: the model is still answering when the stop comes.
    let gate = Arc::new(tokio::sync::Notify::new());
    let (server, mut cmd) = reading_run(home.path(), work.path(), gate.clone()).await;
    let mut run = cmd.stdout(Stdio::null()).spawn().unwrap();
    let mut lines = std::io::BufReader::new(run.stderr.take().unwrap()).lines();
    let session = loop {
        let line = lines.next().unwrap().unwrap();
        if line.contains("rein agents attach ") {
            break common::hosted::attach_id(&line);
        }
    };
    wait_until("the model was asked", || {
        server
            .requests()
            .iter()
            .any(|r| String::from_utf8_lossy(&r.body).contains("read notes.txt"))
    });
    let stopped = common::rein_at(home.path())
        .args(["stop", &session])
        .output()
        .unwrap();
    assert!(stopped.status.success(), "{}", common::stderr(&stopped));
    let status = tokio::task::spawn_blocking(move || run.wait().unwrap())
        .await
        .unwrap();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(!status.success(), "{}", rest.join("\n"));
    let events = common::hosted::recorded(home.path(), &session).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, rein::sessions::Event::Stopped { .. })),
        "{events:?}"
    );
}
