//! The Claude Code stream-json reducer on real recordings and on synthetic
//! lines for every rule it keeps.

#![allow(clippy::unwrap_used, reason = "tests")]

use rein_host::{ClaudeStream, Outcome, Reducer, RefusalKind, Step};
use rein_wire::loops::Repeat;
use serde_json::{Value, json};

const CWD: &str = "/work/project";

/// Feed `lines`, checking each yields at least one progress event; then end.
fn run(lines: &[Value]) -> (ClaudeStream, Vec<Step>) {
    let mut r = ClaudeStream::new(CWD);
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

fn init(model: &str) -> Value {
    json!({"type": "system", "subtype": "init", "model": model, "cwd": CWD})
}

fn text(t: &str) -> Value {
    json!({"type": "assistant", "parent_tool_use_id": null,
           "message": {"content": [{"type": "text", "text": t}]}})
}

fn result(text: &str, cost: f64) -> Value {
    json!({"type": "result", "subtype": "success", "is_error": false, "result": text,
           "num_turns": 1, "duration_ms": 100, "total_cost_usd": cost,
           "usage": {"input_tokens": 10, "output_tokens": 5,
                     "cache_read_input_tokens": 3, "cache_creation_input_tokens": 2}})
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": id, "name": name, "input": input}]}})
}

fn tool_result(id: &str, content: &str, is_error: bool) -> Value {
    json!({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error}]}})
}

fn turns(steps: &[Step]) -> Vec<&rein_host::TurnResult> {
    steps
        .iter()
        .filter_map(|s| match s {
            Step::TurnClosed(t) => Some(t),
            _ => None,
        })
        .collect()
}

fn shown(steps: &[Step], r: &ClaudeStream) -> String {
    format!("{steps:?} {:?} {}", r.outcome(), r.summary())
}

fn fixture(name: &str) -> Option<Vec<Value>> {
    let dir = rein_testing::fixtures::wire_dir()?;
    let text = std::fs::read_to_string(dir.join("claude-code-stream-json").join(name)).unwrap();
    Some(
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    )
}

#[test]
fn a_recorded_one_shot_query_succeeds_with_its_cost() {
    let Some(lines) = fixture("claude-agent-sdk-gleam__basic-query-cli-2.1.7.jsonl") else {
        return;
    };
    let (r, steps) = run(&lines);
    let outcome = r.outcome();
    assert_eq!(outcome.text.as_deref(), Some("4"));
    assert_eq!(outcome.failure, None);
    assert_eq!(outcome.cost_micro_usd, Some(135_488));
    let turns = turns(&steps);
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].model, "claude-opus-4-5-20251101");
    assert_eq!(turns[0].usage.as_ref().unwrap().cache_write, 21_570);
    assert_eq!(r.summary()["num_turns"], 1);
}

#[test]
fn a_recorded_tool_session_shows_the_description_never_the_command() {
    let Some(lines) = fixture("claude-agent-sdk-gleam__tool-use-session-records.jsonl") else {
        return;
    };
    let (r, steps) = run(&lines);
    assert_eq!(
        r.outcome().text.as_deref(),
        Some("Here are the files in the current directory.")
    );
    assert_eq!(r.outcome().cost_micro_usd, Some(247_224));
    let all = shown(&steps, &r);
    assert!(all.contains("List files in current directory"), "{all}");
    assert!(!all.contains("ls -la"), "a command line leaked: {all}");
    assert!(!all.contains("total 1976"), "a tool result leaked: {all}");
    assert!(steps.contains(&Step::ToolDone {
        id: "toolu_01BeipFBP3sUY3EAwVg3qQnE".into(),
        ok: true
    }));
}

#[test]
fn recorded_sub_agent_records_are_tool_calls_not_turns() {
    let Some(mut lines) = fixture("vercel-ai__subagent-step-records-reduced.jsonl") else {
        return;
    };
    // The recording stops before the main conversation's result.
    let (r, steps) = run(&lines);
    let outcome = r.outcome();
    assert!(outcome.exited_early);
    assert_eq!(
        outcome.failure.as_deref(),
        Some("claude: exited without a result event")
    );
    assert_eq!(r.summary()["tool_calls"], 3);
    let all = shown(&steps, &r);
    assert!(all.contains("Run pwd and echo"));
    assert!(
        !all.contains("subagent-done") && !all.contains("\"pwd\""),
        "{all}"
    );
    // With the main result it is one turn, however many sub-agent records.
    lines.push(result("done", 0.01));
    let (r, steps) = run(&lines);
    assert_eq!(r.outcome().text.as_deref(), Some("done"));
    assert_eq!(turns(&steps).len(), 1);
}

