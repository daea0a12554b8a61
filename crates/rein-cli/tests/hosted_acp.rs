//! A real ACP agent hosted by `rein agents run acp`: Claude Code through
//! Zed's adapter (`@zed-industries/claude-code-acp`, npm, pinned:
//! `rein_testing::clis`), against a loopback Messages API stand-in this test
//! owns, whose model asks to write a file. The adapter asks permission
//! through ACP with only the call's id and title; rein's client shows the
//! person the call as it was announced (`edit out.txt`), records the
//! question, and a yes lands the file while a no does not.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_acp_asks_through_rein_a_yes_lands_and_a_no_does_not() {
    let adapter = rein_testing::clis::claude_code_acp();
    for (answer, lands) in [("y\n", true), ("n\n", false)] {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let target = work.path().join("out.txt");
        let input = json!({"file_path": target.display().to_string(), "content": "hello\n"});
        let server = common::hosted::messages_stand_in("Write", input, None).await;
        let mut cmd = common::rein_at(home.path());
        cmd.current_dir(work.path())
            .env("ANTHROPIC_BASE_URL", server.base_url())
            .env("ANTHROPIC_API_KEY", "sk-ant-test-NOT-A-KEY")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .args(["agents", "run", "acp", "--prompt", "write hello to out.txt"])
            .args(["--env", "ANTHROPIC_BASE_URL", "--env", "ANTHROPIC_API_KEY"])
            .args(["--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "--"])
            .arg("node")
            .arg(&adapter);
        let out =
            tokio::task::spawn_blocking(move || common::run_with_stdin(cmd, answer.as_bytes()))
                .await
                .unwrap();
        let (stdout, stderr) = (common::stdout(&out), common::stderr(&out));
        assert!(out.status.success(), "{stderr}");
        // A no ends the adapter's turn there; a yes runs on to its answer.
        assert_eq!(stdout.contains("All done."), lands, "{stdout}\n{stderr}");
        // The file and what it writes, not the kind alone.
        assert!(stderr.contains("[rein] the agent asks to run:"), "{stderr}");
        assert!(
            stderr.contains("out.txt") && stderr.contains("hello"),
            "{stderr}"
        );
        assert_eq!(target.is_file(), lands, "answer {answer:?}: {stderr}");
        let session = common::hosted::attach_id(&stderr);
        let decision = if lands { "approved" } else { "denied" };
        assert_eq!(
            common::hosted::approvals(home.path(), &session).await,
            [common::hosted::Recorded {
                tool: "edit".to_owned(),
                detail: "out.txt".to_owned(),
                decision: decision.to_owned(),
                by: "stdin:person".to_owned()
            }],
            "{stderr}"
        );
        assert!(!stderr.contains("NOT-A-KEY") && !stdout.contains("NOT-A-KEY"));
    }
}
