//! `rein memory` as a person uses it: items added by hand are listed,
//! searched, shown and exported in their scope and no other; forgetting
//! removes one for good (its history keeps that, not the text); bad input is refused with its code; control
//! characters in an item never reach the terminal raw.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use std::path::Path;

fn memory(home: &Path, args: &[&str]) -> std::process::Output {
    common::rein_at(home)
        .arg("memory")
        .args(args)
        .output()
        .unwrap()
}

fn ok(home: &Path, args: &[&str]) -> String {
    let out = memory(home, args);
    assert!(out.status.success(), "{args:?}: {}", common::stderr(&out));
    common::stdout(&out)
}

#[test]
fn a_person_adds_finds_exports_and_forgets_memory_in_its_scope() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let alice = ["--scope", "person:alice"];
    let added = ok(
        h,
        &[
            &alice[..],
            &["add", "Prefers tabs over spaces", "--tag", "style"],
        ]
        .concat(),
    );
    let tabs = added.split_whitespace().nth(1).unwrap().to_owned();
    assert!(tabs.starts_with("mem"), "{added}");
    ok(
        h,
        &[&alice[..], &["add", "Ships on Tuesdays", "--pinned"]].concat(),
    );
    ok(
        h,
        &[&alice[..], &["add", "bell\u{7}\u{1b}[2J here"]].concat(),
    );

    let listed = ok(h, &[&alice[..], &["list"]].concat());
    assert_eq!(listed.lines().count(), 3, "{listed}");
    assert!(listed.contains("(pinned) Ships on Tuesdays"), "{listed}");
    assert!(listed.contains("[style] Prefers tabs"), "{listed}");
    assert!(
        !listed.contains('\u{1b}') && !listed.contains('\u{7}'),
        "{listed:?}"
    );

    let found = ok(h, &[&alice[..], &["search", "TABS"]].concat());
    assert_eq!(found.lines().count(), 1, "{found}");
    assert!(found.contains(&tabs));
    let shown = ok(h, &[&alice[..], &["show", &tabs]].concat());
    assert!(shown.contains("\"scope\": \"person:alice\""), "{shown}");

    let export = ok(h, &[&alice[..], &["export"]].concat());
    let items: Vec<serde_json::Value> = export
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0]["text"], "Prefers tabs over spaces");

    // Another scope sees none of it, and cannot forget it.
    let bob = ["--scope", "person:bob"];
    assert_eq!(
        ok(h, &[&bob[..], &["search", "tabs"]].concat()).trim(),
        "nothing in person:bob matches"
    );
    assert_eq!(
        ok(h, &[&bob[..], &["list"]].concat()).trim(),
        "nothing remembered in person:bob yet (add: rein memory add TEXT)"
    );
    assert_eq!(
        ok(h, &[&bob[..], &["history"]].concat()).trim(),
        "nothing remembered or forgotten in person:bob yet"
    );
    assert!(ok(h, &[&bob[..], &["list", "--json"]].concat()).is_empty());
    let theirs = memory(h, &[&bob[..], &["forget", &tabs]].concat());
    assert!(!theirs.status.success());
    assert!(
        common::stderr(&theirs).contains("memory_not_found"),
        "{}",
        common::stderr(&theirs)
    );

    ok(h, &[&alice[..], &["forget", &tabs]].concat());
    assert!(ok(h, &[&alice[..], &["search", "tabs"]].concat()).contains("matches"));
    assert_eq!(ok(h, &[&alice[..], &["list"]].concat()).lines().count(), 2);
    // The history keeps that it was forgotten, not what it said.
    let history = ok(h, &[&alice[..], &["history"]].concat());
    let first: serde_json::Value = serde_json::from_str(history.lines().next().unwrap()).unwrap();
    assert_eq!(first["kind"], "forgotten");
    assert_eq!(first["id"], tabs.as_str());
    assert_eq!(history.lines().count(), 4, "{history}");
    assert!(!history.contains("Prefers tabs"), "{history}");

    let empty = memory(h, &[&alice[..], &["add", "   "]].concat());
    assert!(!empty.status.success());
    assert!(
        common::stderr(&empty).contains("invalid_input"),
        "{}",
        common::stderr(&empty)
    );
}

#[test]
fn the_default_scope_is_this_projects() {
    let home = tempfile::tempdir().unwrap();
    let here = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let run = |dir: &Path, args: &[&str]| {
        let out = common::rein_at(home.path())
            .current_dir(dir)
            .arg("memory")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
        common::stdout(&out)
    };
    run(here.path(), &["add", "this project uses nextest"]);
    assert_eq!(run(here.path(), &["search", "nextest"]).lines().count(), 1);
    assert!(run(elsewhere.path(), &["search", "nextest"]).starts_with("nothing in project:"));
}
