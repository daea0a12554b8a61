//! Receipts, not claims: a verification check leaves a receipt in the log
//! (`check.ran`: command, exit, the revisions of the files changed), a
//! compaction's derived state keeps the receipts and the files changed,
//! and the model's summary — a typed record — is checked against them
//! field by field: one claiming a change or a passing check the log does
//! not show, or quoting a file for words its reads never showed, or not a
//! record at all, is asked for again once, then dropped, and the log's
//! record of the compaction says which.

#![allow(clippy::unwrap_used, reason = "tests")]

use crate::common;

use std::sync::Arc;

use crate::common::{call, calls, open, says, setup};
use rein_approvals::{Answer, LeaseScope, Surface};
use rein_runner::{Conversation, TurnOutcome};
use rein_sessions::{Event, StoredEvent};
use rein_testing::{FakeProvider, ScriptedMessage};
use serde_json::{Value, json};

/// Two turns: the first reads and rewrites a.rs (a person approves), the
/// second reads five other files; a check that must exit 3 runs at each
/// final answer. Then `summaries` answer the compaction asked for.
async fn worked(s: &common::Setup, summaries: &[String]) -> (Conversation, Arc<FakeProvider>) {
    let mut script = vec![
        calls(vec![call("r0", "read_file", json!({"path": "a.rs"}))]),
        calls(vec![call(
            "w0",
            "write_file",
            json!({"path": "a.rs", "content": "fn a() { 2 }"}),
        )]),
        says("a.rs rewritten"),
    ];
    for i in 0..5 {
        script.push(calls(vec![call(
            &format!("r{}", i + 1),
            "read_file",
            json!({"path": format!("f{i}.rs")}),
        )]));
    }
    script.push(says("b.rs read"));
    script.extend(summaries.iter().map(|text| says(text)));
    let provider = Arc::new(FakeProvider::from_messages(&script));
    let mut conv = open(s, provider.clone(), None).await;
    let mut check = rein_runner::Verification::new(&["sh", "-c", "exit 3"]);
    check.expected = 3;
    conv.agent.verification = Some(check);
    let TurnOutcome::AwaitingApproval(asked) = conv.turn("rewrite a.rs").await.unwrap() else {
        panic!("the write was not asked")
    };
    conv.decide(
        &asked.approval_id,
        Answer::Approve(LeaseScope::Once),
        &Surface::terminal(),
    )
    .await
    .unwrap();
    assert!(matches!(
        conv.resume().await.unwrap(),
        TurnOutcome::Finished { .. }
    ));
    assert!(matches!(
        conv.turn("now read five files").await.unwrap(),
        TurnOutcome::Finished { .. }
    ));
    (conv, provider)
}

async fn log(s: &common::Setup, conv: &Conversation) -> Vec<StoredEvent> {
    s.store.read(conv.session_id(), 1, 10_000).await.unwrap()
}

fn compaction(log: &[StoredEvent]) -> Value {
    log.iter()
        .find_map(|e| match &e.event {
            Event::CompactionCreated { summary, .. }
                if matches!(**summary, rein_sessions::Compaction::Compact(_)) =>
            {
                Some(serde_json::to_value(summary).unwrap())
            }
            _ => None,
        })
        .expect("a compaction")
}

/// A summary record with `fields` over empty ones, as the model answers.
fn record(fields: Value) -> String {
    let mut record = json!({
        "goal": "", "done": [], "files_changed": [], "checks": [], "facts": [], "next": ""
    });
    for (key, value) in fields.as_object().unwrap() {
        record[key] = value.clone();
    }
    record.to_string()
}

/// What the conversation of [`worked`] did, recorded honestly.
fn honest() -> String {
    record(json!({
        "goal": "rewrite a.rs, then read five files",
        "done": ["Rewrote a.rs", "Read the files asked for"],
        "files_changed": ["a.rs"],
        "checks": [{"command": "sh -c exit 3", "passed": true}],
    }))
}

