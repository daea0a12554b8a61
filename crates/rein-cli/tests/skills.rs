//! `rein chat --skills DIR`: the skills' index sits in the stable prefix
//! with `read_skill` beside it; a malformed skill stops the chat at once
//! with `skill_invalid` naming the file, before any model call.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use crate::common;

use rein_testing::{FakeServer, Reply, ScriptedMessage};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_are_offered_and_a_bad_one_is_refused_at_load() {
    let skills = tempfile::tempdir().unwrap();
    std::fs::write(
        skills.path().join("notes.md"),
        "---\nname: release-notes\ntitle: Release notes\nwhen: the person asks for release notes\n---\nList the changes by kind.\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![Reply::sse(
        ScriptedMessage::text(&["Noted."]).openai_chat_sse(),
    )])
    .await
    .unwrap();
    let url = format!("{}/v1", server.base_url());
    let dir = skills.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        common::rein()
            .args(["chat", "--base-url", &url, "--model", "m", "--skills"])
            .arg(&dir)
            .args(["-p", "hello"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = server.requests()[0].json().to_string();
    assert!(
        sent.contains("release-notes: the person asks for release notes"),
        "{sent}"
    );
    assert!(sent.contains("\"read_skill\""), "{sent}");

    std::fs::write(skills.path().join("broken.md"), "no front matter here\n").unwrap();
    let out = common::rein()
        .args(["chat", "--scripted", "--skills"])
        .arg(skills.path())
        .args(["-p", "hello"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error[skill_invalid]") && err.contains("broken.md"),
        "{err}"
    );
}
