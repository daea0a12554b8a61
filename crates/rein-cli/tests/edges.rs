//! Edges a careless person or a hostile peer finds: the store is owner-only
//! and never a FIFO; a provider's error text reaches the terminal with its
//! controls made visible; a streamable-HTTP MCP server is listed without a
//! panic. Through the `rein` binary.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{rein_at, stderr};
use rein_testing::{FakeServer, Reply};

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_store_is_owner_only() {
    let parent = tempfile::tempdir().unwrap();
    std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = parent.path().join("home");
    let out = rein_at(&home)
        .args(["chat", "--scripted", "-p", "hello"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mode(&home), 0o700, "the home it made");
    for file in ["rein.db", "rein.db-wal"] {
        let path = home.join(file);
        if path.exists() {
            assert_eq!(mode(&path), 0o600, "{file}");
        }
    }
    // One made readable by others before is made owner-only again.
    std::fs::set_permissions(home.join("rein.db"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = rein_at(&home).args(["sessions", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mode(&home.join("rein.db")), 0o600);
}

#[test]
fn a_fifo_in_the_stores_place_is_refused_not_waited_on() {
    let home = tempfile::tempdir().unwrap();
    nix::unistd::mkfifo(
        &home.path().join("rein.db"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let mut child = rein_at(home.path())
        .args(["sessions", "list"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("rein waited on a FIFO");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(
        said.contains("store_unavailable") && said.contains("not a regular file"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_providers_error_text_reaches_the_terminal_made_visible() {
    let hostile = "{\"error\":{\"message\":\"bad \\u001b]0;owned\\u0007\\u001b[2J\\u202eevil\"}}";
    let server = FakeServer::start(vec![Reply::status(400, hostile)])
        .await
        .unwrap();
    let url = format!("{}/v1", server.base_url());
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        rein_at(&home_path)
            .args(["chat", "--base-url", &url, "--model", "m", "-p", "hi"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let said = stderr(&out);
    assert!(!out.status.success());
    assert!(said.contains("provider_bad_request"), "{said}");
    for raw in ['\u{1b}', '\u{7}', '\u{202e}'] {
        assert!(
            !said.contains(raw),
            "{raw:?} reached the terminal: {said:?}"
        );
    }
    assert!(said.contains("<U+202E>"), "{said}");
}

#[test]
fn a_streamable_http_mcp_server_is_listed_without_a_panic() {
    let home = tempfile::tempdir().unwrap();
    // Nothing listens there: the listing says so instead of panicking.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[mcp.servers.remote]\nurl = \"http://127.0.0.1:{port}/mcp\"\nstart_timeout_secs = 5\n"
        ),
    )
    .unwrap();
    let out = rein_at(home.path()).args(["mcp", "list"]).output().unwrap();
    let said = format!("{}{}", common::stdout(&out), stderr(&out));
    assert!(!said.contains("panicked"), "{said}");
    assert!(!said.contains("crypto provider"), "{said}");
    assert!(said.contains("remote"), "{said}");
}

#[test]
fn a_huge_prompt_is_shown_cut_with_what_was_left_out() {
    let home = tempfile::tempdir().unwrap();
    let huge = "y".repeat(300_000);
    let mut cmd = rein_at(home.path());
    cmd.args(["chat", "--scripted"]);
    let out = common::run_with_stdin(cmd, format!("{huge}\n/exit\n").as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    let session = common::session_of(&out);
    let shown = rein_at(home.path())
        .args(["sessions", "show", &session])
        .output()
        .unwrap();
    let shown = common::stdout(&shown);
    assert!(shown.len() < 50_000, "{} bytes shown", shown.len());
    assert!(shown.contains("more characters"), "{}", &shown[..200]);
}