#[tokio::test]
async fn a_check_leaves_a_receipt_and_the_state_keeps_it_with_the_files_changed() {
    let s = setup().await;
    let (mut conv, provider) = worked(&s, &[honest()]).await;
    let log1 = log(&s, &conv).await;
    let receipts: Vec<&Event> = log1
        .iter()
        .map(|e| &e.event)
        .filter(|e| matches!(e, Event::CheckRan { .. }))
        .collect();
    assert_eq!(receipts.len(), 2, "one per final answer");
    let Event::CheckRan {
        command,
        expected,
        exit,
        passed,
        revisions,
        ..
    } = receipts[0]
    else {
        unreachable!()
    };
    assert_eq!(command.join(" "), "sh -c exit 3");
    assert_eq!((*expected, *exit, *passed), (3, Some(3), true));
    assert_eq!(revisions.len(), 1);
    assert_eq!(revisions[0].resource, "a.rs");

    conv.compact_now().await.unwrap();
    let summary = compaction(&log(&s, &conv).await);
    let state = &summary["state"];
    assert_eq!(state["changed"][0]["resource"], "a.rs", "{state}");
    assert_eq!(state["checks"][0]["passed"], true, "{state}");
    assert_eq!(state["checks"][0]["exit"], 3, "{state}");
    assert_eq!(state["checks"][0]["revisions"][0]["resource"], "a.rs");
    let check = &summary["summary_check"];
    assert_eq!(check["outcome"], "kept", "{check}");
    assert_eq!(check["form"], "record");
    assert_eq!(check["record"]["files_changed"], json!(["a.rs"]));
    let text = summary["text"].as_str().unwrap();
    assert!(text.contains("- Rewrote a.rs"), "{text}");
    assert!(text.contains("Checks: `sh -c exit 3` passed"), "{text}");
    // This provider has no structured output: the schema is in the
    // instructions (one with it gets `output_schema`: `too_long.rs`).
    let asked = provider.requests();
    let summary_request = asked.last().unwrap();
    assert!(summary_request.output_schema.is_none());
    let said: String = summary_request
        .system
        .iter()
        .map(|b| b.text.as_str())
        .collect();
    assert!(said.contains("follows this JSON schema"), "{said}");
    assert!(said.contains("\"files_changed\""), "{said}");
}

#[tokio::test]
async fn a_lying_summary_is_asked_again_once_and_the_honest_one_kept() {
    let s = setup().await;
    let lie = record(json!({"done": ["fixed b.rs"], "files_changed": ["a.rs", "b.rs"]}));
    let (mut conv, provider) = worked(&s, &[lie, honest()]).await;
    conv.compact_now().await.unwrap();
    let summary = compaction(&log(&s, &conv).await);
    assert_eq!(
        summary["summary_check"]["outcome"], "rewritten",
        "{summary}"
    );
    assert_eq!(
        summary["summary_check"]["rejected"],
        json!([
            "that b.rs was changed",
            "that b.rs was worked on (no call of it is recorded)"
        ])
    );
    let text = summary["text"].as_str().unwrap();
    assert!(
        text.contains("Rewrote a.rs") && !text.contains("b.rs"),
        "{text}"
    );
    // The second request named what the first claimed wrongly — the file
    // changed, not the file never named (which would send the model to it).
    let requests = provider.requests();
    let again = &requests[requests.len() - 1];
    let said: String = again.system.iter().map(|b| b.text.as_str()).collect();
    assert!(said.contains("that b.rs was changed"), "{said}");
    assert!(said.contains("work on files no call named"), "{said}");
}

