//! One agent definition, through the `rein` binary: `rein config show`
//! says where each value came from; a project's config applies only once
//! its folder is trusted, and a broken one is refused naming the file, the
//! line and the field; a hook set once in the config file denies the same
//! write in a chat, in the chat's sub-agent, in a graph task that names
//! another agent, and in a call served by `rein mcp serve`; the same named
//! agent opened by `rein chat --agent` and `rein serve` records the same
//! authority; `--verify` gates a chat turn.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::path::Path;

use crate::common::definition::{call, chat, denied, home_with_hook, run, say, write};
use crate::common::{rein_at, run_with_stdin, stderr, stdout};
use rein::sessions::{Event, SqliteStore, Store};
use rein_testing::FakeServer;
use serde_json::{Value, json};

#[test]
fn config_show_names_each_values_source_and_a_project_applies_only_once_trusted() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    write(
        &home.path().join("config.toml"),
        "[agent]\nmodel = \"home-model\"\n[agent.budgets]\nmax_steps = 12\n\n[agents.reviewer]\ninstructions = \"Review.\"\n",
    );
    write(
        &project.path().join(".rein/config.toml"),
        "[agent]\nmodel = \"project-model\"\n[[agent.hooks]]\nname = \"sneaky\"\ncommand = [\"true\"]\npoints = [\"before_call\"]\n",
    );
    write(
        &project.path().join("AGENTS.md"),
        "Run the tests before you answer.\n",
    );
    let show = |args: &[&str]| {
        let mut cmd = rein_at(home.path());
        cmd.args(["config", "show", "--root"])
            .arg(project.path())
            .args(args);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    // Untrusted: the project's file (and its hook) is not applied, and
    // that is said.
    let shown = show(&[]);
    assert!(shown.contains("not trusted"), "{shown}");
    assert!(shown.contains("model = \"home-model\""), "{shown}");
    assert!(!shown.contains("sneaky"), "{shown}");
    assert!(shown.contains("AGENTS.md"), "{shown}");
    let home_file = home.path().join("config.toml").display().to_string();
    let line = shown
        .lines()
        .find(|l| l.starts_with("budgets.max_steps"))
        .unwrap();
    assert!(line.contains(&home_file), "{line}");
    // Trusted: applied over the home's, with its source.
    let mut trust = rein_at(home.path());
    trust.args(["config", "trust"]).arg(project.path());
    assert!(trust.output().unwrap().status.success());
    let shown = show(&[]);
    let line = shown.lines().find(|l| l.starts_with("model =")).unwrap();
    assert!(
        line.contains("project-model") && line.contains("(project)"),
        "{shown}"
    );
    assert!(shown.contains("sneaky"), "{shown}");
    // A named agent: its own values over the default's.
    let shown = show(&["--agent", "reviewer"]);
    assert!(shown.contains("instructions = \"Review.\""), "{shown}");
    assert!(shown.contains("project-model"), "{shown}");
    let mut none = rein_at(home.path());
    none.args(["config", "show", "--agent", "nobody"]);
    let out = none.output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("agent_unknown"), "{}", stderr(&out));
}

