//! The Codex `exec --json` reducer on synthetic lines for every rule it keeps.

#![allow(clippy::unwrap_used, reason = "tests")]

use rein_host::{CodexStream, Outcome, Reducer, Step};
use rein_wire::loops::Repeat;
use serde_json::{Value, json};

const CWD: &str = "/work/project";

fn run(lines: &[Value]) -> (CodexStream, Vec<Step>) {
    let mut r = CodexStream::new(CWD);
    let mut steps = Vec::new();
    for line in lines {
        r.feed(line.to_string().as_bytes());
        let got = r.drain();
        assert!(
            got.iter().any(|s| matches!(s, Step::Progress(_))) || r.outcome().failure.is_some(),
            "no progress for {line}"
        );
        steps.extend(got);
    }
    r.stream_ended();
    steps.extend(r.drain());
    (r, steps)
}

fn item(phase: &str, item: Value) -> Value {
    json!({"type": phase, "item": item})
}

fn command(id: &str, cmd: &str, out: &str, code: Option<i64>, status: &str) -> Value {
    json!({"id": id, "type": "command_execution", "command": cmd,
           "aggregated_output": out, "exit_code": code, "status": status})
}

fn start() -> Vec<Value> {
    vec![
        json!({"type": "thread.started", "thread_id": "th_1"}),
        json!({"type": "turn.started"}),
    ]
}

fn completed() -> Value {
    json!({"type": "turn.completed", "usage": {"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 7}})
}

#[test]
fn a_turn_with_a_command_and_an_answer_succeeds_with_its_usage() {
    let secret = "ghp_SECRETTOKEN";
    let mut lines = start();
    lines.extend([
        item("item.completed", json!({"id": "i0", "type": "reasoning", "text": secret})),
        item("item.started", command("i1", &format!("bash -lc 'GH={secret} ls'"), "", None, "in_progress")),
        item("item.completed", command("i1", &format!("bash -lc 'GH={secret} ls'"), secret, Some(0), "completed")),
        item("item.completed", json!({"id": "i2", "type": "file_change", "status": "completed",
            "changes": [{"path": "/work/project/src/main.rs", "kind": "update"}, {"path": "/work/project/b", "kind": "add"}]})),
        item("item.completed", json!({"id": "i3", "type": "agent_message", "text": "All done."})),
        completed(),
    ]);
    let (r, steps) = run(&lines);
    let outcome = r.outcome();
    assert_eq!(outcome.text.as_deref(), Some("All done."));
    assert_eq!(outcome.cost_micro_usd, None, "codex reports no money");
    let turn = steps.iter().find_map(|s| match s {
        Step::TurnClosed(t) => Some(t.clone()),
        _ => None,
    });
    let usage = turn.unwrap().usage.unwrap();
    assert_eq!((usage.input, usage.cache_read, usage.output), (60, 40, 7));
    let all = format!("{steps:?} {outcome:?} {}", r.summary());
    assert!(!all.contains(secret), "{all}");
    assert!(all.contains("src/main.rs (+1 more)"), "{all}");
    assert_eq!(
        r.summary()["tool_calls"],
        2,
        "one call per item, however many records"
    );
}

#[test]
fn failures_and_protocol_violations() {
    let mut failed = start();
    failed.push(json!({"type": "turn.failed", "error": {"message": "stream disconnected\x1b[2J"}}));
    let (r, _) = run(&failed);
    assert_eq!(
        r.outcome().failure.as_deref(),
        Some("codex: the turn failed: stream disconnected^[[2J")
    );

    let mut cut = start();
    cut.push(json!({"type": "error", "message": "Reconnecting... 2/5 (stream error)"}));
    let (r, steps) = run(&cut);
    assert!(r.outcome().exited_early);
    assert_eq!(
        r.outcome().failure.as_deref(),
        Some(
            "codex: exited inside a turn that did not complete (last error: Reconnecting... 2/5 (stream error))"
        )
    );
    assert!(format!("{steps:?}").contains("attempt 2 of 5"));

    let (r, _) = run(&[json!({"type": "thread.started"})]);
    assert_eq!(
        r.outcome().failure.as_deref(),
        Some("codex: exited without a completed turn")
    );

    for bad in [
        json!({"type": "turn.completed"}),
        json!([1]),
        json!({"no": "type"}),
    ] {
        let (r, _) = run(&[bad]);
        assert!(
            r.outcome()
                .failure
                .unwrap()
                .starts_with("codex: --json protocol violation")
        );
    }
    let mut r = CodexStream::new(CWD);
    r.feed(b"{\"type\": \"turn.started\"}");
    r.oversize(100);
    r.feed(completed().to_string().as_bytes());
    r.stream_ended();
    assert_eq!(r.outcome().text.as_deref(), Some(""));
    assert_eq!(r.summary()["oversize_records"], 1);
}

#[test]
fn declined_calls_are_refusals_and_repeats_are_loops() {
    let mut lines = start();
    lines.push(item(
        "item.completed",
        command("d1", "rm -rf /", "", None, "declined"),
    ));
    for i in 0..5 {
        lines.push(item(
            "item.completed",
            command(&format!("c{i}"), "cat a", "same", Some(0), "completed"),
        ));
    }
    lines.push(json!({"type": "mystery"}));
    lines.push(completed());
    let (r, steps) = run(&lines);
    let outcome = r.outcome();
    assert_eq!(outcome.refused_count, 1);
    assert_eq!(outcome.refused[0].subject, "command");
    assert_eq!(r.summary()["unknown_events"], 1);
    assert_eq!(r.summary()["tool_errors"], 1);
    let verdicts: Vec<Repeat> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Loop(v) => Some(*v),
            _ => None,
        })
        .collect();
    assert_eq!(verdicts, [Repeat::Nudge, Repeat::Stop]);
}

mod property {
    use super::*;
    use proptest::prelude::*;

    fn record() -> impl Strategy<Value = Vec<u8>> {
        let kinds = prop_oneof![
            Just("turn.started"),
            Just("turn.completed"),
            Just("turn.failed"),
            Just("item.started"),
            Just("item.completed"),
            Just("error"),
            Just("thread.started"),
            Just("zzz")
        ];
        let items = prop_oneof![
            Just("command_execution"),
            Just("file_change"),
            Just("mcp_tool_call"),
            Just("agent_message"),
            Just("web_search"),
            Just("q")
        ];
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..64),
            (kinds, items, "[a-z]{0,3}", any::<bool>()).prop_map(|(k, t, id, b)| {
                json!({"type": k, "item": {"id": id, "type": t, "changes": if b {json!([{"path": 3}])} else {json!("x")},
                       "exit_code": if b {json!(-1)} else {json!(null)}}, "usage": {"input_tokens": 5, "cached_input_tokens": 9}})
                    .to_string()
                    .into_bytes()
            }),
        ]
    }

    proptest! {
        #[test]
        fn arbitrary_lines_end_in_exactly_one_outcome(lines in proptest::collection::vec(record(), 0..24)) {
            let mut r = CodexStream::new(CWD);
            for line in &lines {
                r.feed(line);
                let _ = r.drain();
            }
            r.stream_ended();
            let Outcome { text, failure, .. } = r.outcome();
            prop_assert!(text.is_some() != failure.is_some());
        }
    }
}