#[tokio::test]
async fn a_summary_that_lies_twice_is_dropped_for_the_state_alone() {
    let s = setup().await;
    let passed = json!([{"command": "sh -c exit 3", "passed": true}]);
    let (mut conv, _) = worked(
        &s,
        &[
            record(json!({"files_changed": ["src/new.rs"], "checks": passed})),
            record(json!({"files_changed": ["README.md"], "checks": passed})),
        ],
    )
    .await;
    // The checks did pass (their receipts back them); the files are
    // invented, both times.
    conv.compact_now().await.unwrap();
    let summary = compaction(&log(&s, &conv).await);
    let check = &summary["summary_check"];
    assert_eq!(check["outcome"], "dropped", "{summary}");
    assert_eq!(check["rejected"], json!(["that src/new.rs was changed"]));
    assert_eq!(check["again"], json!(["that README.md was changed"]));
    // The next request carries the state, not the lie.
    let request = conv.next_request().await.unwrap();
    let first = serde_json::to_string(&request.messages[0]).unwrap();
    assert!(
        first.contains("summarised") && !first.contains("new.rs") && !first.contains("README"),
        "{first}"
    );
}

/// A conversation of six reads, then `summaries` for its compaction.
async fn six_reads(
    s: &common::Setup,
    files: &[&str],
    summaries: &[String],
) -> (Conversation, Arc<FakeProvider>) {
    let mut script: Vec<ScriptedMessage> = files
        .iter()
        .enumerate()
        .map(|(i, path)| {
            calls(vec![call(
                &format!("r{i}"),
                "read_file",
                json!({"path": path}),
            )])
        })
        .collect();
    script.push(says("read"));
    script.extend(summaries.iter().map(|text| says(text)));
    let provider = Arc::new(FakeProvider::from_messages(&script));
    let mut conv = open(s, provider.clone(), None).await;
    assert!(matches!(
        conv.turn("read the files").await.unwrap(),
        TurnOutcome::Finished { .. }
    ));
    conv.compact_now().await.unwrap();
    (conv, provider)
}

#[tokio::test]
async fn a_passing_check_the_log_does_not_show_is_a_lie() {
    let s = setup().await;
    // A conversation with no check at all.
    let files = ["f0.rs", "f1.rs", "f2.rs", "f3.rs", "f4.rs", "f5.rs"];
    let (conv, _) = six_reads(
        &s,
        &files,
        &[
            record(json!({"done": ["Read six files"], "checks": [{"command": "cargo test", "passed": true}]})),
            record(json!({"done": ["Read six files"]})),
        ],
    )
    .await;
    let summary = compaction(&log(&s, &conv).await);
    assert_eq!(
        summary["summary_check"]["outcome"], "rewritten",
        "{summary}"
    );
    assert_eq!(
        summary["summary_check"]["rejected"],
        json!(["that `cargo test` passed (no passing run of it is recorded)"])
    );
}

#[tokio::test]
async fn a_summary_that_moves_a_fact_to_another_file_is_asked_again() {
    let mut s = setup().await;
    let files = [
        ("sea.txt", "The colour of the sea here is BLUE."),
        ("sky.txt", "The sky today is grey and low."),
        ("f0.txt", "filler"),
        ("f1.txt", "filler"),
        ("f2.txt", "filler"),
        ("f3.txt", "filler"),
    ];
    s.backend = Arc::new(rein_testing::FakeToolBackend::new(&files).unwrap());
    let paths: Vec<&str> = files.iter().map(|(p, _)| *p).collect();
    // The first summary gives the sea's colour to the sky.
    let moved = record(json!({"facts": [{"file": "sky.txt", "quote": "the sky is BLUE"}]}));
    let quoted = record(json!({"facts": [
        {"file": "sea.txt", "quote": "the colour of the sea here is BLUE"},
        {"file": "sky.txt", "quote": "grey and low"},
    ]}));
    let (conv, _) = six_reads(&s, &paths, &[moved, quoted]).await;
    let summary = compaction(&log(&s, &conv).await);
    assert_eq!(
        summary["summary_check"]["outcome"], "rewritten",
        "{summary}"
    );
    assert_eq!(
        summary["summary_check"]["rejected"],
        json!(["that sky.txt says \"the sky is BLUE\" (its reads do not show it)"])
    );
    let text = summary["text"].as_str().unwrap();
    assert!(
        text.contains("- sea.txt: \"the colour of the sea here is BLUE\""),
        "{text}"
    );
}