#[test]
fn held_results_close_turns_in_order() {
    let (r, steps) = run(&[
        init("m-one"),
        text("a"),
        init("m-two"),
        text("b"),
        result("first", 0.10),
        result("second", 0.25),
    ]);
    let t = turns(&steps);
    assert_eq!(t.len(), 2);
    assert_eq!((t[0].index, t[0].model.as_str()), (0, "m-one"));
    assert_eq!((t[1].index, t[1].model.as_str()), (1, "m-two"));
    assert_eq!(t[0].text.as_deref(), Some("first"));
    assert_eq!(t[0].cost_micro_usd, Some(100_000));
    assert_eq!(t[1].cost_micro_usd, Some(150_000));
    assert_eq!(r.outcome().text.as_deref(), Some("second"));
    assert_eq!(r.outcome().cost_micro_usd, Some(250_000));
    assert_eq!(r.summary()["num_turns"], 2);
    assert_eq!(r.summary()["duration_ms"], 200);
}

#[test]
fn a_closed_invocation_is_reopened_only_by_the_main_conversation() {
    let notice = json!({"type": "system", "subtype": "task_notification"});
    let sub = json!({"type": "assistant", "parent_tool_use_id": "toolu_x",
                     "message": {"content": [{"type": "text", "text": "sub"}]}});
    let (r, steps) = run(&[
        init("m"),
        result("one", 0.1),
        notice.clone(),
        sub,
        text("again"),
        result("two", 0.2),
        notice,
    ]);
    assert_eq!(turns(&steps).len(), 2);
    assert_eq!(r.summary()["records_after_result"], 3);
    assert_eq!(r.outcome().text.as_deref(), Some("two"));
}

fn failure(lines: &[&[u8]]) -> String {
    let mut r = ClaudeStream::new(CWD);
    for line in lines {
        r.feed(line);
    }
    r.stream_ended();
    r.outcome().failure.unwrap_or_default()
}

#[test]
fn lines_that_are_not_typed_json_objects_are_protocol_failures() {
    let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
    for bad in [
        &b"not json"[..],
        b"[1, 2]",
        br#"{"type": 3}"#,
        br#"{"kind": "x"}"#,
        b"\xff\xfe",
        deep.as_bytes(),
    ] {
        let f = failure(&[bad]);
        assert!(
            f.starts_with("claude: stream-json protocol violation"),
            "{f}"
        );
    }
}

#[test]
fn results_are_checked_is_error_first_then_subtype_then_text() {
    let cases = [
        (
            json!({"type": "result", "subtype": "success", "is_error": true, "result": "API Error: 529", "api_error_status": 529}),
            "claude: the run ended in an error (subtype success, api_error_status 529): API Error: 529",
        ),
        (
            json!({"type": "result", "subtype": "success", "result": "x"}),
            "claude: stream-json protocol violation: the result event has no boolean 'is_error'",
        ),
        (
            json!({"type": "result", "subtype": "error_max_turns", "is_error": false}),
            "claude: the run did not succeed (subtype error_max_turns)",
        ),
        (
            json!({"type": "result", "subtype": "success", "is_error": false, "result": 4}),
            "claude: stream-json protocol violation: the result event has no string 'result'",
        ),
    ];
    for (line, want) in cases {
        let (r, steps) = run(&[init("m"), line]);
        assert_eq!(r.outcome().failure.as_deref(), Some(want));
        assert_eq!(r.outcome().text, None);
        assert_eq!(turns(&steps)[0].failure.as_deref(), Some(want));
    }
    // A failed turn fails the invocation even when a later one succeeds.
    let bad = json!({"type": "result", "subtype": "error_during_execution", "is_error": false});
    let mut r = ClaudeStream::new(CWD);
    for line in [init("m"), text("x"), init("m"), bad, result("ok", 0.1)] {
        r.feed(line.to_string().as_bytes());
    }
    r.stream_ended();
    assert!(r.outcome().failure.unwrap().contains("did not succeed"));
}

