//! `rein agents run|list` over a real child: a script stands in for the
//! hosted CLI, printing stream lines with delays.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::path::Path;

fn script(dir: &Path, lines: &[serde_json::Value], tail: &str) -> String {
    let data = dir.join("lines.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&data, text).unwrap();
    let path = dir.join("fake.sh");
    std::fs::write(
        &path,
        format!(
            "while IFS= read -r line; do printf '%s\\n' \"$line\"; sleep 0.02; done < '{}'\n{tail}\n",
            data.display()
        ),
    )
    .unwrap();
    path.display().to_string()
}

#[test]
fn a_hosted_claude_run_shows_progress_prints_its_answer_and_is_a_session() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let secret = "sk-ant-api03-NOT-FOR-EYES-1234";
    let lines = vec![
        serde_json::json!({"type": "system", "subtype": "init", "model": "claude-test"}),
        serde_json::json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Write",
            "input": {"file_path": format!("{}/src/lib.rs", work.path().display()), "content": secret}}]}}),
        serde_json::json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}}),
        serde_json::json!({"type": "result", "subtype": "success", "is_error": false, "result": "Wrote it.\u{1b}[2J",
            "num_turns": 2, "duration_ms": 900, "total_cost_usd": 0.0042}),
    ];
    // The script records its arguments and what its stdin held.
    let argv_file = work.path().join("argv.txt");
    let stdin_file = work.path().join("stdin.txt");
    let sh = script(
        work.path(),
        &lines,
        &format!(
            "printf '%s\\n' \"$@\" > '{}'; cat > '{}'",
            argv_file.display(),
            stdin_file.display()
        ),
    );
    let out = common::rein_at(home.path())
        .current_dir(work.path())
        .args([
            "agents",
            "run",
            "claude",
            "--prompt",
            "write lib.rs",
            "--",
            "/bin/sh",
            &sh,
            "-p",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (common::stdout(&out), common::stderr(&out));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "Wrote it.^[[2J\n");
    assert!(stderr.contains(".. started: claude-test"), "{stderr}");
    assert!(stderr.contains(".. tool Write: src/lib.rs"), "{stderr}");
    assert!(stderr.contains("claude finished in"), "{stderr}");
    assert!(
        stderr.contains("1 tool call · $0.004200 · session "),
        "{stderr}"
    );
    assert!(!stderr.contains(secret) && !stdout.contains(secret));
    // Its permission questions come to rein: its MCP tool and the config
    // naming it. It hears words mid-run: its request is no argument but
    // its first stream-json message, and its stdin closed once its turn
    // ended (or `cat` would wait for ever).
    let argv = std::fs::read_to_string(&argv_file).unwrap();
    let argv: Vec<&str> = argv.lines().collect();
    assert_eq!(argv.len(), 7, "{argv:?}");
    assert_eq!(
        argv[..4],
        ["-p", "--input-format", "stream-json", "--mcp-config"]
    );
    assert_eq!(
        argv[5..],
        ["--permission-prompt-tool", "mcp__rein__approve"]
    );
    let heard = std::fs::read_to_string(&stdin_file).unwrap();
    let first: serde_json::Value = serde_json::from_str(heard.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "user");
    assert_eq!(first["message"]["content"][0]["text"], "write lib.rs");
    // The config file is gone with the run: the token it held with it.
    assert!(!std::path::Path::new(argv[4]).exists(), "{}", argv[4]);

    let session = stderr.rsplit("session ").next().unwrap().trim().to_owned();
    let report = common::rein_at(home.path())
        .args(["trace", "report", &session])
        .output()
        .unwrap();
    let report_text = common::stdout(&report);
    assert!(report.status.success(), "{}", common::stderr(&report));
    assert!(report_text.contains("$0.004200"), "{report_text}");

    let list = common::rein_at(home.path())
        .args(["agents", "list"])
        .output()
        .unwrap();
    let listed = common::stdout(&list);
    assert!(
        listed.contains(&session) && listed.contains("claude") && listed.contains("finished"),
        "{listed}"
    );
    assert!(listed.contains("1 tool calls  $0.004200"), "{listed}");
}

