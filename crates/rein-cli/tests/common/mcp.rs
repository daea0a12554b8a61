//! `rein mcp serve`, as the tests of its clients start it and decide
//! what its calls wait for.

use std::time::Duration;

use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc::UnboundedReceiver;

/// `rein mcp serve --http 0` on the store in `home` over `root`, with
/// `token`: the child, its `/mcp` address, and every line it writes to
/// stderr after the address (read as they come, so it never blocks on a
/// full pipe).
pub async fn serve_http(
    home: &std::path::Path,
    root: &std::path::Path,
    token: &str,
) -> (tokio::process::Child, String, UnboundedReceiver<String>) {
    serve_http_with(home, root, token, &[]).await
}

/// [`serve_http`] with `extra` arguments (`--session ID`, say).
pub async fn serve_http_with(
    home: &std::path::Path,
    root: &std::path::Path,
    token: &str,
    extra: &[&str],
) -> (tokio::process::Child, String, UnboundedReceiver<String>) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .env("REIN_HOME", home)
        .env("REIN_MCP_TOKEN", token)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .args(["mcp", "serve", "--http", "0"])
        .args(extra)
        .arg("--root")
        .arg(root)
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("rein mcp serve --http starts");
    let mut reader = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = reader.next_line().await {
            if let Some(at) = line.find("http://") {
                return line[at..]
                    .split_whitespace()
                    .next()
                    .expect("url")
                    .to_owned();
            }
        }
        panic!("no address printed");
    })
    .await
    .expect("the address is printed");
    let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(line)) = reader.next_line().await {
            let _ = tx.send(line);
        }
    });
    (child, url, lines)
}

/// Wait for the server's line naming where a call waits: (session,
/// approval).
pub async fn asked(lines: &mut UnboundedReceiver<String>) -> (String, String) {
    let line = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let line = lines.recv().await.expect("the server's stderr ended");
            if line.contains("rein approve ") {
                return line;
            }
        }
    })
    .await
    .expect("the server said where the call waits");
    let words: Vec<&str> = line
        .split("rein approve ")
        .nth(1)
        .expect("words")
        .split_whitespace()
        .collect();
    (words[0].to_owned(), words[1].to_owned())
}

/// Wait for the server's line naming the approval; answer it with `rein approve`.
pub async fn decide(
    lines: &mut UnboundedReceiver<String>,
    home: &std::path::Path,
    answer: &str,
    shown: &str,
) -> String {
    let (session, approval) = asked(lines).await;
    // Whoever decides sees what the call would do, never only its name.
    let listed = super::rein_at(home)
        .args(["approve", &session])
        .output()
        .expect("rein approve lists");
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        listed.contains(&approval) && listed.contains(shown),
        "the waiting call was listed blind:\n{listed}"
    );
    let out = super::rein_at(home)
        .args(["approve", &session, &approval, answer])
        .output()
        .expect("rein approve runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    session
}