#[test]
fn a_result_outside_a_turn_and_an_end_inside_one_fail() {
    let one = result("a", 0.1).to_string();
    let f = failure(&[one.as_bytes(), one.as_bytes()]);
    assert_eq!(
        f,
        "claude: stream-json protocol violation: a result event outside a turn"
    );
    let second = init("m").to_string();
    let f = failure(&[second.as_bytes(), one.as_bytes(), second.as_bytes()]);
    assert_eq!(f, "claude: exited inside a turn that has no result event");
}

#[test]
fn an_oversize_line_is_skipped_but_never_the_result() {
    let mut r = ClaudeStream::new(CWD);
    r.feed(init("m").to_string().as_bytes());
    r.oversize(1024);
    r.feed(result("fine", 0.1).to_string().as_bytes());
    r.stream_ended();
    assert_eq!(r.outcome().text.as_deref(), Some("fine"));
    assert_eq!(r.summary()["oversize_records"], 1);

    let mut r = ClaudeStream::new(CWD);
    r.feed(init("m").to_string().as_bytes());
    r.oversize(1024); // the result line itself
    r.stream_ended();
    let f = r.outcome().failure.unwrap();
    assert!(
        f.contains("1 line(s) past the per-line bound were skipped"),
        "{f}"
    );
}

#[test]
fn unknown_records_are_counted_and_everything_is_live() {
    let (r, steps) = run(&[
        init("m"),
        json!({"type": "system", "subtype": "thinking_tokens", "estimated_tokens": 812}),
        json!({"type": "system", "subtype": "api_retry", "attempt": 2, "max_retries": 10}),
        json!({"type": "rate_limit_event"}),
        json!({"type": "hologram", "x": 1}),
        json!({"type": "system", "subtype": "hook_response", "output": "SECRET-HOOK-OUTPUT"}),
        result("ok", 0.1),
    ]);
    assert_eq!(r.summary()["unknown_events"], 1);
    assert_eq!(r.summary()["api_retries"], 1);
    let progress: Vec<String> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Progress(p) => Some(p.to_string()),
            _ => None,
        })
        .collect();
    assert!(
        progress.contains(&"thinking (~812 tokens)".to_owned()),
        "{progress:?}"
    );
    assert!(
        progress.contains(&"retrying: attempt 2 of 10".to_owned()),
        "{progress:?}"
    );
    assert!(!shown(&steps, &r).contains("SECRET-HOOK-OUTPUT"));
}

#[test]
fn progress_is_redacted_relative_and_bounded() {
    let secret = "sk-ant-api03-SECRET";
    let (r, steps) = run(&[
        init("m"),
        tool_use(
            "t1",
            "Bash",
            json!({"command": format!("curl -H 'x-api-key: {secret}'"), "description": "Call the API\x1b]0;pwned\x07"}),
        ),
        tool_result("t1", secret, false),
        tool_use(
            "t2",
            "Write",
            json!({"file_path": "/work/project/src/a.rs", "content": secret}),
        ),
        tool_result("t2", "ok", false),
        tool_use(
            "t3",
            "Read",
            json!({"file_path": "/home/me/.aws/credentials"}),
        ),
        tool_result("t3", secret, true),
        tool_use("t4", "Grep", json!({"pattern": "x".repeat(1000)})),
        tool_use(
            "t5",
            "WebFetch",
            json!({"url": format!("https://x/?k={secret}")}),
        ),
        json!({"type": "assistant", "message": {"content": [{"type": "thinking", "thinking": secret}, {"type": "text", "text": secret}]}}),
        result("ok", 0.1),
    ]);
    let all = shown(&steps, &r);
    assert!(!all.contains(secret), "a secret leaked: {all}");
    assert!(!all.contains('\x1b') && !all.contains('\x07'));
    assert!(all.contains("Call the API^[]0;pwned^G"), "{all}");
    assert!(all.contains("\"src/a.rs\""), "{all}");
    assert!(all.contains("…/credentials"), "{all}");
    let grep = steps.iter().find_map(|s| match s {
        Step::ToolCalled { tool, detail, .. } if tool == "Grep" => Some(detail.clone()),
        _ => None,
    });
    assert_eq!(grep.unwrap().chars().count(), 120);
    assert_eq!(r.summary()["tool_errors"], 1);
}