#[tokio::test]
async fn an_answer_that_is_not_a_record_is_asked_again() {
    let s = setup().await;
    let (conv, provider) = six_reads(
        &s,
        &["f0.rs", "f1.rs", "f2.rs", "f3.rs", "f4.rs", "f5.rs"],
        &[
            "I read six files.".to_owned(),
            record(json!({"done": ["Read f0.rs first"]})),
        ],
    )
    .await;
    let summary = compaction(&log(&s, &conv).await);
    let check = &summary["summary_check"];
    assert_eq!(check["outcome"], "rewritten", "{check}");
    assert_eq!(
        check["rejected"],
        json!(["an answer that was not the JSON object asked for"])
    );
    let requests = provider.requests();
    let said: String = requests
        .last()
        .unwrap()
        .system
        .iter()
        .map(|b| b.text.as_str())
        .collect();
    assert!(said.contains("not the JSON object asked for"), "{said}");
}

#[tokio::test]
async fn a_summary_that_loops_on_one_item_says_it_once() {
    let s = setup().await;
    // What a small model wrote in try 32, in kind: one line over and over
    // until its output limit.
    let line = "The result for file 0 was lorem ipsum dolor sit amet.";
    let mut done = vec!["Rewrote a.rs"];
    done.extend(std::iter::repeat_n(line, 40));
    let looped = record(json!({"done": done, "files_changed": ["a.rs"]}));
    let (mut conv, _) = worked(&s, &[looped]).await;
    conv.compact_now().await.unwrap();
    let summary = compaction(&log(&s, &conv).await);
    let check = &summary["summary_check"];
    assert_eq!(check["outcome"], "kept", "{check}");
    assert_eq!(check["repeated_items"], 39, "{check}");
    let text = summary["text"].as_str().unwrap();
    assert_eq!(text.matches(line).count(), 1, "{text}");
}

/// A record the output limit cut off mid-item keeps its whole items: what
/// the 1.5B model's first record in the forty-read case was (a list said
/// until the limit), dropped before as not a record.
#[tokio::test]
async fn a_record_cut_off_by_the_limit_keeps_its_whole_items() {
    let s = setup().await;
    let line = "The result for f0.rs was a missing file.";
    let mut script: Vec<ScriptedMessage> = (0..6)
        .map(|i| {
            calls(vec![call(
                &format!("r{i}"),
                "read_file",
                json!({"path": format!("f{i}.rs")}),
            )])
        })
        .collect();
    script.push(says("read"));
    let done = json!(std::iter::repeat_n(line, 40).collect::<Vec<_>>());
    let whole = format!("{{\"goal\": \"read the files\", \"done\": {done}}}");
    let mut cut = says(&whole[..whole.len() - 15]);
    cut.stop = Some(rein_wire::StopReason::MaxTokens);
    script.push(cut);
    let provider = Arc::new(FakeProvider::from_messages(&script));
    let mut conv = open(&s, provider, None).await;
    assert!(matches!(
        conv.turn("read the files").await.unwrap(),
        TurnOutcome::Finished { .. }
    ));
    conv.compact_now().await.unwrap();
    let summary = compaction(&log(&s, &conv).await);
    let check = &summary["summary_check"];
    assert_eq!(check["outcome"], "kept", "{check}");
    assert_eq!(check["cut_off"], true, "{check}");
    assert_eq!(check["record"]["done"], json!([line]), "{check}");
    assert_eq!(check["repeated_items"], 38, "{check}");
}

#[tokio::test]
async fn the_summary_is_asked_at_the_agents_temperature_within_an_eighth_of_the_window() {
    let s = setup().await;
    let (mut conv, provider) = worked(&s, &[honest()]).await;
    conv.agent.profile.sampling.temperature = Some(0.0);
    conv.agent.context.window = Some(6_000);
    conv.compact_now().await.unwrap();
    let requests = provider.requests();
    let summary = requests.last().unwrap();
    assert_eq!(summary.sampling.temperature, Some(0.0));
    assert_eq!(summary.max_output_tokens, 750);
    // The turns before were asked at the temperature they had then: none.
    assert_eq!(requests[0].sampling.temperature, None);
}
