//! Every command on the store a person names: `--store`, `REIN_STORE`, or
//! the home config's `[store] url` — here a real PostgreSQL server — and
//! the home's SQLite file when none is named. Two `rein serve` processes
//! over one database: either lists every conversation, a turn driven by
//! one streams from the other, a decision posted to the other reaches it,
//! and the other refuses to drive what the first holds.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::time::Duration;

use crate::common::serve::{created, served, until, watch};
use crate::common::{rein_at, session_of, stderr, stdout};
use serde_json::Value;

fn listed(out: &std::process::Output) -> Vec<String> {
    assert!(out.status.success(), "{}", stderr(out));
    let listed: Value = serde_json::from_str(&stdout(out)).unwrap();
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_chat_on_postgres_is_seen_from_every_home_that_names_the_store() {
    let Some(server) = rein_testing::postgres::server() else {
        return;
    };
    let url = server.database();
    let first = tempfile::tempdir().unwrap();
    let out = rein_at(first.path())
        .args(["--store", &url, "chat", "--scripted", "-p", "hello"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let session = session_of(&out);
    assert!(
        !first.path().join("rein.db").exists(),
        "the home's SQLite file is not made when another store is named"
    );

    // The environment, from another home.
    let second = tempfile::tempdir().unwrap();
    let out = rein_at(second.path())
        .env("REIN_STORE", &url)
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    assert_eq!(listed(&out), vec![session.clone()]);

    // The home config, from a third.
    let third = tempfile::tempdir().unwrap();
    std::fs::write(
        third.path().join("config.toml"),
        format!("[store]\nurl = \"{url}\"\n"),
    )
    .unwrap();
    let out = rein_at(third.path())
        .args(["sessions", "show", &session])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("hello"), "{}", stdout(&out));

    // Named nowhere: the home's own file, which has none of it.
    let fourth = tempfile::tempdir().unwrap();
    let out = rein_at(fourth.path())
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    assert!(listed(&out).is_empty());
}

#[test]
fn a_store_that_cannot_be_opened_is_a_coded_error_without_its_password() {
    let home = tempfile::tempdir().unwrap();
    // (A password on the command line is refused before; from the
    // environment it is the person's own.)
    for (store, code) in [
        ("mysql://me@127.0.0.1/db", "invalid_input"),
        ("postgres://me:hunter2@127.0.0.1:1/db", "store_unavailable"),
    ] {
        let out = rein_at(home.path())
            .env("REIN_STORE", store)
            .args(["sessions", "list"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{store}");
        let err = stderr(&out);
        assert!(err.contains(&format!("error[{code}]")), "{store}: {err}");
        assert!(!err.contains("hunter2"), "{err}");
    }
}

#[test]
fn two_servers_on_one_database_share_a_turn_its_stream_and_its_decision() {
    let Some(server) = rein_testing::postgres::server() else {
        return;
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = server.database();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "TODO: the first line\n").unwrap();
    let token = "t".repeat(40);
    let (homes, mut children, mut bases) = (
        [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()],
        Vec::new(),
        Vec::new(),
    );
    for home in &homes {
        let (child, base) = served(home.path(), root.path(), &token, &["--store", &url]);
        children.push(child);
        bases.push(base);
    }
    let (a, b) = (&bases[0], &bases[1]);
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    // Made on A, listed by B.
    let id = created(&http, a, &token);
    let listed: Value = http
        .get(format!("{b}/api/conversations"))
        .bearer_auth(&token)
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert!(listed.to_string().contains(&id), "{listed}");

    // A turn posted to A streams from B, up to the approval it waits on.
    let events = format!("{b}/api/conversations/{id}/events");
    let watching = watch(&http, &events, &token);
    let posted = http
        .post(format!("{a}/api/conversations/{id}/turns"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"text": "write notes.txt"}))
        .send()
        .unwrap();
    assert_eq!(posted.status().as_u16(), 202);
    let asked = until(watching, "approval.requested");
    let approval = asked["data"]["approval_id"].as_str().unwrap().to_owned();

    // B does not drive a conversation A holds.
    let refused = http
        .post(format!("{b}/api/conversations/{id}/turns"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"text": "hello"}))
        .send()
        .unwrap();
    assert_eq!(refused.status().as_u16(), 423);
    assert!(refused.text().unwrap().contains("session_locked"));

    // The person's yes, posted to B, reaches the turn A drives.
    let watching = watch(&http, &events, &token);
    let decided = http
        .post(format!("{b}/api/conversations/{id}/approvals/{approval}"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"decision": "yes"}))
        .send()
        .unwrap();
    assert_eq!(decided.status().as_u16(), 200, "{:?}", decided.text());
    let finished = until(watching, "turn.finished");
    assert_eq!(finished["data"]["outcome"], "finished", "{finished}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.txt")).unwrap(),
        "written by rein's scripted model\n"
    );
    children.iter_mut().for_each(|c| {
        let _ = c.kill();
        let _ = c.wait();
    });
}

