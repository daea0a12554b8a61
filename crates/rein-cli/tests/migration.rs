//! A database made by rein before schema 4 (`tests/fixtures/schema3/`,
//! written by the previous `rein` with `chat --scripted`: three sessions,
//! one waiting for an approval) opens with today's: migrated in place,
//! every session exports the same bytes as the old rein exported, the
//! list and the waiting approval are as they were, and the session goes
//! on.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::path::{Path, PathBuf};

use crate::common::{rein_at, stderr, stdout};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schema3")
}

#[test]
fn a_schema_3_database_is_migrated_and_reads_as_it_did() {
    let home = tempfile::tempdir().unwrap();
    std::fs::copy(fixtures().join("rein.db"), home.path().join("rein.db")).unwrap();
    let listed = |home: &Path| {
        let out = rein_at(home)
            .args(["sessions", "list", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let list: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        list.as_array()
            .unwrap()
            .iter()
            .map(|s| format!("{} {} {}", s["id"], s["state"], s["title"]))
            .collect::<Vec<_>>()
    };
    let before: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("list.json")).unwrap())
            .unwrap();
    let expected: Vec<String> = before
        .as_array()
        .unwrap()
        .iter()
        .map(|s| format!("{} {} {}", s["id"], s["state"], s["title"]))
        .collect();
    assert_eq!(listed(home.path()), expected);
    for session in before.as_array().unwrap() {
        let id = session["id"].as_str().unwrap();
        let out = rein_at(home.path())
            .args(["sessions", "export", id])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let old = std::fs::read(fixtures().join(format!("{id}.jsonl"))).unwrap();
        assert!(
            out.stdout == old,
            "{id} exports as before:\n{}",
            stdout(&out)
        );
    }
    let waiting = "01a23bbf-f777-71b8-b88a-d6a4779c7a07";
    let out = rein_at(home.path())
        .args(["approve", waiting])
        .output()
        .unwrap();
    assert_eq!(
        stdout(&out),
        std::fs::read_to_string(fixtures().join("approve.txt")).unwrap()
    );
    // It goes on: the approval is decided and recorded after the old log.
    let approval = stdout(&out).split_whitespace().nth(2).unwrap().to_owned();
    let out = rein_at(home.path())
        .args(["approve", waiting, &approval, "no"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = rein_at(home.path())
        .args(["sessions", "export", waiting])
        .output()
        .unwrap();
    let old = std::fs::read_to_string(fixtures().join(format!("{waiting}.jsonl"))).unwrap();
    assert!(
        stdout(&out).starts_with(&old),
        "the old log is kept as it was"
    );
    assert!(
        stdout(&out).contains("approval.decided"),
        "{}",
        stdout(&out)
    );
}
