//! ACP both ways over real processes: `rein agents run acp` (rein-host's
//! ACP client) drives `rein acp --scripted` (rein served as an ACP agent)
//! as a child speaking JSON-RPC on its stdio. The agent's write is asked
//! through `session/request_permission`, and only the person at the
//! client's terminal decides it.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::path::Path;

fn run_acp(home: &Path, work: &Path, prompt: &str, answer: &[u8]) -> std::process::Output {
    run_acp_for(home, work, prompt, answer, "60")
}

/// The same, with a time limit of `seconds`.
fn run_acp_for(
    home: &Path,
    work: &Path,
    prompt: &str,
    answer: &[u8],
    seconds: &str,
) -> std::process::Output {
    let mut cmd = common::rein_at(home);
    cmd.current_dir(work)
        .env("RUST_LOG", "off")
        .args([
            "agents",
            "run",
            "acp",
            "--prompt",
            prompt,
            "--env",
            "REIN_HOME",
            "--timeout",
            seconds,
            "--",
        ])
        .arg(env!("CARGO_BIN_EXE_rein"))
        .args(["acp", "--scripted"]);
    common::run_with_stdin(cmd, answer)
}

#[test]
fn an_acp_agent_writes_only_after_the_person_says_yes() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();

    let out = run_acp(home.path(), work.path(), "write notes.txt", b"y\n");
    let (stdout, stderr) = (common::stdout(&out), common::stderr(&out));
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("[rein] the agent asks to run:"), "{stderr}");
    assert!(
        stderr.contains("notes.txt") && stderr.contains("written by rein's scripted model"),
        "{stderr}"
    );
    assert!(stderr.contains(".. tool edit"), "{stderr}");
    assert!(stdout.contains("Writing it."), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(work.path().join("notes.txt")).unwrap(),
        "written by rein's scripted model\n"
    );
    assert!(stderr.contains("acp finished in"), "{stderr}");
    assert!(stderr.contains("cost unknown"), "{stderr}");

    // No: nothing is written, and the refusal is said.
    let out = run_acp(home.path(), work.path(), "write other.txt", b"n\n");
    let stderr = common::stderr(&out);
    assert!(stderr.contains(".. refused edit"), "{stderr}");
    assert!(stderr.contains("1 refused"), "{stderr}");
    assert!(!work.path().join("other.txt").exists());

    // Nobody answers here (stdin closed): the question waits for any
    // other surface until the run's limit, and nothing is written.
    let out = run_acp_for(home.path(), work.path(), "write third.txt", b"", "3");
    let stderr = common::stderr(&out);
    assert!(stderr.contains("no answer here"), "{stderr}");
    assert!(stderr.contains("time limit"), "{stderr}");
    assert!(!work.path().join("third.txt").exists());

    // Both sides are recorded: the hosted run (with its approvals) and
    // rein's own ACP session (decided by the ACP client's person).
    let list = common::rein_at(home.path())
        .args(["agents", "list"])
        .output()
        .unwrap();
    let listed = common::stdout(&list);
    assert_eq!(listed.matches(" acp ").count(), 3, "{listed}");
}

#[test]
fn an_acp_run_needs_its_prompt() {
    let out = common::rein()
        .args(["agents", "run", "acp", "--", "true"])
        .output()
        .unwrap();
    assert!(common::stderr(&out).contains("give the request with --prompt"));
}

mod watched {
    //! The same run through the library, its session watched in the
    //! session host's `acp` mode: the protocol channel carries what the
    //! agent says, rendered for two viewers; closing the session stops it.

    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use futures::future::BoxFuture;
    use rein::host::acp::{AcpAsk, drive_acp};
    use rein::host::acp_stream::AcpStream;
    use rein::host::person::{Answer, Person, Question};
    use rein::host::session::SessionHost;
    use rein::host::{Ended, HostSpec};
    use tokio_util::sync::CancellationToken;

    struct Says(Option<bool>, Arc<Mutex<Vec<Question>>>);

