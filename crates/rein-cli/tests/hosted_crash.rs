//! The real Claude Code CLI hosted by `rein agents run claude`, its rein
//! killed outright while the agent's write waits for a person. The next
//! rein that looks — `rein approve` itself — closes the dead run: its
//! question dies with it — not listed, a later "yes" refused and never
//! run — and the call it asked about has its one result.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

mod common;

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

use rein_testing::FakeServer;
use serde_json::json;

/// `rein agents run claude` on the real CLI in `work`, the model asking to
/// write `out.txt`.
fn hosted(home: &Path, work: &Path, server: &FakeServer) -> Command {
    let claude = rein_testing::clis::claude_code();
    let mut cmd = common::rein_at(home);
    cmd.current_dir(work)
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test-NOT-A-KEY")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args([
            "agents",
            "run",
            "claude",
            "--prompt",
            "write hello to out.txt",
        ])
        .args(["--env", "ANTHROPIC_BASE_URL", "--env", "ANTHROPIC_API_KEY"])
        .args(["--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "--"])
        .arg(claude)
        .args(["-p", "--output-format", "stream-json", "--verbose"]);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_of_a_hosted_run_whose_rein_was_killed_runs_nothing_when_answered_later() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let target = work.path().join("out.txt");
    let input = json!({"file_path": target.display().to_string(), "content": "hello\n"});
    let server = common::hosted::messages_stand_in("Write", input, None).await;
    let mut child = hosted(home.path(), work.path(), &server)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let session = loop {
        let line = lines.next().unwrap().unwrap();
        if line.contains("rein agents attach ") {
            break common::hosted::attach_id(&line);
        }
    };
    let approval = common::hosted::pending_approval(home.path(), &session);
    // Killed outright while the question waits: no goodbye.
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);

    // The next rein that looks closes the dead run: `rein approve` itself.
    let pending = common::rein_at(home.path())
        .args(["approve", &session])
        .output()
        .unwrap();
    assert!(
        !common::stdout(&pending).contains(&approval),
        "the dead run's question is still listed:\n{}",
        common::stdout(&pending)
    );
    let late = common::rein_at(home.path())
        .args(["approve", &session, &approval, "yes"])
        .output()
        .unwrap();
    assert!(!late.status.success(), "{}", common::stdout(&late));
    assert!(!target.exists(), "nothing wrote the file");
    let recorded = common::hosted::approvals(home.path(), &session).await;
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0].decision, "stopped", "{recorded:?}");
    // Every call the run recorded has its one result; the run is closed.
    let store = rein::sessions::SqliteStore::open(home.path().join("rein.db"))
        .await
        .unwrap();
    let log = rein::sessions::read_all(&store, &session).await.unwrap();
    let open = rein::sessions::recovery::dangling(&log);
    assert!(open.is_clean(), "{open:?}");
}
