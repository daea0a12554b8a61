//! Every command on the store a person names: `--store`, `REIN_STORE`, or
//! the home config's `[store] url` — here a real PostgreSQL server — and
//! the home's SQLite file when none is named.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

mod common;

use common::{rein_at, session_of, stderr, stdout};
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
    for (store, code) in [
        ("mysql://me@127.0.0.1/db", "invalid_input"),
        ("postgres://me:hunter2@127.0.0.1:1/db", "store_unavailable"),
    ] {
        let out = rein_at(home.path())
            .args(["--store", store, "sessions", "list"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{store}");
        let err = stderr(&out);
        assert!(err.contains(&format!("error[{code}]")), "{store}: {err}");
        assert!(!err.contains("hunter2"), "{err}");
    }
}
