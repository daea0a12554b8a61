//! A summary record's claims, held to logs made by hand: each field is
//! checked exactly, and nothing is read from its free words.

use rein_sessions::{Event, ResultSource, StoredEvent, ToolStatus};
use rein_wire::Revision;
use rein_wire::permission::PermissionClass;
use serde_json::{Value, json};

use super::{Claim, Record, Summary};

fn stored(seq: u64, event: Event) -> StoredEvent {
    StoredEvent {
        session_id: "s".into(),
        seq,
        at_ms: 0,
        agent_path: "main".into(),
        event,
    }
}

/// A call of `tool` with `arguments` and its successful result `content`.
fn ran(
    id: &str,
    tool: &str,
    permission: PermissionClass,
    arguments: Value,
    content: Value,
) -> Vec<StoredEvent> {
    let seen = arguments["path"]
        .as_str()
        .filter(|_| permission != PermissionClass::Read)
        .map(|p| Revision::new(p, Some("r2".into())));
    vec![
        stored(
            1,
            Event::ToolCalled {
                call_id: id.into(),
                tool: tool.into(),
                arguments,
                permission: Some(permission),
            },
        ),
        stored(
            2,
            Event::ToolResult {
                call_id: id.into(),
                status: ToolStatus::Ok,
                source: ResultSource::Live,
                content,
                artifact: None,
                operation_id: None,
                undo: false,
                duration_ms: 1,
                seen,
            },
        ),
    ]
}

fn wrote(path: &str) -> Vec<StoredEvent> {
    ran(
        "w",
        "write_file",
        PermissionClass::SourceFileWrite,
        json!({"path": path, "content": "x"}),
        json!({"ok": true}),
    )
}

fn read(id: &str, path: &str, text: &str) -> Vec<StoredEvent> {
    ran(
        id,
        "read_file",
        PermissionClass::Read,
        json!({"path": path}),
        json!({"content": text}),
    )
}

fn command(id: &str, argv: &[&str], exit: i64) -> Vec<StoredEvent> {
    ran(
        id,
        "run_command",
        PermissionClass::Destructive,
        json!({"command": argv}),
        json!({"exit_code": exit, "stdout": ""}),
    )
}

fn record(events: &[StoredEvent]) -> Record {
    Record::of(&events.iter().collect::<Vec<_>>())
}

fn summary(value: Value) -> Summary {
    Summary::parse(&value.to_string()).expect("a record").0
}

#[test]
fn invented_changes_and_checks_are_named() {
    let claims = summary(json!({
        "goal": "fix the test",
        "files_changed": ["src/main.rs"],
        "checks": [{"command": "cargo test", "passed": true}],
    }))
    .unbacked(&record(&[]));
    assert_eq!(
        claims,
        vec![
            Claim::Changed("src/main.rs".into()),
            Claim::Check {
                command: "cargo test".into(),
                passed: true
            },
        ]
    );
}

#[test]
fn what_the_log_shows_is_backed() {
    let mut events = wrote("src/main.rs");
    events.push(stored(
        3,
        Event::CheckRan {
            command: vec!["cargo".into(), "test".into()],
            expected: 0,
            exit: Some(0),
            passed: true,
            revisions: vec![],
            duration_ms: 5,
        },
    ));
    events.extend(command("c", &["python3", "-m", "pytest", "-q"], 1));
    let record = record(&events);
    let kept = summary(json!({
        "files_changed": ["main.rs", "./src/main.rs"],
        "checks": [
            {"command": "cargo test", "passed": true},
            // The command as the model remembers it, inside the one run.
            {"command": "python3 -m pytest", "passed": false},
        ],
        "done": ["Rewrote src/main.rs; pytest still fails."],
    }));
    assert_eq!(kept.unbacked(&record), vec![]);
    // The same runs, their outcomes turned: each is a claim.
    let turned = summary(json!({
        "checks": [
            {"command": "cargo test", "passed": false},
            {"command": "python3 -m pytest -q", "passed": true},
        ],
    }));
    assert_eq!(turned.unbacked(&record).len(), 2);
}

#[test]
fn a_fact_must_be_quoted_from_the_file_it_is_given_to() {
    let mut events = read(
        "r3",
        "f3.txt",
        "file 3: the colour of the sea here is BLUE.",
    );
    events.extend(read("r4", "f4.txt", "file 4: the sky is grey."));
    let record = record(&events);
    let honest = summary(json!({
        "facts": [{"file": "f3.txt", "quote": "The colour of the sea  here is blue"}],
    }));
    assert_eq!(honest.unbacked(&record), vec![]);
    let moved = summary(json!({
        "facts": [
            {"file": "f4.txt", "quote": "the sea here is BLUE"},
            {"file": "f39.txt", "quote": "BLUE"},
            {"file": "f3.txt", "quote": "   "},
        ],
    }));
    assert_eq!(
        moved.unbacked(&record),
        vec![
            Claim::Misquoted {
                file: "f4.txt".into(),
                quote: "the sea here is BLUE".into()
            },
            Claim::Unread("f39.txt".into()),
            Claim::Misquoted {
                file: "f3.txt".into(),
                quote: "   ".into()
            },
        ]
    );
}

