//! Dead ends a small model walks into, through `rein chat` against a
//! loopback model: a change it already made, made again, ends the edit loop
//! with the file's state and a request for its answer in words — not the
//! five repeats loop detection needs.

use rein_testing::{FakeServer, Reply, ScriptedMessage};
use serde_json::json;

use crate::common::definition::{call, chat, typed};
use crate::common::{self, stderr};

const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";

/// The edit is made once (asked, approved); made again it is refused
/// before anyone is asked, shows the lines that hold it, and the next
/// request asks for words (`tool_choice: none`): the turn ends with the
/// model's answer, the file changed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_made_again_ends_the_edit_loop() {
    let edit = json!({"path": "calc.py", "edits": [{"old_text": "return a - b", "new_text": "return b - a"}]});
    let server = FakeServer::start(vec![
        call("c1", "read_file", json!({"path": "calc.py"})),
        call("c2", "edit_file", edit.clone()),
        call("c3", "edit_file", edit.clone()),
        Reply::sse(ScriptedMessage::text(&["sub now returns b - a."]).openai_chat_sse()),
        // Were the loop not ended, the model would go on editing.
        call("c4", "edit_file", edit.clone()),
        call("c5", "edit_file", edit),
    ])
    .await
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("calc.py"), CALC).unwrap();
    let out = typed(
        home.path(),
        &server,
        root.path(),
        b"make sub return b - a\ny\n/exit\n",
    )
    .await;
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("calc.py")).unwrap(),
        CALC.replace("a - b", "b - a")
    );
    // One question: the repeat is refused before anyone is asked.
    assert_eq!(said.matches("approve?").count(), 1, "{said}");
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "the loop went on: {said}");
    let fourth = requests[3].json();
    assert_eq!(fourth["tool_choice"], "none", "{fourth}");
    let shown = fourth.to_string();
    assert!(shown.contains("edit_already_made"), "{shown}");
    assert!(shown.contains("It holds now, lines"), "{shown}");
    assert!(
        common::stdout(&out).contains("sub now returns b - a."),
        "{said}"
    );
}

/// An edit of a file never read is refused before anyone is asked — and
/// answered with the file as it is now, counted as the read: the model's
/// next call, the same edit, is asked and runs. Where the person's hook
/// denies reads, no read is made for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_refused_as_not_read_carries_the_file() {
    for reads_asked in [false, true] {
        let edit = json!({"path": "calc.py", "edits": [{"old_text": "return a - b", "new_text": "return b - a"}]});
        let server = FakeServer::start(vec![
            call("c1", "edit_file", edit.clone()),
            call("c2", "edit_file", edit),
            Reply::sse(ScriptedMessage::text(&["Done."]).openai_chat_sse()),
        ])
        .await
        .unwrap();
        let home = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("calc.py"), CALC).unwrap();
        if reads_asked {
            // A hook the person set denies every read.
            let hook = home.path().join("no-reads.sh");
            std::fs::write(
                &hook,
                "#!/bin/sh\nif grep -q '\"read_file\"'; then echo '{\"effect\":\"deny\",\"reason\":\"no reads\"}'; else echo '{\"effect\":\"continue\"}'; fi\n",
            )
            .unwrap();
            std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
            std::fs::write(
                home.path().join("config.toml"),
                format!(
                    "[[agent.hooks]]\nname = \"no-reads\"\ncommand = [\"{}\"]\npoints = [\"before_call\"]\n",
                    hook.display()
                ),
            )
            .unwrap();
        }
        let out = typed(
            home.path(),
            &server,
            root.path(),
            b"make sub return b - a\ny\n/exit\n",
        )
        .await;
        let said = stderr(&out);
        assert!(out.status.success(), "{said}");
        let second = server.requests()[1].json().to_string();
        assert!(second.contains("not_read"), "{second}");
        let now = std::fs::read_to_string(root.path().join("calc.py")).unwrap();
        if reads_asked {
            assert!(!second.contains("It is read now"), "{second}");
            assert_eq!(now, CALC, "{said}");
        } else {
            // The file's text is in the refusal the model reads.
            assert!(second.contains("def sub(a, b):"), "{second}");
            assert!(second.contains("It is read now"), "{second}");
            assert_eq!(now, CALC.replace("a - b", "b - a"), "{said}");
        }
    }
}