#[test]
fn denials_are_kept_once_per_call() {
    let (r, _) = run(&[
        init("m"),
        tool_use(
            "t1",
            "Write",
            json!({"file_path": "/work/project/.env", "content": "x"}),
        ),
        json!({"type": "system", "subtype": "permission_denied", "tool_name": "Write", "tool_use_id": "t1"}),
        tool_result("t1", "denied", true),
        tool_use("q1", "AskUserQuestion", json!({"question": "which one?"})),
        tool_result("q1", "not available", true),
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "ok",
               "permission_denials": [{"tool_name": "Write", "tool_use_id": "t1", "tool_input": {"file_path": "/work/project/.env"}},
                                      {"tool_name": "Bash", "tool_use_id": "t9", "tool_input": {"command": "rm -rf /", "description": "Clean up"}}]}),
    ]);
    let outcome = r.outcome();
    assert_eq!(outcome.refused_count, 3);
    let subjects: Vec<(RefusalKind, &str)> = outcome
        .refused
        .iter()
        .map(|x| (x.kind, x.subject.as_str()))
        .collect();
    assert_eq!(
        subjects,
        [
            (RefusalKind::Permission, "Write: .env"),
            (RefusalKind::Question, ""),
            (RefusalKind::Permission, "Bash: Clean up"),
        ]
    );
    assert!(!format!("{outcome:?}").contains("rm -rf"));
}

#[test]
fn an_unknown_cost_makes_the_sum_unknown() {
    let mut no_cost = result("two", 0.0);
    no_cost.as_object_mut().unwrap().remove("total_cost_usd");
    no_cost.as_object_mut().unwrap().remove("num_turns");
    let (r, steps) = run(&[init("m"), result("one", 0.1), text("x"), no_cost]);
    assert_eq!(r.outcome().cost_micro_usd, None);
    assert_eq!(turns(&steps)[1].cost_micro_usd, None);
    assert!(r.summary().get("cost_micro_usd").is_none());
    assert!(r.summary().get("num_turns").is_none());
    assert_eq!(r.summary()["duration_ms"], 200);
    let mut odd = result("x", 0.0);
    odd["total_cost_usd"] = json!("0.5");
    let (r, _) = run(&[odd]);
    assert_eq!(r.outcome().cost_micro_usd, None);
}

#[test]
fn the_same_call_with_the_same_result_is_a_loop() {
    let mut lines = vec![init("m")];
    reads(&mut lines, "t", 5, |_| "same".into());
    lines.push(result("ok", 0.1));
    let (_, steps) = run(&lines);
    assert_eq!(verdicts(&steps), [Repeat::Nudge, Repeat::Stop]);
    // A different result each time is progress, not a loop.
    let mut lines = vec![init("m")];
    reads(&mut lines, "t", 5, |i| format!("v{i}"));
    let (_, steps) = run(&lines);
    assert!(!steps.iter().any(|s| matches!(s, Step::Loop(_))));
}

/// `n` reads of the same file, ids `{prefix}{i}`, the i-th answered
/// `answer(i)`.
fn reads(lines: &mut Vec<Value>, prefix: &str, n: usize, answer: impl Fn(usize) -> String) {
    for i in 0..n {
        let id = format!("{prefix}{i}");
        lines.push(tool_use(
            &id,
            "Read",
            json!({"file_path": "/work/project/a"}),
        ));
        lines.push(tool_result(&id, &answer(i), false));
    }
}

fn verdicts(steps: &[Step]) -> Vec<Repeat> {
    steps
        .iter()
        .filter_map(|s| match s {
            Step::Loop(v) => Some(*v),
            _ => None,
        })
        .collect()
}