#[test]
fn a_file_named_in_what_was_done_must_be_one_a_call_named() {
    let events = read("r0", "f0.txt", "file 0");
    let record = record(&events);
    // Try 32: every file said read when few had been.
    let claims = summary(json!({
        "goal": "Read f0.txt to f39.txt and say which mentions BLUE",
        "done": ["Read f0.txt to f39.txt in order, e.g. with read_file."],
        "next": "read f40.txt",
    }))
    .unbacked(&record);
    // The goal and what is next are intent: only `done` is held.
    assert_eq!(claims, vec![Claim::Unknown("f39.txt".into())]);
}

#[test]
fn a_record_is_found_in_a_fence_and_bounded() {
    let item = "x".repeat(1000);
    let answer = format!(
        "Here it is:\n```json\n{}\n```",
        json!({"goal": item, "done": vec!["read"; 40], "facts": [], "extra": 1})
    );
    let (summary, repeated) = Summary::parse(&answer).unwrap();
    assert_eq!(repeated, 39);
    assert_eq!(summary.done, vec!["read"]);
    assert_eq!(summary.goal.chars().count(), 401);
    assert!(Summary::parse("The files were read.").is_none());
    assert!(Summary::parse("{\"done\": \"not a list\"}").is_none());
    assert!(Summary::parse("[1, 2]").is_none());
}

#[test]
fn the_record_is_shown_a_line_a_field() {
    let shown = summary(json!({
        "goal": "Find BLUE",
        "done": ["Read f0.txt to f3.txt"],
        "files_changed": ["notes.txt"],
        "checks": [{"command": "pytest", "passed": false}],
        "facts": [{"file": "f3.txt", "quote": "the sea here is BLUE"}],
        "next": "",
    }))
    .text();
    assert_eq!(
        shown,
        "Goal: Find BLUE\nDone:\n- Read f0.txt to f3.txt\nFiles changed: notes.txt\nChecks: `pytest` failed\nFacts, quoted from the files read:\n- f3.txt: \"the sea here is BLUE\""
    );
}

#[test]
fn the_schema_is_the_strict_subset() {
    let schema = super::schema();
    let fields: Vec<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(fields.len(), required.len());
    assert!(fields.iter().all(|f| required.contains(f)));
    assert_eq!(schema["additionalProperties"], false);
    for nested in ["checks", "facts"] {
        assert_eq!(
            schema["properties"][nested]["items"]["additionalProperties"],
            false
        );
    }
}

#[test]
fn a_record_the_limit_cut_off_keeps_its_whole_items() {
    // One line until the output limit, a quote and a comma inside it.
    let line = "The result for file 0 was \"lorem, ipsum\".";
    let mut done = vec!["Read f0.txt"];
    done.extend(std::iter::repeat_n(line, 30));
    // In the schema's order, as a model writes it.
    let whole = format!("{{\"goal\": \"find BLUE\", \"done\": {}}}", json!(done));
    // Cut inside the last item's quote.
    let cut = &whole[..whole.len() - 12];
    assert!(Summary::parse(cut).is_none());
    let (summary, repeated) = Summary::parse_cut_off(cut).unwrap();
    assert_eq!(summary.goal, "find BLUE");
    assert_eq!(summary.done, vec!["Read f0.txt", line]);
    assert_eq!(repeated, 28, "29 whole lines, said once");
    // Cut inside the first field: no whole item to keep.
    assert!(Summary::parse_cut_off("{\"goal\": \"fi").is_none());
    assert!(Summary::parse_cut_off("no object at all").is_none());
}

#[test]
fn a_tool_call_given_as_a_check_is_held_to_how_it_ended() {
    // The 1.5B model's record in the forty-read case: each read a check.
    let mut events = read("r0", "f0.txt", "file 0");
    events.extend(command("c", &["python3", "app.py"], 0));
    let record = record(&events);
    let as_checks = summary(json!({"checks": [
        {"command": "read_file f0.txt", "passed": true},
        {"command": "read_file", "passed": true},
        {"command": "read_file f1.txt", "passed": true},
        {"command": "read_file f0.txt", "passed": false},
        {"command": "write_file f0.txt", "passed": true},
    ]}));
    assert_eq!(
        as_checks.unbacked(&record),
        vec![
            Claim::Check {
                command: "read_file f1.txt".into(),
                passed: true
            },
            Claim::Check {
                command: "read_file f0.txt".into(),
                passed: false
            },
            Claim::Check {
                command: "write_file f0.txt".into(),
                passed: true
            },
        ]
    );
}
