//! The real Claude Code CLI hosted by `rein agents run claude`, its rein
//! killed outright while the agent's write waits for a person. The next
//! rein that looks — `rein approve` itself — closes the dead run: its
//! question dies with it — not listed, a later "yes" refused and never
//! run — and the call it asked about has its one result.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_of_a_hosted_run_whose_rein_was_killed_runs_nothing_when_answered_later() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let target = work.path().join("out.txt");
    let input = json!({"file_path": target.display().to_string(), "content": "hello\n"});
    let server = common::hosted::messages_stand_in("Write", input, None).await;
    let cmd = common::hosted::claude(
        home.path(),
        work.path(),
        &server,
        "write hello to out.txt",
        &[],
    );
    // Its stderr is kept open: a closed pipe would end it early.
    let common::hosted::Silent {
        mut child,
        stdin,
        lines: _lines,
        session,
    } = common::hosted::silent(cmd);
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
