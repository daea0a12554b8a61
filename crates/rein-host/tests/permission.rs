//! The MCP server Claude Code's permission questions come through, attacked
//! as a hostile local process would: without its token, with a browser's
//! `Origin`, or under another host name, nothing is asked; its token is in
//! a file only this user reads, gone with the run. (The whole exchange with
//! the real Claude Code is `rein-cli`'s `tests/hosted_claude.rs`.)

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::os::unix::fs::PermissionsExt;

use rein_host::asks::Asked;
use rein_host::claude::permission::PermissionServer;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// One raw HTTP/1.1 POST of `body` to `/mcp`; the status and the body.
async fn post(port: u16, headers: &[(&str, &str)], body: &Value) -> (u16, String) {
    let body = body.to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "attacker", "version": "1"}}})
}

/// The server's port and token, read from the config file it wrote.
fn endpoint(server: &PermissionServer) -> (u16, String, std::path::PathBuf) {
    let mut argv = Vec::new();
    server.add_to(&mut argv, false);
    let file = std::path::PathBuf::from(&argv[1]);
    let config: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let url = config["mcpServers"]["rein"]["url"].as_str().unwrap();
    let port = url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let auth = config["mcpServers"]["rein"]["headers"]["Authorization"]
        .as_str()
        .unwrap()
        .to_owned();
    (port, auth, file)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_run_with_its_token_reaches_the_question() {
    let (questions, mut asked) = mpsc::channel::<Asked>(4);
    let server = PermissionServer::start(questions, "/work").await.unwrap();
    let (port, auth, file) = endpoint(&server);
    // The token is in a file only this user reads, in a folder only it enters.
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let dir = file.parent().unwrap().to_owned();
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let host = format!("127.0.0.1:{port}");
    // No token, a wrong one, a browser's Origin, another host name: refused.
    let (status, _) = post(port, &[("host", &host)], &initialize()).await;
    assert_eq!(status, 401);
    let (status, _) = post(
        port,
        &[("host", &host), ("authorization", "Bearer nope")],
        &initialize(),
    )
    .await;
    assert_eq!(status, 401);
    let (status, _) = post(
        port,
        &[
            ("host", &host),
            ("authorization", &auth),
            ("origin", "https://evil.example"),
        ],
        &initialize(),
    )
    .await;
    assert!(status >= 400, "a browser origin got {status}");
    // The token came once: whoever holds it has read the file, which is
    // gone at once (no token lies on disk for the run, or after a crash).
    assert!(!dir.exists(), "the token's file outlived its reading");
    let (status, _) = post(
        port,
        &[
            ("host", &format!("evil.example:{port}")),
            ("authorization", &auth),
        ],
        &initialize(),
    )
    .await;
    assert!(status >= 400, "another host name got {status}");
    // With the token, it is an MCP server.
    let (status, body) = post(
        port,
        &[("host", &host), ("authorization", &auth)],
        &initialize(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"rein\""), "{body}");
    // Nothing was asked of anyone by any of it.
    assert!(asked.try_recv().is_err());
    drop(server);
    assert!(!dir.exists());
}
