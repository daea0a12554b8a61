//! Hostile HTTP clients against the real `rein mcp serve --http` and the
//! real `rein serve`: many local processes open sockets and leave them
//! idle or half-sent (slowloris). Each server holds a bounded number open
//! at once, closes each that sends no request head in time, and serves a
//! caller with the token once they are gone; a body over the bound is
//! refused. (The guards on who may call — token, `Host`, `Origin` — are in
//! `mcp_serve.rs` and rein-server's `api.rs`.)

use crate::common;

use std::time::Duration;

use tokio::io::AsyncBufReadExt;

/// The connections `rein mcp serve --http` holds open at once.
const HELD: usize = 1024;

/// Processes, and sockets each: more than [`HELD`] in all.
const PROCESSES: usize = 4;
const SOCKETS_EACH: usize = 300;

/// One hostile process: open `n` sockets to the port, send half a request
/// head on every other one and nothing on the rest, then wait (at most
/// 60 s) for the server to close each; print how many it closed.
const SLOWLORIS: &str = r#"
import socket, sys, time, select
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    if i % 2 == 0:
        s.sendall(("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: " % port).encode())
    socks.append(s)
print("open", flush=True)
open_ = set(socks)
deadline = time.time() + 60
while open_ and time.time() < deadline:
    ready, _, _ = select.select(list(open_), [], [], 1)
    for s in ready:
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if not data:
            open_.discard(s)
print("closed %d of %d" % (n - len(open_), n), flush=True)
"#;

/// `rein mcp serve --http 0` with `token`; the child and its port.
async fn serve(
    home: &std::path::Path,
    root: &std::path::Path,
    token: &str,
) -> (tokio::process::Child, u16) {
    let (child, url, _) = common::mcp::serve_http(home, root, token).await;
    let rest = url.trim_start_matches("http://127.0.0.1:");
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    (child, digits.parse::<u16>().expect("a port"))
}

/// Sockets process `pid` has open.
fn sockets_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |fds| {
        fds.filter_map(Result::ok)
            .filter(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
            })
            .count()
    })
}

/// Loose a crowd of [`PROCESSES`] hostile processes on `port`, served by
/// process `pid`: it holds no more than its bound while they wait, and
/// closes every socket of theirs in time.
async fn crowd_is_bounded_and_closed(port: u16, pid: u32, server: &str) {
    let mut crowd = Vec::new();
    for _ in 0..PROCESSES {
        let mut process = tokio::process::Command::new("python3")
            .args([
                "-c",
                SLOWLORIS,
                &port.to_string(),
                &SOCKETS_EACH.to_string(),
            ])
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3");
        let mut out = tokio::io::BufReader::new(process.stdout.take().expect("stdout")).lines();
        let opened = out.next_line().await.expect("read").expect("a line");
        assert_eq!(opened, "open");
        crowd.push((process, out));
    }
    // While they wait, the server holds no more than its bound.
    let mut most = 0;
    for _ in 0..20 {
        most = most.max(sockets_of(pid));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        most <= HELD + 8,
        "{server} held {most} sockets open at once"
    );
    // Each socket is closed by the server in time: none holds a place for
    // nothing (the kernel's backlog is served as places free up).
    for (mut process, mut out) in crowd {
        let said = out.next_line().await.expect("read").expect("a line");
        assert_eq!(said, format!("closed {SOCKETS_EACH} of {SOCKETS_EACH}"));
        process.wait().await.expect("the process ends");
    }
}

/// POST `body` to the MCP endpoint `url` with the token; the status.
async fn post_mcp(url: &str, token: &str, body: String) -> u16 {
    reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("answered")
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_half_sent_sockets_from_many_processes_are_bounded_and_closed() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let home = tempfile::tempdir().expect("home");
    let root = tempfile::tempdir().expect("root");
    let token = "a-test-token-of-forty-characters-0123456";
    let (child, port) = serve(home.path(), root.path(), token).await;
    let pid = child.id().expect("running");
    crowd_is_bounded_and_closed(port, pid, "rein mcp serve").await;
    // Then a caller with the token is served.
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}"#;
    let url = format!("http://127.0.0.1:{port}/mcp");
    assert_eq!(post_mcp(&url, token, initialize.to_owned()).await, 200);
    // A body over the bound (4 MiB), even with the token, is refused whole.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(5 * 1024 * 1024)
    );
    assert_eq!(post_mcp(&url, token, huge).await, 413);
    drop(child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rein_serve_bounds_and_closes_idle_and_half_sent_sockets_from_many_processes() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let home = tempfile::tempdir().expect("home");
    let root = tempfile::tempdir().expect("root");
    let token = "a-test-token-of-forty-characters-0123456";
    let (mut child, base) = common::serve::served(home.path(), root.path(), token, &[]);
    let port: u16 = base
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches('/')
        .parse()
        .expect("a port");
    crowd_is_bounded_and_closed(port, child.id(), "rein serve").await;
    // Then a caller with the token is served.
    let http = reqwest::Client::new();
    let answer = http
        .get(format!("{base}/api/conversations"))
        .bearer_auth(token)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("answered");
    assert_eq!(answer.status().as_u16(), 200);
    // A body over the API's bound (64 KiB), even with the token, is
    // refused whole.
    let huge = format!(r#"{{"pad":"{}"}}"#, "x".repeat(1024 * 1024));
    let answer = http
        .post(format!("{base}/api/conversations"))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(huge)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("answered");
    assert_eq!(answer.status().as_u16(), 413);
    child.kill().expect("killed");
    child.wait().expect("reaped");
}
