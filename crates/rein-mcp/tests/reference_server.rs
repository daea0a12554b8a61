//! The client against the real reference server
//! (`@modelcontextprotocol/server-everything`, from npm, over stdio).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rein_mcp::{McpClients, McpConfig, Status};
use rein_tools::{Outcome, Progress, ProgressReport, ToolBackend, ToolContext};
use rein_wire::permission::{PermissionClass, Policy};
use serde_json::json;

fn ctx() -> ToolContext {
    ToolContext {
        call_id: "c1".into(),
        session: String::new(),
        elevated: false,
        asked: false,
        policy: Policy::default(),
        progress: Progress::none(),
        app: rein_tools::AppContext::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_calls_and_maps_errors_and_images() {
    let clients = McpClients::start(&common::config(
        "[mcp.servers.ev.tools]\nget-env = \"destructive\"\n",
    ));
    let tools = clients.tools();
    assert!(
        tools.catalog(&Policy::default()).is_empty(),
        "nothing before a turn boundary"
    );
    let notes = common::ready(&clients, &tools).await;
    assert!(
        notes.iter().any(|n| n.contains("`ev` is ready")),
        "{notes:?}"
    );

    let names: Vec<String> = tools
        .catalog(&Policy::default())
        .into_iter()
        .map(|t| t.name)
        .collect();
    for expected in [
        "ev__echo",
        "ev__get-sum",
        "ev__get-tiny-image",
        "ev__trigger-long-running-operation",
    ] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }
    // Classes: the server's hints, and the person's setting over them.
    assert_eq!(
        tools
            .permission("ev__echo", &json!({"message": "hi"}))
            .expect("valid"),
        PermissionClass::Read
    );
    assert_eq!(
        tools.permission("ev__get-env", &json!({})).expect("valid"),
        PermissionClass::Destructive
    );
    assert_eq!(
        tools
            .permission("ev__toggle-simulated-logging", &json!({}))
            .expect("valid"),
        PermissionClass::Write,
        "neither read-only nor destructive: the default asks"
    );
    let bad = tools
        .permission("ev__get-sum", &json!({"a": "one"}))
        .expect_err("schema");
    assert_eq!(bad.code.as_str(), "tool_arguments_invalid");

    let echo = tools
        .invoke("ev__echo", json!({"message": "hello"}), &ctx())
        .await;
    assert_eq!(echo, Outcome::ok(json!("Echo: hello")));

    let Outcome::Ok { result, .. } = tools.invoke("ev__get-tiny-image", json!({}), &ctx()).await
    else {
        panic!("the image call failed");
    };
    assert_eq!(result["_images"][0]["media_type"], "image/png");
    assert!(
        result["_images"][0]["data"]
            .as_str()
            .is_some_and(|d| d.len() > 100)
    );

    let refused = tools
        .invoke(
            "ev__get-resource-reference",
            json!({"resourceType": "Text", "resourceId": -1}),
            &ctx(),
        )
        .await;
    let Outcome::Failed { code, message, .. } = refused else {
        panic!("an error result expected: {refused:?}");
    };
    assert_eq!(code, "mcp_tool_error");
    assert!(message.contains("resourceId"), "{message}");
    clients.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_call_and_list_changes_wait_for_a_boundary() {
    let clients = McpClients::start(&common::config(""));
    let tools = clients.tools();
    common::ready(&clients, &tools).await;
    // The reference server says its list changed right after initialize.
    let server = &clients.servers()[0];
    for _ in 0..100 {
        if server.snapshot().list_changes > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        server.snapshot().list_changes > 0,
        "tools/list_changed was heard"
    );

    let seen: Arc<Mutex<Vec<ProgressReport>>> = Arc::default();
    let sink = seen.clone();
    let mut ctx = ctx();
    ctx.progress = Progress::to(move |r| sink.lock().expect("lock").push(r));
    let done = tools
        .invoke(
            "ev__trigger-long-running-operation",
            json!({"duration": 1, "steps": 4}),
            &ctx,
        )
        .await;
    assert!(done.is_ok(), "{done:?}");
    let seen = seen.lock().expect("lock").clone();
    // Every step's report, the last one sent just before the answer too.
    let done: Vec<f64> = seen.iter().map(|r| r.done).collect();
    assert_eq!(done, [1.0, 2.0, 3.0, 4.0], "progress reports: {seen:?}");
    assert_eq!(seen.last().and_then(|r| r.total), Some(4.0));
    clients.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_gives_a_clear_error_and_comes_back() {
    let clients = McpClients::start(&common::config(""));
    let tools = clients.tools();
    common::ready(&clients, &tools).await;
    let server = clients.servers()[0].clone();
    let pid = server.snapshot().pid.expect("a stdio server has a pid");

    let ctx = ctx();
    let call = tools.invoke(
        "ev__trigger-long-running-operation",
        json!({"duration": 30, "steps": 30}),
        &ctx,
    );
    let killer = async {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let killed = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
        assert!(killed.expect("kill runs").success());
    };
    let (outcome, ()) = tokio::join!(call, killer);
    let Outcome::Failed {
        code, retryable, ..
    } = outcome
    else {
        panic!("a killed server's call must fail: {outcome:?}");
    };
    assert_eq!(code, "mcp_server_crashed");
    assert!(retryable);

    // It is restarted with backoff and serves again.
    for _ in 0..400 {
        let now = server.snapshot();
        if now.starts >= 2 && now.status == Status::Ready {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let now = server.snapshot();
    assert_eq!(
        (now.starts, now.status.clone()),
        (2, Status::Ready),
        "restarted: {:?}",
        now.stderr
    );
    assert_ne!(now.pid, Some(pid));
    let echo = tools
        .invoke("ev__echo", json!({"message": "again"}), &ctx)
        .await;
    assert_eq!(echo, Outcome::ok(json!("Echo: again")));
    clients.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_initializes_blocks_nothing_and_fails_clearly() {
    // `sleep` reads nothing and answers nothing: initialize never returns.
    let config = McpConfig::parse(
        "[mcp.servers.mute]\ncommand = \"sleep\"\nargs = [\"600\"]\nenv_from = [\"PATH\"]\nstart_timeout_secs = 1\n",
    )
    .expect("valid");
    let clients = McpClients::start(&config);
    let tools = clients.tools();
    // A turn boundary right away answers at once with what is there: nothing.
    assert_eq!(
        tools.turn_boundary(),
        vec!["MCP server `mute` is starting".to_owned()]
    );
    assert!(tools.catalog(&Policy::default()).is_empty());
    let server = &clients.servers()[0];
    for _ in 0..100 {
        if matches!(server.snapshot().status, Status::Failed { .. }) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let Status::Failed { error, retrying } = server.snapshot().status else {
        panic!(
            "never initialized, so failed: {:?}",
            server.snapshot().status
        );
    };
    assert!(
        error.contains("did not finish starting within 1 s"),
        "{error}"
    );
    assert!(retrying, "it is tried again with backoff");
    let notes = tools.turn_boundary();
    assert!(
        notes.iter().any(|n| n.contains("not available")),
        "{notes:?}"
    );
    clients.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_server_times_the_call_out_and_is_restarted() {
    let clients = McpClients::start(
        &common::config("")
            .only(&["ev".into()])
            .map(|mut c| {
                if let Some(ev) = c.servers.get_mut("ev") {
                    ev.call_timeout = Duration::from_secs(1);
                }
                c
            })
            .expect("ev"),
    );
    let tools = clients.tools();
    common::ready(&clients, &tools).await;
    let server = clients.servers()[0].clone();
    let pid = server.snapshot().pid.expect("pid");
    // Frozen: it reads nothing and answers nothing, but does not exit.
    assert!(
        std::process::Command::new("kill")
            .args(["-STOP", &pid.to_string()])
            .status()
            .expect("kill")
            .success()
    );
    let hung = tools
        .invoke("ev__echo", json!({"message": "anyone?"}), &ctx())
        .await;
    let Outcome::Failed {
        code,
        message,
        retryable,
        ..
    } = hung
    else {
        panic!("a hung server's call must fail: {hung:?}");
    };
    assert_eq!(code, "mcp_call_timeout");
    assert!(message.contains("within 1 s"), "{message}");
    assert!(retryable);
    // The missed ping restarts it: a new process serves.
    for _ in 0..400 {
        let now = server.snapshot();
        if now.starts >= 2 && now.status == Status::Ready {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let now = server.snapshot();
    // At least one restart: on a loaded machine the new process may miss
    // a ping while it starts and be restarted once more; what matters is
    // that a new process serves.
    assert!(now.starts >= 2, "started {} times", now.starts);
    assert_eq!(now.status, Status::Ready);
    assert_ne!(now.pid, Some(pid));
    // The same load may have the new process miss a ping mid-call and be
    // restarted yet again: a call that finds it going away (retryable) is
    // made again once it is ready, a few times at most.
    let mut echo = tools
        .invoke("ev__echo", json!({"message": "back"}), &ctx())
        .await;
    for _ in 0..5 {
        if !matches!(
            echo,
            Outcome::Failed {
                retryable: true,
                ..
            }
        ) {
            break;
        }
        for _ in 0..400 {
            if server.snapshot().status == Status::Ready {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        echo = tools
            .invoke("ev__echo", json!({"message": "back"}), &ctx())
            .await;
    }
    assert_eq!(echo, Outcome::ok(json!("Echo: back")));
    // The frozen process was ended, not left behind.
    let alive = std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(!alive.success(), "the hung server {pid} is gone");
    clients.shutdown();
}
