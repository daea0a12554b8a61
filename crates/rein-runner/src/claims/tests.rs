//! The claims a summary makes, held to logs made by hand.

use super::{Claim, Record, unbacked};
use rein_sessions::{Event, ResultSource, StoredEvent, ToolStatus};
use rein_wire::Revision;
use rein_wire::permission::PermissionClass;
use serde_json::json;

fn stored(seq: u64, event: Event) -> StoredEvent {
    StoredEvent {
        session_id: "s".into(),
        seq,
        at_ms: 0,
        agent_path: "main".into(),
        event,
    }
}

fn wrote(path: &str) -> Vec<StoredEvent> {
    vec![
        stored(
            1,
            Event::ToolCalled {
                call_id: "c1".into(),
                tool: "write_file".into(),
                arguments: json!({"path": path, "content": "x"}),
                permission: Some(PermissionClass::SourceFileWrite),
            },
        ),
        stored(
            2,
            Event::ToolResult {
                call_id: "c1".into(),
                status: ToolStatus::Ok,
                source: ResultSource::Live,
                content: json!({"ok": true}),
                artifact: None,
                operation_id: None,
                undo: true,
                duration_ms: 1,
                seen: Some(Revision::new(path, Some("r2".into()))),
            },
        ),
    ]
}

fn record(events: &[StoredEvent]) -> Record {
    Record::of(&events.iter().collect::<Vec<_>>())
}