#[test]
fn a_broken_project_config_is_refused_with_file_line_and_field() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    write(
        &project.path().join(".rein/config.toml"),
        "[agent]\nmodel = \"m\"\n\n[agent.budgets]\nmax_stepz = 3\n",
    );
    // `check` looks at it before anyone trusts it.
    let mut check = rein_at(home.path());
    check
        .args(["config", "check", "--root"])
        .arg(project.path());
    let out = check.output().unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("config_invalid"), "{err}");
    assert!(err.contains(".rein/config.toml:5:"), "{err}");
    assert!(err.contains("max_stepz"), "{err}");
    // Once trusted, a chat refuses to start on it, saying the same.
    let mut trust = rein_at(home.path());
    trust.args(["config", "trust"]).arg(project.path());
    assert!(trust.output().unwrap().status.success());
    let mut chat = rein_at(home.path());
    chat.args(["chat", "--scripted", "-p", "hi", "--root"])
        .arg(project.path());
    let out = run_with_stdin(chat, b"");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(".rein/config.toml:5:") && err.contains("max_stepz"),
        "{err}"
    );
    // A good home file checks clean.
    write(&home.path().join("config.toml"), "[agent]\nmodel = \"m\"\n");
    let mut check = rein_at(home.path());
    check.args(["config", "check"]);
    let out = check.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("ok:"), "{}", stdout(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_hook_denies_the_write_in_a_chat_and_in_its_sub_agent() {
    let home = home_with_hook();
    let root = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![
        // The main agent writes: denied.
        call(
            "c1",
            "write_file",
            json!({"path": "a.txt", "content": "x\n"}),
        ),
        // Then hands the write to a sub-agent, which tries the same.
        call("c2", "delegate", json!({"task": "write a.txt"})),
        call(
            "c3",
            "write_file",
            json!({"path": "a.txt", "content": "x\n"}),
        ),
        say("I could not write it."),
        say("Neither could my helper."),
    ])
    .await
    .unwrap();
    let out = chat(
        home.path(),
        &server,
        root.path(),
        &["--subagents"],
        "write a.txt",
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!root.path().join("a.txt").exists(), "nothing was written");
    assert_eq!(denied(home.path()).await, 2, "{}", stderr(&out));
    assert!(!stderr(&out).contains("approve? [y/N"), "nobody was asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_hook_denies_the_write_in_a_graph_task_that_names_another_agent() {
    let home = home_with_hook();
    let root = tempfile::tempdir().unwrap();
    let graph = root.path().join("graph.toml");
    write(
        &graph,
        "[[task]]\nid = \"write\"\nagent = \"writer\"\nbrief = \"Write a.txt.\"\nretries = 0\n",
    );
    let server = FakeServer::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "a.txt", "content": "x\n"}),
        ),
        say("Could not."),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1", server.base_url());
    let mut cmd = rein_at(home.path());
    cmd.args([
        "run",
        graph.to_str().unwrap(),
        "--base-url",
        &url,
        "--model",
        "m",
        "--root",
    ])
    .arg(root.path());
    let out = run(cmd, b"").await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!root.path().join("a.txt").exists());
    assert_eq!(denied(home.path()).await, 1, "{}", stderr(&out));
    // The task ran as `writer`: its words reached the model.
    let asked = server.requests()[0].json().to_string();
    assert!(asked.contains("You write files."), "{asked}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_hook_denies_a_call_served_by_mcp_serve() {
    use rmcp::ServiceExt;
    let home = home_with_hook();
    let root = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_rein"));
    cmd.env("REIN_HOME", home.path())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .args(["mcp", "serve", "--root"])
        .arg(root.path());
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let client = ().serve(transport).await.unwrap();
    let Value::Object(args) = json!({"path": "a.txt", "content": "x\n"}) else {
        panic!()
    };
    let result = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        client
            .call_tool(rmcp::model::CallToolRequestParams::new("write_file").with_arguments(args)),
    )
    .await
    .expect("answered at once: denied, not waiting for a person")
    .unwrap();
    assert_eq!(result.is_error, Some(true), "{result:?}");
    client.cancel().await.unwrap();
    assert!(!root.path().join("a.txt").exists());
    assert_eq!(denied(home.path()).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_gates_a_chat_turn() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![say("Done."), say("Done again."), say("Still done.")])
        .await
        .unwrap();
    let out = chat(
        home.path(),
        &server,
        root.path(),
        &["--verify", "test -f ok.txt"],
        "make it pass",
    )
    .await;
    let told: String = server
        .requests()
        .iter()
        .map(|r| r.json().to_string())
        .collect();
    assert!(told.contains("The check `test -f ok.txt` failed"), "{told}");
    assert!(server.requests().len() >= 2, "the model was asked again");
    assert!(
        !out.status.success() || stderr(&out).contains("verification"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn verify_exit_names_the_exit_that_passes() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![say("Done.")]).await.unwrap();
    // `false` exits 1: with `--verify-exit 1` that passes at once.
    let out = chat(
        home.path(),
        &server,
        root.path(),
        &["--verify", "false", "--verify-exit", "1"],
        "check it",
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 1, "the model was not asked again");
    // Without a command to check, the exit is refused.
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--scripted", "--verify-exit", "1", "-p", "hi"]);
    let out = run(cmd, b"").await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--verify"), "{}", stderr(&out));
}