#[test]
fn a_store_copied_to_postgres_and_back_exports_the_same_bytes() {
    let Some(server) = rein_testing::postgres::server() else {
        return;
    };
    let url = server.database();
    let home = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    for prompt in ["hello", "what is two plus two"] {
        let out = rein_at(home.path())
            .args(["chat", "--scripted", "-p", prompt])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        ids.push(session_of(&out));
    }
    let export = |home: &std::path::Path, store: Option<&str>, id: &str| {
        let mut cmd = rein_at(home);
        if let Some(store) = store {
            cmd.args(["--store", store]);
        }
        let out = cmd.args(["sessions", "export", id]).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        out.stdout
    };
    let copy = |from: &str, to: &str| {
        let out = rein_at(home.path())
            .args(["store", "copy", "--from", from, "--to", to])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let sqlite = format!("sqlite:{}", home.path().join("rein.db").display());
    let said = copy(&sqlite, &url);
    assert!(said.contains("copied 2 sessions"), "{said}");
    let back = tempfile::tempdir().unwrap();
    let said = copy(
        &url,
        &format!("sqlite:{}", back.path().join("rein.db").display()),
    );
    assert!(said.contains("copied 2 sessions"), "{said}");
    for id in &ids {
        let original = export(home.path(), None, id);
        assert!(!original.is_empty());
        assert_eq!(
            original,
            export(home.path(), Some(&url), id),
            "on PostgreSQL"
        );
        assert_eq!(original, export(back.path(), None, id), "and back");
    }
    // Run again: everything is there already.
    let said = copy(&sqlite, &url);
    assert!(
        said.contains("copied 0 sessions") && said.contains("2 were there already"),
        "{said}"
    );
}

#[test]
fn a_trusted_projects_config_cannot_move_the_store() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let elsewhere = project.path().join("elsewhere.db");
    std::fs::create_dir_all(project.path().join(".rein")).unwrap();
    std::fs::write(
        project.path().join(".rein/config.toml"),
        format!("[store]\nurl = \"sqlite:{}\"\n", elsewhere.display()),
    )
    .unwrap();
    let mut trust = rein_at(home.path());
    trust.args(["config", "trust"]).arg(project.path());
    assert!(trust.output().unwrap().status.success());
    let out = rein_at(home.path())
        .current_dir(project.path())
        .args(["chat", "--scripted", "-p", "hello"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let session = session_of(&out);
    assert!(!elsewhere.exists(), "a project named the store");
    let out = rein_at(home.path())
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    assert_eq!(listed(&out), vec![session]);
}

#[test]
fn a_password_on_the_command_line_is_refused_and_never_echoed() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        vec![
            "--store",
            "postgres://rein:hunter2-secret@127.0.0.1:1/rein",
            "sessions",
            "list",
        ],
        vec![
            "--store=postgresql://rein:hunter2-secret@127.0.0.1:1/rein",
            "sessions",
            "list",
        ],
    ] {
        let out = rein_at(home.path()).args(&args).output().unwrap();
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            err.contains("error[invalid_input]") && err.contains("PGPASSWORD"),
            "{err}"
        );
        assert!(!err.contains("hunter2"), "{err}");
    }
    // The same URL from REIN_STORE is the person's own environment: not
    // refused for the password (the server at port 1 is not there).
    let out = rein_at(home.path())
        .env(
            "REIN_STORE",
            "postgres://rein:hunter2-secret@127.0.0.1:1/rein",
        )
        .arg("sessions")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        !err.contains("PGPASSWORD") && !err.contains("hunter2"),
        "{err}"
    );
}