#[test]
fn invented_changes_and_passes_are_named() {
    let empty = record(&[]);
    let claims = unbacked(
        "I changed `src/main.rs` and updated config.toml. All tests pass now.",
        &empty,
    );
    assert_eq!(
        claims,
        vec![
            Claim::Changed("src/main.rs".into()),
            Claim::Changed("config.toml".into()),
            Claim::Passed("All tests pass now".into()),
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
    let log = record(&events);
    assert!(unbacked("Edited main.rs; cargo test passed.", &log).is_empty());
    let (changed, checks) = log.state();
    assert_eq!(changed[0]["resource"], "src/main.rs");
    assert_eq!(changed[0]["token"], "r2");
    assert_eq!(checks[0]["passed"], true);
    assert_eq!(checks[0]["command"], "cargo test");
    // Another file is still an invention.
    assert_eq!(
        unbacked("Also fixed src/lib.rs.", &log),
        vec![Claim::Changed("src/lib.rs".into())]
    );
}

#[test]
fn denials_reads_numbers_and_versions_claim_nothing() {
    let empty = record(&[]);
    for text in [
        "The tests did not pass.",
        "Writing src/lib.rs failed with a conflict.",
        "I read README.md and notes/plan.txt.",
        "Pressure was 0.6 of the window, version 1.2.3 updated nothing",
        "The build is still failing.",
        "See https://example.com/a.html for the change.",
    ] {
        assert_eq!(unbacked(text, &empty), vec![], "{text}");
    }
}

#[test]
fn a_file_a_command_named_is_backed() {
    let events = vec![
        stored(
            1,
            Event::ToolCalled {
                call_id: "c1".into(),
                tool: "run_command".into(),
                arguments: json!({"command": ["sed", "-i", "s/a/b/", "notes.md"]}),
                permission: Some(PermissionClass::Destructive),
            },
        ),
        stored(
            2,
            Event::ToolResult {
                call_id: "c1".into(),
                status: ToolStatus::Ok,
                source: ResultSource::Live,
                content: json!({"exit_code": 1}),
                artifact: None,
                operation_id: None,
                undo: false,
                duration_ms: 1,
                seen: None,
            },
        ),
    ];
    let log = record(&events);
    assert!(unbacked("Updated notes.md with sed.", &log).is_empty());
    // It exited 1: no pass is backed.
    assert_eq!(unbacked("The check passed.", &log).len(), 1);
}

/// A read of `path` showing `text`, as calls `n`.
fn read(n: u64, path: &str, text: &str) -> Vec<StoredEvent> {
    let call = format!("r{n}");
    vec![
        stored(
            2 * n,
            Event::ToolCalled {
                call_id: call.clone(),
                tool: "read_file".into(),
                arguments: json!({"path": path}),
                permission: Some(PermissionClass::Read),
            },
        ),
        stored(
            2 * n + 1,
            Event::ToolResult {
                call_id: call,
                status: ToolStatus::Ok,
                source: ResultSource::Live,
                content: json!({"content": text}),
                artifact: None,
                operation_id: None,
                undo: false,
                duration_ms: 1,
                seen: None,
            },
        ),
    ]
}

fn three_reads() -> Record {
    let events: Vec<StoredEvent> = [
        read(1, "f0.txt", "file 0: lorem ipsum dolor. Next: read f1.txt."),
        read(2, "f3.txt", "file 3: the colour of the sea here is BLUE."),
        read(
            3,
            "f39.txt",
            "file 39: lorem ipsum dolor. This is the last file.",
        ),
    ]
    .concat();
    record(&events)
}

#[test]
fn a_fact_moved_to_another_file_is_named() {
    let log = three_reads();
    // Try 17's summary: f3.txt's sentence given to f0.txt.
    assert_eq!(
        unbacked("f0.txt: file 0: the colour of the sea…", &log),
        vec![Claim::Misread("f0.txt".into(), "colour".into())]
    );
    assert_eq!(
        unbacked("The file \"f39.txt\" mentions \"BLUE\".", &log),
        vec![Claim::Misread("f39.txt".into(), "blue".into())]
    );
}

#[test]
fn what_a_file_read_says_of_itself_is_backed() {
    let log = three_reads();
    for text in [
        "f3.txt: file 3: the colour of the sea here is BLUE.",
        "f3.txt mentions BLUE",
        "f39.txt says \"this is the last file\"",
        // Not said to be in the file: what the model did with it.
        "Read f39.txt after the colour file",
        // Two files named: said of neither alone.
        "f3.txt mentions blue, unlike f0.txt",
        // Denied: claims nothing.
        "f39.txt does not mention BLUE",
        // A word no file read shows is not a moved fact.
        "f0.txt: placeholder text",
    ] {
        assert_eq!(unbacked(text, &log), vec![], "{text}");
    }
}

#[test]
fn a_word_quoted_as_a_files_own_that_it_never_showed_is_named() {
    // Try 22's first summary, with only f0.txt read before it.
    let only_f0 = record(&read(
        1,
        "f0.txt",
        "file 0: lorem ipsum dolor. Next: read f1.txt.",
    ));
    let said = "The results indicated that file `f0.txt` contained the text \"BLUE\", \
                which was not mentioned in any of the files read.";
    assert_eq!(
        unbacked(said, &only_f0),
        vec![Claim::Misread("f0.txt".into(), "blue".into())]
    );
    assert_eq!(
        unbacked("f0.txt: \"the sea is green\"", &only_f0),
        vec![Claim::Misread("f0.txt".into(), "green".into())]
    );
    for honest in [
        "f0.txt says \"lorem ipsum\"",
        "f0.txt does not contain \"BLUE\"",
        "f0.txt was read, but it does not mention \"BLUE\"",
        // Quoted, but not as the file's words.
        "As asked (\"find BLUE\"), I read f0.txt",
        // Unquoted and shown by no other file: a description, not a quote.
        "f0.txt contains placeholder text",
    ] {
        assert_eq!(unbacked(honest, &only_f0), vec![], "{honest}");
    }
}

#[test]
fn a_file_said_to_hold_something_it_was_never_read_is_named() {
    let log = three_reads();
    // Try 24's summaries, written when f0-f34 had been read, f39 not.
    let early = record(&read(
        1,
        "f3.txt",
        "file 3: the colour of the sea here is BLUE.",
    ));
    for said in [
        "They then found that file f39 mentions \"BLUE\" in its content.",
        "The conversation concluded that file f39 contains \"BLUE\".",
    ] {
        assert_eq!(
            unbacked(said, &early),
            vec![Claim::Unread("f39".into())],
            "{said}"
        );
    }
    assert_eq!(
        unbacked("f40.txt says the sea is blue", &log),
        vec![Claim::Unread("f40.txt".into())]
    );
    for honest in [
        // Read: held to its reads, not called unread.
        "f3.txt mentions BLUE",
        "file f3 mentions BLUE",
        // No saying verb: a plan, not a claim about a file's words.
        "Next I will read f39.txt",
        // Denied.
        "f40.txt does not mention BLUE",
        // Not shaped like the files read.
        "Version 2 says nothing new",
    ] {
        assert_eq!(unbacked(honest, &log), vec![], "{honest}");
    }
}

/// That f3.txt, whose read showed BLUE, does not say it.
fn f3_denied() -> Claim {
    Claim::Denied {
        file: Some("f3.txt".into()),
        word: "blue".into(),
        shown_by: "f3.txt".into(),
    }
}

#[test]
fn a_word_denied_that_a_read_showed_is_named() {
    let log = three_reads();
    let nowhere = |word: &str| Claim::Denied {
        file: None,
        word: word.into(),
        shown_by: "f3.txt".into(),
    };
    // Try 25's kept summary, with f3.txt's read showing BLUE.
    for said in [
        "Upon reviewing, there were no files that contained the word \"BLUE\".",
        "None of the files mention BLUE.",
        "The word blue was not found in any file",
        "No file other than f0.txt mentions \"BLUE\"",
        "Which file mentions BLUE has not been determined",
        "I have not found which file contains \"blue\" yet",
    ] {
        assert_eq!(unbacked(said, &log), vec![nowhere("blue")], "{said}");
    }
    assert_eq!(
        unbacked("f3.txt does not mention \"BLUE\".", &log),
        vec![f3_denied()]
    );
    assert_eq!(
        unbacked("File f3 doesn't contain the word BLUE", &log),
        vec![f3_denied()]
    );
    for honest in [
        "f0.txt does not mention \"BLUE\"",
        "file f0 doesn't contain the word BLUE",
        "Neither f0.txt nor f39.txt mentions BLUE",
        "No file except f3.txt mentions \"BLUE\"",
        "No file mentions \"BLUE\", except f3.txt",
        "f0.txt does not mention BLUE, but f3.txt does",
        "No file mentions \"GREEN\"",
        // The file excepted is named in the sentence before.
        "f3.txt mentions BLUE. No other file mentions \"BLUE\".",
        "The person asked which file mentions BLUE, but it has not been said",
        // A file never read: what it lacks is not known either way.
        "f40.txt does not mention BLUE",
        "f7 does not contain BLUE",
        // A hedge or plan, not a denial.
        "I should check which files mention BLUE",
        // A quoted sentence, not a word meant.
        "No file read answers \"which file mentions BLUE in the set\"",
        // Capitals that are not a word meant, and the denial is the capitals.
        "NONE of the files say GREEN",
    ] {
        assert_eq!(unbacked(honest, &log), vec![], "{honest}");
    }
}

#[test]
fn the_correction_names_no_file_that_was_never_read() {
    let claims = [
        Claim::Unread("f40.txt".into()),
        Claim::Unread("f49.txt".into()),
        Claim::Misread("f0.txt".into(), "blue".into()),
    ];
    let told = super::correction(&claims);
    assert!(!told.contains("f40") && !told.contains("f49"), "{told}");
    assert_eq!(told.matches("never shown").count(), 1, "{told}");
    assert!(told.contains("f0.txt says \"blue\""), "{told}");
}

#[test]
fn a_word_said_to_be_in_files_listed_that_never_showed_it_is_named() {
    let log = three_reads();
    // Try 27's rewritten summary, kept by the checks before this one.
    let said = "The conversation shows that files f0.txt, f3.txt, and f39.txt all contain \
                the word \"BLUE\". The only file that does not contain \"BLUE\" is f3.txt, \
                which says \"the colour of the sea here is BLUE\".";
    assert_eq!(
        unbacked(said, &log),
        vec![Claim::Misread("f0.txt".into(), "blue".into()), f3_denied(),]
    );
    for honest in [
        "f3.txt contains \"BLUE\"",
        "Only f3.txt mentions BLUE",
        "f3.txt mentions BLUE, unlike f0.txt and f39.txt",
        "f0.txt and f39.txt were read to find which file mentions BLUE",
        "I read f0.txt and f39.txt; f3.txt says BLUE",
        "Only f3.txt, not the others, mentions BLUE",
        "f3.txt says BLUE and f0.txt says lorem ipsum",
    ] {
        assert_eq!(unbacked(honest, &log), vec![], "{honest}");
    }
}

#[test]
fn the_file_given_as_the_answer_is_held_too() {
    // Try 28's kept summary: nothing read in the stretch it covered.
    let said = "The files f0.txt to f39.txt were read with read_file, one call per file, \
                in order. The file that mentions BLUE is f12.txt.";
    let nothing_read = record(&[]);
    let not_read = (0..40).map(|n| Claim::NotRead(format!("f{n}.txt")));
    assert_eq!(
        unbacked(said, &nothing_read),
        not_read
            .chain([Claim::Unread("f12.txt".into())])
            .collect::<Vec<_>>()
    );
    assert_eq!(
        unbacked("BLUE is mentioned in f12.txt", &nothing_read),
        vec![Claim::Unread("f12.txt".into())]
    );
    // Read, and its reads never showed the word.
    let log = three_reads();
    assert_eq!(
        unbacked("The file that mentions BLUE is f0.txt.", &log),
        vec![Claim::Misread("f0.txt".into(), "blue".into())]
    );
    // A file the stretch wrote is known: what it holds is not unbacked.
    let wrote = record(&wrote("notes.md"));
    for honest in [
        "The file that mentions BLUE is f3.txt.",
        "f3.txt mentions BLUE and I will go on with f4.txt",
    ] {
        assert_eq!(unbacked(honest, &log), vec![], "{honest}");
    }
    assert_eq!(unbacked("notes.md says hello", &wrote), vec![]);
}

#[test]
fn files_said_read_that_were_not_are_named() {
    // f0.txt to f2.txt were read; f3.txt to f5.txt were not.
    let events: Vec<StoredEvent> = (0..3)
        .flat_map(|n| read(n + 1, &format!("f{n}.txt"), &format!("file {n}: lorem")))
        .collect();
    let record = record(&events);
    let not_read = |names: &[&str]| -> Vec<Claim> {
        names
            .iter()
            .map(|n| Claim::NotRead((*n).to_owned()))
            .collect()
    };
    // Try 32's third summary, and its kin.
    assert_eq!(
        unbacked(
            "The conversation shows that the files f0.txt to f5.txt were read in order.",
            &record
        ),
        not_read(&["f3.txt", "f4.txt", "f5.txt"])
    );
    assert_eq!(
        unbacked("I have read f1.txt, f2.txt and f4.txt.", &record),
        not_read(&["f4.txt"])
    );
    assert_eq!(
        unbacked("Files f0.txt-f3.txt have been read.", &record),
        not_read(&["f3.txt"])
    );
    // Names that differ in more than a number are no range: each end alone.
    assert_eq!(
        unbacked("f2.txt to g9.txt were read.", &record),
        not_read(&["g9.txt"])
    );
    // What was read, what is left, what was asked, and what is denied.
    for honest in [
        "The files f0.txt to f2.txt were read in order.",
        "f0.txt, f1.txt and f2.txt were read; f3.txt to f5.txt remain to be read.",
        "The person asked to read f0.txt to f5.txt, one call per file.",
        "f3.txt to f5.txt are still to be read.",
        "I have read f0.txt to f2.txt but f3.txt is next.",
        "f3.txt was not read yet.",
        "Next, f3.txt will be read.",
        // Backwards is not a range: its two ends were read.
        "f2.txt to f0.txt were read backwards.",
    ] {
        assert_eq!(unbacked(honest, &record), vec![], "{honest}");
    }
    // The summariser is not told the names (try 26).
    let told = super::correction(&not_read(&["f40.txt"]));
    assert!(!told.contains("f40"), "{told}");
}

#[test]
fn a_file_a_call_asked_for_is_not_said_read_wrongly() {
    // A sub-agent was handed the file: its reads are in its own session.
    let delegated = vec![stored(
        1,
        Event::ToolCalled {
            call_id: "d1".into(),
            tool: "delegate".into(),
            arguments: json!({"task": "Read notes/plan.md and list its steps."}),
            permission: None,
        },
    )];
    let log = record(&delegated);
    assert_eq!(
        unbacked("notes/plan.md was read by the helper.", &log),
        vec![]
    );
    assert_eq!(unbacked("plan.md was read by the helper.", &log), vec![]);
    assert_eq!(
        unbacked("notes/other.md was read by the helper.", &log),
        vec![Claim::NotRead("notes/other.md".into())]
    );
}