#[test]
fn the_loop_detector_starts_afresh_each_turn_and_hears_retries() {
    // Three repeats in each of two turns: a nudge in each, never a stop
    // (the count is a turn's, as rein's own conversations keep it).
    let mut lines = vec![init("m")];
    for turn in 0..2 {
        reads(&mut lines, &format!("t{turn}-"), 3, |_| "same".into());
        lines.push(result("ok", 0.1));
        if turn == 0 {
            lines.push(init("m"));
        }
    }
    let (_, steps) = run(&lines);
    assert_eq!(verdicts(&steps), [Repeat::Nudge, Repeat::Nudge]);
    // The provider retried for the same reason five times: a loop, stopped.
    let mut lines = vec![init("m")];
    for attempt in 1..=5 {
        lines.push(
            json!({"type": "system", "subtype": "api_retry", "attempt": attempt,
            "max_retries": 10, "error_status": 529, "error": "overloaded_error"}),
        );
    }
    let (_, steps) = run(&lines);
    assert_eq!(verdicts(&steps), [Repeat::Nudge, Repeat::Stop]);
}

mod property {
    use super::*;
    use proptest::prelude::*;

    fn record() -> impl Strategy<Value = Vec<u8>> {
        let kinds = prop_oneof![
            Just("system"),
            Just("assistant"),
            Just("user"),
            Just("result"),
            Just("rate_limit_event"),
            Just("x")
        ];
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..64),
            (kinds, any::<bool>(), any::<bool>(), "[a-z]{0,4}", 0u8..4).prop_map(|(k, e, s, id, n)| {
                let content = match n {
                    0 => json!([{"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": "/a"}}]),
                    1 => json!([{"type": "tool_result", "tool_use_id": id, "is_error": e}]),
                    2 => json!("text"),
                    _ => json!([{"type": "text"}]),
                };
                json!({"type": k, "subtype": if s {"init"} else {"success"}, "is_error": e,
                       "result": "r", "total_cost_usd": 1e308, "num_turns": -1,
                       "parent_tool_use_id": if n == 3 {json!(id)} else {Value::Null},
                       "message": {"content": content}})
                    .to_string()
                    .into_bytes()
            }),
        ]
    }

    proptest! {
        #[test]
        fn arbitrary_lines_end_in_exactly_one_outcome(lines in proptest::collection::vec(record(), 0..24), cut in any::<bool>()) {
            let mut r = ClaudeStream::new(CWD);
            for line in &lines {
                r.feed(line);
                if cut { r.oversize(10); }
                let _ = r.drain();
            }
            r.stream_ended();
            let Outcome { text, failure, .. } = r.outcome();
            prop_assert!(text.is_some() != failure.is_some());
            let _ = r.summary();
        }
    }
}

/// The conversation's id is kept only when it can be handed back as an
/// argument (`--resume ID`): never an option, a path or anything long.
#[test]
fn the_conversation_id_is_kept_only_when_it_is_safe_to_resume_by() {
    for (id, kept) in [
        ("74d71a5f-2a99-4209-9000-474bad412048", true),
        ("--dangerously-skip-permissions", false),
        ("../../etc", false),
        ("a b", false),
        ("", false),
    ] {
        let mut first = init("m");
        first["session_id"] = json!(id);
        let (r, _) = run(&[first, text("hi"), result("hi", 0.0)]);
        assert_eq!(r.session_id(), kept.then_some(id), "{id:?}");
    }
    let mut long = init("m");
    long["session_id"] = json!("a".repeat(65));
    assert_eq!(run(&[long, result("x", 0.0)]).0.session_id(), None);
}

/// A conversation resumed with no request opens no turn: its input closing
/// before one is no failure, and its first record opens the first turn.
#[test]
fn a_resumed_conversation_opens_no_turn_until_the_program_does() {
    let mut idle = ClaudeStream::resumed(CWD);
    idle.stream_ended();
    assert_eq!(idle.outcome().failure, None);
    let mut r = ClaudeStream::resumed(CWD);
    for line in [init("m"), text("again"), result("again", 0.001)] {
        r.feed(line.to_string().as_bytes());
    }
    r.stream_ended();
    assert_eq!(turns(&r.drain()).len(), 1);
    assert_eq!(r.outcome().text.as_deref(), Some("again"));
}
