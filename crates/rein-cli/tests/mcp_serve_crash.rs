//! `rein mcp serve` killed outright while a client's write waits for a
//! person, and started again on the same session: the question died with
//! the call that asked it. A "yes" given afterwards to the stale question
//! runs nothing — not then, not at the next client's call — and the next
//! client is served as usual. A "yes" given while no server runs is
//! recorded, and the call is stopped all the same: its client is gone.

use crate::common;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

const TOKEN: &str = "a-test-token-of-forty-characters-0123456";

fn call(tool: &str, args: Value) -> CallToolRequestParams {
    let Value::Object(map) = args else {
        panic!("object args")
    };
    CallToolRequestParams::new(tool.to_owned()).with_arguments(map)
}

async fn client(url: &str) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.auth_header = Some(TOKEN.to_owned());
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    ().serve(transport).await.expect("initialize over HTTP")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_by_a_killed_server_runs_nothing_when_answered_later() {
    killed_at_the_question(false).await;
}

/// The person answers while no server runs: the yes is recorded, and the
/// server started again stops the call all the same — its client is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_yes_given_while_no_server_runs_is_recorded_and_still_runs_nothing() {
    killed_at_the_question(true).await;
}

async fn killed_at_the_question(answered_while_down: bool) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let home = tempfile::tempdir().expect("home");
    let root = tempfile::tempdir().expect("root");
    std::fs::write(root.path().join("notes.txt"), "kept\n").expect("seed");
    let (mut server, url, mut lines) =
        common::mcp::serve_http(home.path(), root.path(), TOKEN).await;
    let first = client(&url).await;
    let waiting = tokio::spawn(async move {
        first
            .call_tool(call(
                "write_file",
                json!({"path": "stale.txt", "content": "written after all\n"}),
            ))
            .await
    });
    let (session, approval) = common::mcp::asked(&mut lines).await;
    // Killed outright while the write waits: no goodbye.
    server.start_kill().expect("killed");
    server.wait().await.expect("reaped");
    // The client is gone too (rmcp's keeps trying to reconnect).
    waiting.abort();
    if answered_while_down {
        let early = common::rein_at(home.path())
            .args(["approve", &session, &approval, "yes"])
            .output()
            .expect("rein approve runs");
        assert!(early.status.success(), "{}", common::stderr(&early));
        // Not told to resume it: its client is gone.
        let told = common::stdout(&early);
        assert!(
            told.contains("never run") && !told.contains("rein chat"),
            "{told}"
        );
    }

    let (mut server, url, _lines) =
        common::mcp::serve_http_with(home.path(), root.path(), TOKEN, &["--session", &session])
            .await;
    // Nothing waits any more; a "yes" to the stale question is refused.
    let listed = common::rein_at(home.path())
        .args(["approve", &session])
        .output()
        .expect("rein approve lists");
    assert!(
        !common::stdout(&listed).contains(&approval),
        "the stale question is still listed:\n{}",
        common::stdout(&listed)
    );
    let late = common::rein_at(home.path())
        .args(["approve", &session, &approval, "yes"])
        .output()
        .expect("rein approve runs");
    assert!(!late.status.success(), "{}", common::stdout(&late));
    // The next client's call is served, and the stale write never runs.
    let second = client(&url).await;
    let read = second
        .call_tool(call("read_file", json!({"path": "notes.txt"})))
        .await
        .expect("read");
    assert_ne!(read.is_error, Some(true), "{read:?}");
    second.cancel().await.expect("close");
    server.start_kill().expect("stopped");
    server.wait().await.expect("reaped");
    assert!(
        !root.path().join("stale.txt").exists(),
        "a write whose caller was gone ran"
    );
    let shown = common::rein_at(home.path())
        .args(["sessions", "show", &session])
        .output()
        .expect("shown");
    let log = common::stdout(&shown);
    // The stale call has its one result, and its turn ended.
    assert!(log.contains("stopped by mcp serve"), "{log}");
    assert!(log.contains("[turn ended: interrupted]"), "{log}");
    assert_eq!(log.matches("\n  result ").count(), 2, "one each: {log}");
    if answered_while_down {
        assert!(log.contains("approval approved by rein approve"), "{log}");
        assert!(
            log.contains(
                "result error (live): stopped: The turn was stopped before this call ran."
            ),
            "{log}"
        );
    } else {
        assert!(log.contains("approval stopped by mcp serve"), "{log}");
        assert!(
            log.contains("result error (live): not_approved: The call to `write_file` was not run: it was stopped."),
            "{log}"
        );
        assert!(!log.contains("approved by rein approve"), "{log}");
    }
}