    impl Person for Says {
        fn ask(&self, question: Question) -> BoxFuture<'static, Option<Answer>> {
            self.1.lock().unwrap().push(question);
            let answer = self.0;
            Box::pin(async move {
                match answer {
                    Some(allow) => Some(Answer {
                        allow,
                        surface: rein::approvals::Surface::product("test", "person"),
                    }),
                    // Nobody is there: wait until the run is stopped.
                    None => std::future::pending().await,
                }
            })
        }
    }

    fn spec(home: &std::path::Path, work: &std::path::Path) -> HostSpec {
        let argv = vec![
            env!("CARGO_BIN_EXE_rein").to_owned(),
            "acp".into(),
            "--scripted".into(),
        ];
        let mut spec = HostSpec::new(argv, work.to_path_buf()).env_from(["PATH"]);
        spec.env
            .insert("REIN_HOME".into(), home.display().to_string());
        spec.timeout = Duration::from_secs(60);
        spec
    }

    fn watch(host: &SessionHost, session: &str, who: &str) -> Arc<Mutex<Vec<u8>>> {
        let screen: Arc<Mutex<Vec<u8>>> = Arc::default();
        let sink = screen.clone();
        host.attach(session, who, move |c| {
            sink.lock().unwrap().extend_from_slice(c)
        });
        screen
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_viewers_watch_an_acp_session_through_its_protocol_channel() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let host = SessionHost::new();
        let asked: Arc<Mutex<Vec<Question>>> = Arc::default();
        let ask = AcpAsk {
            prompt: "write notes.txt".into(),
            person: Arc::new(Says(Some(true), asked.clone())),
            view: Some((host.clone(), "acp-1".into())),
            stays: None,
        };
        // The viewers attach as soon as the session opens.
        let watching = {
            let host = host.clone();
            tokio::spawn(async move {
                loop {
                    if host.listed("acp-1").is_some() {
                        let a = watch(&host, "acp-1", "alice");
                        let b = watch(&host, "acp-1", "bob");
                        let typed = (
                            host.take_over("acp-1", "alice", b"stop"),
                            host.listed("acp-1").unwrap().holder,
                        );
                        return (a, b, typed);
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            })
        };
        let mut stream = AcpStream::new(&work.path().display().to_string());
        let driven = drive_acp(
            &spec(home.path(), work.path()),
            ask,
            &mut stream,
            None,
            &mut |_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(driven.ended, Ended::Finished, "{:?}", driven.outcome);
        let (alice, bob, typed) = watching.await.unwrap();
        assert_eq!(
            typed,
            (
                Err(rein::host::session::InputResult::NotHeard),
                rein::host::session::InputHolder::Agent
            ),
            "an acp session's keys are not heard and take nothing"
        );
        for screen in [alice, bob] {
            let seen = String::from_utf8_lossy(&screen.lock().unwrap()).into_owned();
            assert!(seen.contains(".. tool edit: notes.txt"), "{seen}");
            assert!(seen.contains("Writing it."), "{seen}");
        }
        assert_eq!(asked.lock().unwrap()[0].detail, "notes.txt");
        assert!(
            host.listed("acp-1").is_none(),
            "the session closes with the run"
        );
        assert!(work.path().join("notes.txt").exists());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn closing_the_session_stops_a_run_waiting_for_a_person() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let host = SessionHost::new();
        let asked: Arc<Mutex<Vec<Question>>> = Arc::default();
        let ask = AcpAsk {
            prompt: "write late.txt".into(),
            person: Arc::new(Says(None, asked.clone())),
            view: Some((host.clone(), "acp-2".into())),
            stays: None,
        };
        let closer = {
            let (host, asked) = (host.clone(), asked.clone());
            tokio::spawn(async move {
                while asked.lock().unwrap().is_empty() {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                host.close("acp-2")
            })
        };
        let mut stream = AcpStream::new("");
        let driven = drive_acp(
            &spec(home.path(), work.path()),
            ask,
            &mut stream,
            None,
            &mut |_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
        assert!(closer.await.unwrap());
        assert_eq!(driven.ended, Ended::Stopped);
        assert!(
            !work.path().join("late.txt").exists(),
            "a call nobody approved never runs"
        );
    }
}

/// `rein acp` as an ACP client sees it, spoken to line by line: each tool
/// call is announced (`tool_call`) before a permission is asked for it, the
/// permission names the call's own id, and no `tool_call_update` names an
/// id never announced — for a call allowed and for one rejected.
#[test]
fn each_tool_call_is_announced_before_its_permission_and_its_updates() {
    for (choice, lands) in [("allow-once", true), ("reject", false)] {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let mut editor = common::acp::Editor::start(home.path(), work.path());
        let mut announced = std::collections::HashSet::new();
        let mut asked = 0;
        loop {
            let message = editor.next();
            if message["id"] == 2 {
                editor.prompt(&message["result"]["sessionId"], "write notes.txt");
            }
            if message["id"] == 3 {
                assert!(message.get("result").is_some(), "{message}");
                break;
            }
            let update = &message["params"]["update"];
            match (message["method"].as_str(), update["sessionUpdate"].as_str()) {
                (Some("session/update"), Some("tool_call")) => {
                    let id = update["toolCallId"].as_str().unwrap().to_owned();
                    assert!(announced.insert(id), "announced twice: {message}");
                }
                (Some("session/update"), Some("tool_call_update")) => {
                    let id = update["toolCallId"].as_str().unwrap();
                    assert!(
                        announced.contains(id),
                        "an update for an unannounced call: {message}"
                    );
                }
                (Some("session/request_permission"), _) => {
                    let id = message["params"]["toolCall"]["toolCallId"]
                        .as_str()
                        .unwrap();
                    assert!(
                        announced.contains(id),
                        "asked before it was announced: {message}"
                    );
                    asked += 1;
                    editor.send(&serde_json::json!({"jsonrpc": "2.0", "id": message["id"],
                        "result": {"outcome": {"outcome": "selected", "optionId": choice}}}));
                }
                _ => {}
            }
        }
        editor.close();
        assert_eq!(asked, 1);
        assert_eq!(work.path().join("notes.txt").exists(), lands, "{choice}");
    }
}

/// `rein acp` as the official ACP TypeScript SDK's client sees it
/// (`acp_sdk/client.mjs`, `@agentclientprotocol/sdk` pinned): each call is
/// announced before its permission is asked, no update names a call never
/// announced, and the option the client picks by kind decides — allow
/// lands the write, reject does not.
#[test]
fn the_official_acp_sdk_client_sees_each_call_announced_before_its_permission() {
    let sdk = rein_testing::clis::acp_sdk();
    for (choice, lands) in [("allow_once", true), ("reject_once", false)] {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        // Next to its node_modules, so that it imports the SDK installed there.
        let script = sdk.join(format!("client-{}-{choice}.mjs", std::process::id()));
        std::fs::write(&script, include_str!("acp_sdk/client.mjs")).unwrap();
        let out = std::process::Command::new("node")
            .arg(&script)
            .arg(env!("CARGO_BIN_EXE_rein"))
            .args(["acp", "--scripted"])
            .current_dir(work.path())
            .env("REIN_HOME", home.path())
            .env("ACP_CHOICE", choice)
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap();
        let _ = std::fs::remove_file(&script);
        let stdout = common::stdout(&out);
        assert!(out.status.success(), "{stdout}\n{}", common::stderr(&out));
        let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(report["stopReason"], "end_turn", "{report}");
        let mut announced = std::collections::HashSet::new();
        let mut asked = 0;
        for seen in report["seen"].as_array().unwrap() {
            let id = seen["id"].as_str().unwrap_or_default().to_owned();
            match seen["kind"].as_str().unwrap() {
                "tool_call" => assert!(announced.insert(id), "announced twice: {report}"),
                "tool_call_update" => {
                    assert!(announced.contains(&id), "unannounced update: {report}");
                }
                "permission" => {
                    assert!(announced.contains(&id), "asked before announced: {report}");
                    asked += 1;
                }
                _ => {}
            }
        }
        assert_eq!(asked, 1, "{report}");
        assert_eq!(
            work.path().join("notes.txt").exists(),
            lands,
            "{choice}: {report}"
        );
    }
}
