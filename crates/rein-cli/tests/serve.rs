//! `rein serve` from outside: it listens on 127.0.0.1, prints a one-time
//! login link, and the link's cookie opens the API; a bearer token comes
//! only from `REIN_SERVE_TOKEN` (never printed), and a short one is refused.
//! A turn posted with its own check runs it in the agent's sandbox, and
//! its end carries its ids.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::time::{Duration, Instant};

use crate::common::serve::{created, served, until, until_all, watch};
use crate::common::{rein_at, run_with_stdin, spawn_with_lines, stderr};

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

#[test]
#[expect(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn a_turn_posted_with_its_own_check_runs_it_in_the_agents_sandbox_and_its_end_carries_its_ids() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    // The agent's own check: the sandbox a turn's check runs in; the
    // person's policy runs `sh FILE` unasked (a client's check must pass it).
    std::fs::write(
        home.path().join("config.toml"),
        "[agent.verify]\ncommand = [\"true\"]\n[commands]\ndefault = \"allow\"\n",
    )
    .unwrap();
    let token = "t".repeat(40);
    let (mut child, base) = served(home.path(), root.path(), &token, &[]);
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let id = created(&http, &base, &token);
    let turn = |body: serde_json::Value| {
        http.post(format!("{base}/api/conversations/{id}/turns"))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .unwrap()
    };
    // A bad check is refused before anything runs.
    let refused = turn(serde_json::json!({"text": "hello", "verify": {"command": []}}));
    assert_eq!(refused.status().as_u16(), 400);
    // A check that must exit 3, and does: the turn finishes, its receipt
    // is in the log (it ran in the sandbox: it writes nowhere outside).
    let outside = tempfile::tempdir().unwrap();
    let mark = outside.path().join("escaped");
    std::fs::write(
        root.path().join("check.sh"),
        format!("touch {} 2>/dev/null; exit 3\n", mark.display()),
    )
    .unwrap();
    // Watched before the turn starts: its end is a live event.
    let events = format!("{base}/api/conversations/{id}/events");
    let watching = watch(&http, &events, &token);
    let accepted = turn(serde_json::json!({
        "text": "hello",
        "verify": {"command": ["sh", "check.sh"], "expected_exit": 3}
    }));
    assert_eq!(accepted.status().as_u16(), 202);
    let finished = until(watching, "turn_finished");
    let text = finished.to_string();
    assert!(text.contains("\"finished\""), "{text}");
    let turns: serde_json::Value = http
        .get(format!("{base}/api/conversations/{id}"))
        .bearer_auth(&token)
        .send()
        .unwrap()
        .json()
        .unwrap();
    let turn_id = turns["turns"][0]["turn_id"]
        .as_str()
        .or_else(|| turns["turns"][0]["id"].as_str())
        .unwrap_or_else(|| panic!("{turns}"));
    assert!(text.contains(turn_id), "the end names its turn: {text}");
    assert!(text.contains("run_id"), "{text}");
    assert!(!mark.exists(), "the check ran outside the sandbox");
    // Its receipt is in the log.
    let receipt = until(watch(&http, &events, &token), "check.ran").to_string();
    assert!(
        receipt.contains("\"expected\":3")
            && receipt.contains("\"exit\":3")
            && receipt.contains("\"passed\":true"),
        "{receipt}"
    );
    // A check whose output holds a key: what reaches the model and the log
    // is masked, as a tool's result is.
    std::fs::write(
        root.path().join(".env"),
        "OPENAI_API_KEY=sk-live-4f1c9a2b7e3d8c6a\n",
    )
    .unwrap();
    std::fs::write(root.path().join("leak.sh"), "cat .env; exit 7\n").unwrap();
    let watching = watch(&http, &events, &token);
    let accepted =
        turn(serde_json::json!({"text": "again", "verify": {"command": ["sh", "leak.sh"]}}));
    assert_eq!(accepted.status().as_u16(), 202);
    until(watching, "verification_failed");
    let exported = rein_at(home.path())
        .args(["sessions", "export", &id])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&exported.stdout).into_owned();
    assert!(log.contains("[redacted]"), "{log}");
    assert!(
        !log.contains("sk-live-4f1c9a2b7e3d8c6a"),
        "the key reached the log: {log}"
    );
    // What the policy would ask about, or a shell script, is refused.
    let refused =
        turn(serde_json::json!({"text": "x", "verify": {"command": ["sh", "-c", "cat .env"]}}));
    assert_eq!(refused.status().as_u16(), 403);
    assert!(refused.text().unwrap().contains("policy"));
    child.kill().unwrap();
    child.wait().unwrap();

    // The host backend does not confine: a client's check is refused there
    // (the person's own check still runs, asked of nobody: it is theirs).
    let host_home = tempfile::tempdir().unwrap();
    std::fs::write(
        host_home.path().join("config.toml"),
        "[agent.verify]\ncommand = [\"true\"]\n[commands]\ndefault = \"allow\"\n[sandbox]\nbackend = \"host\"\nunsafe_host_not_isolated = true\n",
    )
    .unwrap();
    let (mut child, base) = served(host_home.path(), root.path(), &token, &[]);
    let id = created(&http, &base, &token);
    let refused = http
        .post(format!("{base}/api/conversations/{id}/turns"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"text": "hi", "verify": {"command": ["sh", "check.sh"]}}))
        .send()
        .unwrap();
    assert_eq!(refused.status().as_u16(), 403);
    assert!(refused.text().unwrap().contains("confines"));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!mark.exists());
    child.kill().unwrap();
    child.wait().unwrap();

    // An agent without a sandboxed check of its own runs none a client
    // sends: a client's command never runs on the host.
    let bare = tempfile::tempdir().unwrap();
    let (mut child, base) = served(bare.path(), root.path(), &token, &[]);
    let id = created(&http, &base, &token);
    let refused = http
        .post(format!("{base}/api/conversations/{id}/turns"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"text": "hi", "verify": {"command": ["sh", "-c", format!("touch {}", mark.display())]}}))
        .send()
        .unwrap();
    assert_eq!(refused.status().as_u16(), 400);
    assert!(refused.text().unwrap().contains("runs no checks"));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!mark.exists());
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A turn posted with its own check that waits at a question goes on after
/// `rein serve` restarts: `POST /resume` keeps the turn's check (it runs
/// when the turn ends), and a stop ends such a turn at once though nobody
/// drives it.
#[test]
fn a_checked_turn_goes_on_after_a_restart_and_a_stop_ends_one_nobody_drives() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[agent.verify]\ncommand = [\"true\"]\n[commands]\ndefault = \"allow\"\n",
    )
    .unwrap();
    std::fs::write(root.path().join("check.sh"), "exit 3\n").unwrap();
    let token = "t".repeat(40);
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let (mut child, base) = served(home.path(), root.path(), &token, &[]);
    let id = created(&http, &base, &token);
    let post = |base: &str, path: &str, body: serde_json::Value| {
        http.post(format!("{base}/api/conversations/{id}{path}"))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .unwrap()
    };
    // A checked turn asks, and the server is killed while it waits.
    let asking = |base: &str, file: &str| {
        let watching = watch(
            &http,
            &format!("{base}/api/conversations/{id}/events"),
            &token,
        );
        let posted = post(
            base,
            "/turns",
            serde_json::json!({
                "text": format!("write {file}"),
                "verify": {"command": ["sh", "check.sh"], "expected_exit": 3}
            }),
        );
        assert_eq!(posted.status().as_u16(), 202, "{:?}", posted.text());
        let asked = until_all(watching, &["approval.requested", file]);
        asked["data"]["approval_id"].as_str().unwrap().to_owned()
    };
    let approval = asking(&base, "first.txt");
    child.kill().unwrap();
    child.wait().unwrap();

    // Restarted, the turn goes on under its own check.
    let (mut child, base) = served(home.path(), root.path(), &token, &[]);
    let resumed = post(&base, "/resume", serde_json::json!({}));
    assert_eq!(resumed.status().as_u16(), 202, "{:?}", resumed.text());
    let events = format!("{base}/api/conversations/{id}/events");
    let watching = watch(&http, &events, &token);
    let decided = post(
        &base,
        &format!("/approvals/{approval}"),
        serde_json::json!({"decision": "yes"}),
    );
    assert_eq!(decided.status().as_u16(), 200, "{:?}", decided.text());
    let finished = until(watching, "turn.finished");
    assert_eq!(finished["data"]["outcome"], "finished", "{finished}");
    let receipt = until(watch(&http, &events, &token), "check.ran").to_string();
    assert!(
        receipt.contains("\"expected\":3") && receipt.contains("\"passed\":true"),
        "the turn's own check did not run: {receipt}"
    );

    // Another asks; killed again; restarted, a stop ends it at once.
    asking(&base, "second.txt");
    child.kill().unwrap();
    child.wait().unwrap();
    let (mut child, base) = served(home.path(), root.path(), &token, &[]);
    let stopped = post(&base, "/stop", serde_json::json!({}));
    assert_eq!(stopped.status().as_u16(), 202, "{:?}", stopped.text());
    let next = post(&base, "/turns", serde_json::json!({"text": "hello"}));
    assert_eq!(
        next.status().as_u16(),
        202,
        "the stopped turn is still open: {:?}",
        next.text()
    );
    assert!(!root.path().join("second.txt").exists());
    child.kill().unwrap();
    child.wait().unwrap();
}