#[test]
fn a_hosted_run_that_dies_mid_turn_fails_with_a_stable_code() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let lines = vec![serde_json::json!({"type": "turn.started"})];
    let sh = script(work.path(), &lines, "exit 3");
    let out = common::rein_at(home.path())
        .current_dir(work.path())
        .args(["agents", "run", "codex", "--", "/bin/sh", &sh])
        .output()
        .unwrap();
    let stderr = common::stderr(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("hosted_agent_failed"), "{stderr}");
    assert!(
        stderr.contains("codex: exited inside a turn that did not complete (exit code 3)"),
        "{stderr}"
    );
    assert!(stderr.contains("codex failed in"), "{stderr}");

    let missing = common::rein_at(home.path())
        .args(["agents", "run", "claude", "--", "/nonexistent/claude"])
        .output()
        .unwrap();
    assert!(common::stderr(&missing).contains("hosted_agent_unavailable"));
    let list = common::rein_at(home.path())
        .args(["agents", "list"])
        .output()
        .unwrap();
    let listed = common::stdout(&list);
    assert_eq!(
        listed.matches("failed").count(),
        2,
        "the run that could not start is closed: {listed}"
    );
}

#[test]
fn another_terminal_watches_a_hosted_stream_run() {
    use std::io::{BufRead, BufReader};
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let lines = vec![
        serde_json::json!({"type": "system", "subtype": "init", "model": "claude-test"}),
        serde_json::json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "fn main"}}]}}),
    ];
    let result = serde_json::json!({"type": "result", "subtype": "success", "is_error": false, "result": "Found it.", "total_cost_usd": 0.001});
    // The result comes once a viewer has had time to attach.
    let sh = script(
        work.path(),
        &lines,
        &format!("sleep 2\nprintf '%s\\n' '{result}'"),
    );
    let mut owner = common::rein_at(home.path())
        .current_dir(work.path())
        .args(["agents", "run", "claude", "--", "/bin/sh", &sh])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = BufReader::new(owner.stderr.take().unwrap());
    let mut line = String::new();
    said.read_line(&mut line).unwrap();
    let id = line
        .split("rein agents attach ")
        .nth(1)
        .unwrap()
        .trim()
        .trim_end_matches('`')
        .to_owned();
    let viewer = common::rein_at(home.path())
        .args(["agents", "attach", &id])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let (seen, status) = (common::stdout(&viewer), common::stderr(&viewer));
    assert!(seen.contains(".. tool Grep: fn main"), "{seen}");
    assert!(seen.contains("Found it."), "{seen}");
    assert!(status.contains("the session ended"), "{status}");
    assert!(owner.wait().unwrap().success());
}

#[test]
fn a_configured_agent_runs_by_name_with_only_its_named_environment() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let lines = vec![
        serde_json::json!({"type": "system", "subtype": "init", "model": "m"}),
        serde_json::json!({"type": "result", "subtype": "success", "is_error": false, "result": "ok", "total_cost_usd": 0.5}),
    ];
    let env_file = work.path().join("env.txt");
    let sh = script(
        work.path(),
        &lines,
        &format!("env > '{}'", env_file.display()),
    );
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[agents.fake]\nkind = \"claude\"\ncommand = \"/bin/sh\"\nargs = [\"{sh}\"]\nenv = {{ FAKE_MODE = \"quiet\" }}\nenv_from = [\"MY_TOKEN\"]\ntimeout_secs = 30\n"
        ),
    )
    .unwrap();
    let out = common::rein_at(home.path())
        .current_dir(work.path())
        .env("MY_TOKEN", "tok-123456789")
        .env("OTHER_SECRET", "must-not-pass")
        .args(["agents", "run", "fake"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(common::stdout(&out), "ok\n");
    let env = std::fs::read_to_string(&env_file).unwrap();
    assert!(
        env.contains("FAKE_MODE=quiet") && env.contains("MY_TOKEN=tok-123456789"),
        "{env}"
    );
    assert!(!env.contains("OTHER_SECRET"), "{env}");

    let list = common::rein_at(home.path())
        .args(["agents", "list"])
        .output()
        .unwrap();
    let listed = common::stdout(&list);
    assert!(
        listed.contains("configured  fake") && listed.contains("claude  sh"),
        "{listed}"
    );
    assert!(listed.contains("$0.500000"), "{listed}");

    let unknown = common::rein_at(home.path())
        .args(["agents", "run", "nobody"])
        .output()
        .unwrap();
    let said = common::stderr(&unknown);
    assert!(
        said.contains("agent_config_invalid") && said.contains("configured: fake"),
        "{said}"
    );
    let bare = common::rein_at(home.path())
        .args(["agents", "run", "codex"])
        .output()
        .unwrap();
    assert!(common::stderr(&bare).contains("give the command after `--`"));
    std::fs::write(
        home.path().join("config.toml"),
        "[agents.bad]\nkind = \"claude\"\ncommand = \"\"\n",
    )
    .unwrap();
    let bad = common::rein_at(home.path())
        .args(["agents", "list"])
        .output()
        .unwrap();
    assert!(common::stderr(&bad).contains("agent `bad`: `command` is empty"));
}