/// The `run.started` authority of the newest turn in `session`.
async fn authority(home: &Path, session: &str) -> Value {
    let store = SqliteStore::open(home.join("rein.db")).await.unwrap();
    let log = rein::sessions::read_all(&store, session).await.unwrap();
    log.iter()
        .rev()
        .find_map(|e| match &e.event {
            Event::RunStarted { profile, .. } => profile.get("authority").cloned(),
            _ => None,
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
async fn the_same_named_agent_records_the_same_authority_from_chat_serve_and_the_library() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let home = home_with_hook();
    let root = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![say("Hello."), say("Hello."), say("Hello.")])
        .await
        .unwrap();
    let url = format!("{}/v1", server.base_url());
    let mut cmd = rein_at(home.path());
    cmd.args([
        "chat",
        "--base-url",
        &url,
        "--model",
        "m",
        "--agent",
        "writer",
        "-p",
        "hi",
        "--root",
    ])
    .arg(root.path());
    let out = run(cmd, b"").await;
    assert!(out.status.success(), "{}", stderr(&out));
    let chat_session = common::session_in(&stderr(&out));
    let from_chat = authority(home.path(), &chat_session).await;
    assert_eq!(
        from_chat["product"]["hooks"],
        json!(["deny-writes"]),
        "{from_chat}"
    );

    // The same agent through `rein serve`'s API.
    let token = "t".repeat(40);
    let mut serve = rein_at(home.path());
    serve
        .env("REIN_SERVE_TOKEN", &token)
        .args(["serve", "--base-url", &url, "--model", "m", "--root"])
        .arg(root.path());
    let (mut child, lines) = common::spawn_with_lines(serve);
    let addr = loop {
        let line = lines
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap();
        if let Some(rest) = line.strip_prefix("open http://") {
            break rest.split('/').next().unwrap().to_owned();
        }
    };
    let client = reqwest::Client::new();
    let api = |path: &str| format!("http://{addr}{path}");
    let agents: Value = client
        .get(api("/api/agents"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(agents.to_string().contains("\"writer\""), "{agents}");
    let created: Value = client
        .post(api("/api/conversations"))
        .bearer_auth(&token)
        .json(&json!({"agent": "writer"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    let turn = client
        .post(api(&format!("/api/conversations/{id}/turns")))
        .bearer_auth(&token)
        .json(&json!({"text": "hi"}))
        .send()
        .await
        .unwrap();
    assert!(turn.status().is_success(), "{}", turn.text().await.unwrap());
    // The turn runs in the server; wait for its run to be recorded.
    let mut from_serve = Value::Null;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let store = SqliteStore::open(home.path().join("rein.db"))
            .await
            .unwrap();
        let log = rein::sessions::read_all(&store, &id).await.unwrap();
        if log
            .iter()
            .any(|e| matches!(e.event, Event::TurnFinished { .. }))
        {
            from_serve = authority(home.path(), &id).await;
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        from_serve, from_chat,
        "the same definition, the same authority"
    );

    // The same agent opened by a product through the library.
    let store: std::sync::Arc<dyn Store> = std::sync::Arc::new(
        SqliteStore::open(home.path().join("rein.db"))
            .await
            .unwrap(),
    );
    let flags = rein::config::AgentSpec {
        base_url: Some(url.clone()),
        model: Some("m".into()),
        ..Default::default()
    };
    let root_dir = root.path().canonicalize().unwrap();
    let wanted = rein::compose::SurfaceWanted::new(&root_dir)
        .home(home.path().to_path_buf())
        .agent("writer")
        .flags(flags);
    let surface = rein::compose::for_surface(wanted, &store, &mut std::io::sink())
        .await
        .unwrap();
    let mut conversation = surface.agent.open(store.clone()).await.unwrap();
    conversation.turn("hi").await.unwrap();
    let id = conversation.session_id().to_owned();
    conversation.close().await.unwrap();
    assert_eq!(
        authority(home.path(), &id).await,
        from_chat,
        "the library opens the same agent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graph_task_naming_the_agent_records_its_authority_and_the_blackboard_only() {
    let home = home_with_hook();
    let root = tempfile::tempdir().unwrap();
    let graph = root.path().join("graph.toml");
    write(
        &graph,
        "[[task]]\nid = \"write\"\nagent = \"writer\"\nbrief = \"Say hello.\"\nretries = 0\n",
    );
    let server = FakeServer::start(vec![say("Hello."), say("Hello.")])
        .await
        .unwrap();
    let url = format!("{}/v1", server.base_url());
    let flags = ["--base-url", &url, "--model", "m", "--root"];
    let mut cmd = rein_at(home.path());
    cmd.args(["run", graph.to_str().unwrap()])
        .args(flags)
        .arg(root.path());
    let out = run(cmd, b"").await;
    assert!(out.status.success(), "{}", stderr(&out));
    let store = SqliteStore::open(home.path().join("rein.db"))
        .await
        .unwrap();
    let task = store.list_sessions(10).await.unwrap()[0].id.clone();
    let mut from_graph = authority(home.path(), &task).await;

    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--agent", "writer", "-p", "hi"])
        .args(flags)
        .arg(root.path());
    let out = run(cmd, b"").await;
    assert!(out.status.success(), "{}", stderr(&out));
    let from_chat = authority(home.path(), &common::session_in(&stderr(&out))).await;
    // The graph gives its tasks its blackboard; everything else is the
    // named agent's, as the chat opens it.
    let tools = from_graph["tools"].as_object_mut().unwrap();
    assert!(tools.remove("blackboard_read").is_some(), "{from_graph}");
    assert!(tools.remove("blackboard_write").is_some(), "{from_graph}");
    assert_eq!(
        from_graph, from_chat,
        "the same definition, the same authority"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_runs_in_the_sandbox_and_reaches_nothing_outside_the_root() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let outside = home.path().join("escaped");
    let server = FakeServer::start(vec![say("Done."), say("Done."), say("Done.")])
        .await
        .unwrap();
    let url = format!("{}/v1", server.base_url());
    let check = format!("touch {}", outside.display());
    let mut cmd = rein_at(home.path());
    cmd.args([
        "chat",
        "--base-url",
        &url,
        "--model",
        "m",
        "--verify",
        &check,
        "-p",
        "go",
        "--root",
    ])
    .arg(root.path());
    let out = run(cmd, b"").await;
    assert!(
        !outside.exists(),
        "the check wrote outside the root: {}",
        stderr(&out)
    );
    // Inside the root it may write.
    let inside = root.path().join("made-by-check");
    let check = format!("touch {}", inside.display());
    let server = FakeServer::start(vec![say("Done.")]).await.unwrap();
    let out = chat(
        home.path(),
        &server,
        root.path(),
        &["--verify", &check],
        "go",
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(inside.exists(), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_definitions_temperature_reaches_every_request_and_a_wrong_one_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        &home.path().join("config.toml"),
        "[agent]\ntemperature = 0.2\n",
    );
    let server = FakeServer::start(vec![
        call("c1", "read_file", json!({"path": "a.txt"})),
        say("Done."),
    ])
    .await
    .unwrap();
    write(&root.path().join("a.txt"), "hello\n");
    let out = chat(home.path(), &server, root.path(), &[], "read a.txt").await;
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.json()["temperature"], 0.2, "{}", request.json());
    }
    // The flag wins over the file, and the file's value is checked.
    let server = FakeServer::start(vec![say("Done.")]).await.unwrap();
    let out = chat(
        home.path(),
        &server,
        root.path(),
        &["--temperature", "0"],
        "hi",
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(server.requests()[0].json()["temperature"], 0.0);
    write(
        &home.path().join("config.toml"),
        "[agent]\ntemperature = 3.5\n",
    );
    let mut check = rein_at(home.path());
    check.args(["config", "check"]);
    let out = check.output().unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("config_invalid") && err.contains("temperature"),
        "{err}"
    );
}
