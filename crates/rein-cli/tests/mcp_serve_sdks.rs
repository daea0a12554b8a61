//! `rein mcp serve --http` driven by the official Python MCP SDK (PyPI
//! `mcp`, pinned; `fixtures/mcp_python_client.py`) over streamable HTTP
//! with the bearer token: the tools listed, a file read, and a write that
//! waits for a person — refused, the file is as it was and the SDK hears
//! an error; approved from another process, it is written once.

use crate::common;

use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncBufReadExt;

/// The SDK, pinned.
const PINNED: &[&str] = &["mcp==2.3.0"];

const TOKEN: &str = "a-test-token-of-forty-characters-0123456";

/// Run the SDK's client against `url`, asking to write `content`; the
/// person answers `answer` with `rein approve`. Its JSON lines.
async fn client_run(
    url: &str,
    home: &std::path::Path,
    lines: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    content: &str,
    answer: &str,
) -> Vec<Value> {
    let python = common::python::venv("mcp-2.3.0", PINNED, "python");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mcp_python_client.py"
    );
    let mut client = tokio::process::Command::new(python)
        .args([script, url, TOKEN, content])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the SDK's client starts");
    let mut out = tokio::io::BufReader::new(client.stdout.take().expect("stdout")).lines();
    let mut said = Vec::new();
    // Its tools and its read come at once; its write once the person
    // answered.
    for step in 0..3 {
        if step == 2 {
            common::mcp::decide(lines, home, answer, "notes.txt").await;
        }
        let line = tokio::time::timeout(Duration::from_secs(120), out.next_line())
            .await
            .unwrap_or_else(|_| panic!("the client said nothing in time after {said:?}"))
            .expect("read")
            .expect("a line");
        said.push(serde_json::from_str(&line).expect("JSON"));
    }
    let status = client.wait().await.expect("the client ends");
    assert!(status.success(), "the SDK's client failed: {said:?}");
    said
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_reads_and_its_write_waits_for_a_person() {
    let home = tempfile::tempdir().expect("home");
    let root = tempfile::tempdir().expect("root");
    let notes = root.path().join("notes.txt");
    std::fs::write(&notes, "over python\n").expect("seed");
    let (mut server, url, mut lines) =
        common::mcp::serve_http(home.path(), root.path(), TOKEN).await;

    let said = client_run(&url, home.path(), &mut lines, "refused\n", "no").await;
    let tools = said[0]["tools"].as_array().expect("tools");
    for name in ["read_file", "write_file", "edit_file", "list_files"] {
        assert!(tools.iter().any(|t| t == name), "{said:?}");
    }
    assert_eq!(said[1]["error"], false, "{said:?}");
    assert!(
        said[1]["read"][0]
            .as_str()
            .is_some_and(|t| t.contains("over python")),
        "{said:?}"
    );
    assert_eq!(
        said[2]["error"], true,
        "a refused write is an error: {said:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&notes).expect("notes"),
        "over python\n"
    );

    let said = client_run(&url, home.path(), &mut lines, "approved\n", "yes").await;
    assert_eq!(said[2]["error"], false, "{said:?}");
    assert_eq!(
        std::fs::read_to_string(&notes).expect("notes"),
        "approved\n"
    );
    server.kill().await.expect("stopped");
}