/// A call the model printed as its whole answer (a small model's chat
/// template sometimes does) is made, and said: the read runs, its result
/// goes back, and the turn ends on the model's real answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_printed_as_the_answer_is_made() {
    let printed = "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"calc.py\"}}\n```";
    let server = FakeServer::start(vec![
        Reply::sse(ScriptedMessage::text(&[printed]).openai_chat_sse()),
        Reply::sse(ScriptedMessage::text(&["sub returns a - b."]).openai_chat_sse()),
    ])
    .await
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("calc.py"), CALC).unwrap();
    let out = chat(
        home.path(),
        &server,
        root.path(),
        &[],
        "what does sub return?",
    )
    .await;
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("written as text"),
        "the repair is said: {said}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{said}");
    let second = requests[1].json().to_string();
    assert!(
        second.contains("return a - b"),
        "the read's result: {second}"
    );
    assert!(
        common::stdout(&out).contains("sub returns a - b."),
        "{said}"
    );
}

/// The first request of a turn carries the project at a glance — its files
/// listed, each quoted — unless the definition turns it off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_is_shown_the_projects_files_unless_turned_off() {
    for off in [false, true] {
        let server = FakeServer::start(vec![Reply::sse(
            ScriptedMessage::text(&["Seen."]).openai_chat_sse(),
        )])
        .await
        .unwrap();
        let home = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("calc.py"), CALC).unwrap();
        std::fs::create_dir(root.path().join("tests")).unwrap();
        std::fs::write(root.path().join("tests/test_calc.py"), "").unwrap();
        if off {
            std::fs::write(
                home.path().join("config.toml"),
                "[agent]\nproject_map = false\n",
            )
            .unwrap();
        }
        let out = typed(home.path(), &server, root.path(), b"what is here?\n/exit\n").await;
        assert!(out.status.success(), "{}", stderr(&out));
        let first = server.requests()[0].json().to_string();
        assert_eq!(first.contains(r#"\"tests/test_calc.py\""#), !off, "{first}");
        assert_eq!(first.contains(r#"\"calc.py\""#), !off, "{first}");
        if !off {
            assert!(first.contains("not instructions"), "{first}");
        }
    }
}

/// An edit of guessed text in a file never read — its `old_text` is not
/// there — is answered with the file as it is (counted as read), not a bare
/// `edit_no_match`: the model edited what it never saw. Its next edit,
/// made from the file, runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guessed_edit_of_an_unread_file_is_answered_with_the_file() {
    let guessed =
        json!({"path": "calc.py", "edits": [{"old_text": "return a-b", "new_text": "return b-a"}]});
    let right = json!({"path": "calc.py", "edits": [{"old_text": "return a - b", "new_text": "return b - a"}]});
    let server = FakeServer::start(vec![
        call("c1", "edit_file", guessed),
        call("c2", "edit_file", right),
        Reply::sse(ScriptedMessage::text(&["Done."]).openai_chat_sse()),
    ])
    .await
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("calc.py"), CALC).unwrap();
    let out = typed(
        home.path(),
        &server,
        root.path(),
        b"make sub return b - a\ny\n/exit\n",
    )
    .await;
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    let second = server.requests()[1].json().to_string();
    assert!(second.contains("not_read"), "{second}");
    assert!(second.contains("It is read now"), "{second}");
    assert!(!second.contains("edit_no_match"), "{second}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("calc.py")).unwrap(),
        CALC.replace("a - b", "b - a"),
        "{said}"
    );
}
