//! `rein serve` from outside: it listens on 127.0.0.1, prints a one-time
//! login link, and the link's cookie opens the API; a bearer token comes
//! only from `REIN_SERVE_TOKEN` (never printed), and a short one is refused.

mod common;

use std::time::{Duration, Instant};

use common::{rein_at, run_with_stdin, spawn_with_lines, stderr};

#[test]
fn the_login_link_opens_the_api_once_and_the_token_comes_from_the_environment() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let token = "t".repeat(40);
    let mut cmd = rein_at(home.path());
    cmd.args(["serve", "--scripted", "--root"])
        .arg(root.path())
        .env("REIN_SERVE_TOKEN", &token);
    let (mut child, lines) = spawn_with_lines(cmd);
    let until = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    let link = loop {
        let line = lines
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no link:\n{}", seen.join("\n")));
        if let Some(at) = line.find("http://") {
            break line[at..].trim().to_owned();
        }
        seen.push(line);
    };
    assert!(link.starts_with("http://127.0.0.1:"), "{link}");
    let said = seen.join("\n");
    assert!(!said.contains(&token), "the token is never printed");
    let http = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let login = http.get(&link).send().unwrap();
    assert_eq!(login.status().as_u16(), 303);
    let cookie = login.headers()["set-cookie"].to_str().unwrap();
    let pair = cookie.split(';').next().unwrap().to_owned();
    let base = link.split("/api/").next().unwrap().to_owned();
    let listed = http
        .get(format!("{base}/api/conversations"))
        .header("cookie", &pair)
        .send()
        .unwrap();
    assert_eq!(listed.status().as_u16(), 200);
    assert_eq!(http.get(&link).send().unwrap().status().as_u16(), 401);
    let by_token = http
        .get(format!("{base}/api/conversations"))
        .bearer_auth(&token)
        .send()
        .unwrap();
    assert_eq!(by_token.status().as_u16(), 200);
    child.kill().unwrap();
    child.wait().unwrap();

    // A short token is refused before anything listens.
    let mut cmd = rein_at(home.path());
    cmd.args(["serve", "--scripted"])
        .env("REIN_SERVE_TOKEN", "short");
    let out = run_with_stdin(cmd, b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("error[invalid_input]"),
        "{}",
        stderr(&out)
    );
}
