//! The runner end to end: tools, parallel reads, steering, budgets, loop
//! detection, offloading, deferred tools, structured answers, the
//! verification gate, skills, the stable prefix and compaction on request —
//! against a real SQLite file, scripted models, and the reference tool
//! backend. Approvals and crash recovery are in `approvals.rs`.

use std::sync::Arc;

use crate::common::{call, calls, kinds, open, profile, says, setup};
use rein_approvals::{Answer, LeaseScope, Surface};
use rein_runner::{Conversation, ToolLoading, TurnOutcome};
use rein_sessions::{Event, ResultSource};
use rein_testing::{FakeProvider, ScriptedMessage};
use rein_wire::{ContentBlock, Role};
use serde_json::json;

#[tokio::test]
async fn parallel_reads_then_an_answer() {
    let s = setup().await;
    let provider = Arc::new(FakeProvider::from_messages(&[
        calls(vec![
            call("c1", "read_file", json!({"path": "a.rs"})),
            call("c2", "read_file", json!({"path": "b.rs"})),
        ]),
        says("Both files define one function."),
    ]));
    let mut conv = open(&s, provider.clone(), None).await;
    let mut ui = conv.subscribe();
    let outcome = conv.turn("what is in a.rs and b.rs?").await.unwrap();
    assert_eq!(
        outcome,
        TurnOutcome::Finished {
            reply: "Both files define one function.".into()
        }
    );
    assert_eq!(s.backend.invocations("read_file"), 2);
    let id = conv.session_id().to_owned();
    let k = kinds(s.store.as_ref(), &id).await;
    let expected = [
        "session.created",
        "turn.started",
        "run.started",
        "model.requested",
        "model.completed",
        "tool.called",
        "tool.called",
        "tool.result",
        "tool.result",
        "model.requested",
        "model.completed",
        "turn.finished",
        "run.finished",
    ];
    assert_eq!(k, expected);
    // The second request threads both results right after the calls.
    let second = &provider.requests()[1];
    assert_eq!(second.messages.len(), 3);
    assert_eq!(second.messages[1].role, Role::Assistant);
    let results: Vec<&str> = second.messages[2]
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                is_error: false,
                ..
            } => Some(tool_use_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(results, ["c1", "c2"]);
    assert!(second.tools.iter().any(|t| t.name == "write_file"));
    let mut seen = Vec::new();
    while let Ok(e) = ui.try_recv() {
        seen.push(
            serde_json::to_value(&e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert!(
        seen.contains(&"tool_call".to_owned()) && seen.contains(&"turn_finished".to_owned()),
        "{seen:?}"
    );
    // A second turn follows the first in the tree and sees its history.
    conv.close().await.unwrap();
}

#[tokio::test]
async fn steering_lands_at_the_boundary_and_interrupt_ends_the_turn() {
    let s = setup().await;
    let provider = Arc::new(FakeProvider::from_messages(&[
        calls(vec![call("c1", "list_files", json!({}))]),
        says("never reached"),
    ]));
    let mut conv = open(&s, provider.clone(), None).await;
    let steering = conv.steering();
    steering.say("only look at .rs files");
    let handle = std::thread::spawn(move || steering.interrupt());
    handle.join().unwrap();
    let outcome = conv.turn("look around").await.unwrap();
    assert_eq!(outcome, TurnOutcome::Interrupted);
    let k = kinds(s.store.as_ref(), conv.session_id()).await;
    assert!(k.contains(&"steer.interrupted".to_owned()));
    assert!(
        provider.requests().is_empty(),
        "interrupted before any model call"
    );
    // Said without interrupting: the steer reaches the model.
    conv.steering().say("only look at .rs files");
    let _ = conv.turn("look around again").await.unwrap();
    let first = &provider.requests()[0];
    let text = serde_json::to_string(&first.messages).unwrap();
    assert!(text.contains("only look at .rs files"), "{text}");
}

#[tokio::test]
async fn budgets_and_loop_detection_end_the_turn_with_their_own_outcome() {
    let s = setup().await;
    let looping: Vec<ScriptedMessage> = (0..10)
        .map(|i| {
            calls(vec![call(
                &format!("c{i}"),
                "read_file",
                json!({"path": "a.rs"}),
            )])
        })
        .collect();
    let mut conv = open(&s, Arc::new(FakeProvider::from_messages(&looping)), None).await;
    conv.agent.budgets.max_steps = 3;
    assert_eq!(
        conv.turn("loop").await.unwrap(),
        TurnOutcome::Budget {
            which: "steps".into()
        }
    );
    conv.close().await.unwrap();

    let provider = Arc::new(FakeProvider::from_messages(&looping));
    let mut conv = open(&s, provider.clone(), None).await;
    assert_eq!(conv.turn("loop").await.unwrap(), TurnOutcome::LoopDetected);
    let text = serde_json::to_string(&provider.requests().last().unwrap().messages).unwrap();
    assert!(
        text.contains("same call with the same arguments"),
        "the nudge came first"
    );
    assert!(
        text.contains("The person asked:\\n> loop"),
        "the nudge repeats the task: {text}"
    );
    // Nothing was compacted: there are no lines found to recite.
    assert!(
        !text.contains("{found}") && !text.contains("Lines found"),
        "{text}"
    );
    // The call after the nudge asked for words; a model that calls anyway
    // is stopped at the fifth repeat, and the calls before and after were
    // free.
    let choices: Vec<_> = provider.requests().iter().map(|r| r.tool_choice).collect();
    assert_eq!(
        choices,
        [None, None, None, Some(rein_wire::ToolChoice::None), None]
    );
    // Repeated reads of an unchanged project came from the cache.
    assert_eq!(
        s.backend.invocations("read_file"),
        2,
        "one live read per conversation; the rest cached"
    );
}

#[tokio::test]
async fn a_call_refused_again_and_again_is_a_loop_too() {
    let s = setup().await;
    // Arguments that never validate: refused before the gate every time.
    let looping: Vec<ScriptedMessage> = (0..10)
        .map(|i| {
            calls(vec![call(
                &format!("c{i}"),
                "read_file",
                json!({"wrong": true}),
            )])
        })
        .collect();
    let provider = Arc::new(FakeProvider::from_messages(&looping));
    let mut conv = open(&s, provider.clone(), None).await;
    assert_eq!(conv.turn("loop").await.unwrap(), TurnOutcome::LoopDetected);
    // Stopped at the fifth, after a nudge at the third; nothing ran.
    assert_eq!(provider.requests().len(), 5);
    let text = serde_json::to_string(&provider.requests().last().unwrap().messages).unwrap();
    assert!(text.contains("same call with the same arguments"), "{text}");
    assert_eq!(s.backend.invocations("read_file"), 0);
}

/// The loop rule counts a turn's calls across its pauses: a model making
/// the same asked-for change again and again, each approved, is nudged at
/// the third and stopped at the fifth — not given a fresh count at every
/// approval (a local model repeated one failing command ten times between
/// approved writes that way).
#[tokio::test]
async fn a_call_repeated_between_approvals_is_still_a_loop() {
    use rein_tools::{Outcome, PermissionClass, Registry, tool_fn};
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Order {
        id: u64,
    }
    let sent = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counter = sent.clone();
    let send = tool_fn(
        "send_order",
        "Send an order.",
        PermissionClass::Write,
        move |o: Order| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move { Outcome::ok(json!({"refused_by_shop": o.id})) }
        },
    );
    let tools = Arc::new(Registry::new().with(send).unwrap());
    let looping: Vec<ScriptedMessage> = (0..10)
        .map(|i| calls(vec![call(&format!("c{i}"), "send_order", json!({"id": 7}))]))
        .collect();
    let provider = Arc::new(FakeProvider::from_messages(&looping));
    let s = setup().await;
    let agent = rein_runner::Agent::new(provider.clone(), tools, profile());
    let mut conv = agent.open(s.store.clone()).await.unwrap();
    let mut outcome = conv.turn("send order 7").await.unwrap();
    let person = Surface::terminal();
    let mut approved = 0;
    while let TurnOutcome::AwaitingApproval(asked) = outcome {
        approved += 1;
        assert!(approved <= 6, "never stopped: {approved} approvals");
        outcome = conv
            .decide_and_resume(
                &asked.approval_id,
                Answer::Approve(LeaseScope::Once),
                &person,
            )
            .await
            .unwrap();
    }
    assert_eq!(outcome, TurnOutcome::LoopDetected);
    assert_eq!(approved, 5, "each send was asked and approved");
    let runs = sent.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(runs, 5, "stopped at the fifth");
    // The nudge came after the third, and the next call was asked for words.
    let choices: Vec<_> = provider.requests().iter().map(|r| r.tool_choice).collect();
    assert_eq!(
        choices,
        [None, None, None, Some(rein_wire::ToolChoice::None), None],
        "{choices:?}"
    );
    conv.close().await.unwrap();
}

#[tokio::test]
async fn a_large_result_is_offloaded_to_an_artifact() {
    let s = setup().await;
    let provider = Arc::new(FakeProvider::from_messages(&[
        calls(vec![call("c1", "read_log", json!({"lines": 3000}))]),
        says("The build compiled 3000 modules."),
    ]));
    let mut conv = open(&s, provider.clone(), None).await;
    conv.turn("summarise the log").await.unwrap();
    let log = s.store.read(conv.session_id(), 1, 100).await.unwrap();
    let (content, artifact) = log
        .iter()
        .find_map(|e| match &e.event {
            Event::ToolResult {
                source: ResultSource::Offload,
                content,
                artifact,
                ..
            } => Some((content.clone(), artifact.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(content["offloaded"], true);
    let hash = artifact.unwrap();
    let full = s
        .store
        .read_artifact(&hash, rein_sessions::Slice::Whole)
        .await
        .unwrap();
    assert!(full.len() > 90_000);
    let sent = serde_json::to_string(&provider.requests()[1].messages).unwrap();
    assert!(sent.len() < 20_000, "the model got the stub, not the log");
}

#[tokio::test]
async fn revision_guards_are_carried_past_the_messages_own_writes() {
    let s = setup().await;
    let provider = Arc::new(FakeProvider::from_messages(&[
        calls(vec![
            call(
                "w1",
                "write_file",
                json!({"path": "a.rs", "content": "one", "expected_revision": 0}),
            ),
            call(
                "w2",
                "write_file",
                json!({"path": "b.rs", "content": "two", "expected_revision": 0}),
            ),
            // A stale revision the turn's own writes did not produce is not touched.
            call(
                "w3",
                "write_file",
                json!({"path": "c.rs", "content": "three", "expected_revision": 7}),
            ),
        ]),
        says("Wrote what I could."),
    ]));
    let mut conv = open(&s, provider, None).await;
    let TurnOutcome::AwaitingApproval(rein_runner::ApprovalRequest { approval_id, .. }) =
        conv.turn("write both").await.unwrap()
    else {
        panic!()
    };
    // "Always for this tool": the second and third writes need no new approval.
    conv.decide(
        &approval_id,
        Answer::Approve(LeaseScope::Tool),
        &Surface::terminal(),
    )
    .await
    .unwrap();
    assert!(matches!(
        conv.resume().await.unwrap(),
        TurnOutcome::Finished { .. }
    ));
    let files = s.backend.project().lock().unwrap().files.clone();
    assert_eq!(files["a.rs"], "one");
    assert_eq!(files["b.rs"], "two", "w2 was carried from revision 0 to 1");
    assert!(!files.contains_key("c.rs"), "w3's stale guard still fails");
    let log = s.store.read(conv.session_id(), 1, 1000).await.unwrap();
    let called = log.iter().find_map(|e| match &e.event {
        Event::ToolCalled {
            call_id, arguments, ..
        } if call_id == "w2" => Some(arguments.clone()),
        _ => None,
    });
    assert_eq!(
        called.unwrap()["expected_revision"],
        1,
        "the carried revision is what was recorded and run"
    );
}

#[tokio::test]
async fn deferred_tools_are_listed_loaded_and_called() {
    let s = setup().await;
    let provider = Arc::new(FakeProvider::from_messages(&[
        calls(vec![call("l1", "load_tool", json!({"name": "read_file"}))]),
        calls(vec![call(
            "c1",
            "call_tool",
            json!({"name": "read_file", "arguments": {"path": "a.rs"}}),
        )]),
        says("a.rs defines a()."),
    ]));
    let mut p = profile();
    p.tools = ToolLoading::Deferred;
    let mut conv = Conversation::open(
        s.store.clone(),
        provider.clone(),
        s.backend.clone(),
        p,
        None,
    )
    .await
    .unwrap();
    assert!(matches!(
        conv.turn("what is in a.rs?").await.unwrap(),
        TurnOutcome::Finished { .. }
    ));
    let requests = provider.requests();
    let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["load_tool", "call_tool", "read_result", "read_skill"]
    );
    let catalog = &requests[0].system[1].text;
    let listed: Vec<&str> = catalog
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        listed,
        [
            "delete_file",
            "list_files",
            "read_file",
            "read_log",
            "set_note",
            "snapshot",
            "write_file"
        ],
        "sorted"
    );
    // The prefix is byte-stable across the turn's steps.
    assert!(
        requests
            .windows(2)
            .all(|w| w[0].system == w[1].system && w[0].tools == w[1].tools)
    );
    let loaded = serde_json::to_string(&requests[1].messages).unwrap();
    assert!(
        loaded.contains("input_schema") && loaded.contains("path"),
        "load_tool returned the schema"
    );
    assert_eq!(s.backend.invocations("read_file"), 1);
    let log = s.store.read(conv.session_id(), 1, 100).await.unwrap();
    assert!(
        log.iter()
            .any(|e| matches!(&e.event, Event::ToolCalled { tool, .. } if tool == "read_file"))
    );
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema, PartialEq)]
struct FileCount {
    count: u32,
    names: Vec<String>,
}

#[tokio::test]
async fn structured_answers_are_validated_with_one_repair() {
    let s = setup().await;
    let provider = Arc::new(FakeProvider::from_messages(&[
        says("There are two files."),
        says("```json\n{\"count\": 2, \"names\": [\"a.rs\", \"b.rs\"]}\n```"),
    ]));
    let mut conv = open(&s, provider.clone(), None).await;
    let answer: FileCount = conv.ask("how many files are there?").await.unwrap();
    assert_eq!(
        answer,
        FileCount {
            count: 2,
            names: vec!["a.rs".into(), "b.rs".into()]
        }
    );
    let first = serde_json::to_string(&provider.requests()[0].messages).unwrap();
    assert!(
        first.contains("JSON schema"),
        "no native structured output: the schema is in the prompt"
    );
    let repair = serde_json::to_string(&provider.requests()[1].messages).unwrap();
    assert!(repair.contains("did not follow the schema"));

    let provider = Arc::new(FakeProvider::from_messages(&[
        says("{\"count\": \"two\"}"),
        says("still no"),
    ]));
    let mut conv = open(&s, provider, None).await;
    let err = conv.ask::<FileCount>("how many?").await.unwrap_err();
    assert_eq!(err.code, rein_wire::error::codes::STRUCTURED_ANSWER_INVALID);
}

#[tokio::test]
async fn a_verification_gate_must_pass_for_the_turn_to_finish() {
    let s = setup().await;
    let work = tempfile::tempdir().unwrap();
    // Fails the first time it runs, passes the second.
    let script = "n=$(cat n 2>/dev/null || echo 0); n=$((n+1)); echo $n > n; echo check run $n; test $n -ge 2";
    let provider = Arc::new(FakeProvider::from_messages(&[
        says("first try"),
        says("second try"),
    ]));
    let mut conv = open(&s, provider.clone(), None).await;
    let mut check = rein_runner::Verification::new(&["sh", "-c", script]);
    check.cwd = Some(work.path().to_owned());
    conv.agent.verification = Some(check);
    assert_eq!(
        conv.turn("fix it").await.unwrap(),
        TurnOutcome::Finished {
            reply: "second try".into()
        }
    );
    let second = serde_json::to_string(&provider.requests()[1].messages).unwrap();
    assert!(
        second.contains("failed") && second.contains("check run 1"),
        "{second}"
    );

    let provider = Arc::new(FakeProvider::from_messages(&[
        says("a"),
        says("b"),
        says("c"),
    ]));
    let mut conv = open(&s, provider, None).await;
    let mut check = rein_runner::Verification::new(&["false"]);
    check.attempts = 1;
    conv.agent.verification = Some(check);
    let TurnOutcome::Error { error } = conv.turn("fix it").await.unwrap() else {
        panic!()
    };
    assert_eq!(error.code, rein_wire::error::codes::VERIFICATION_FAILED);
    // Said as it happened: two runs failed, and the model changed nothing
    // between them — no "fixes" that were none.
    assert!(
        error.message.contains("failed all 2 of its runs")
            && error.message.contains("no file changed between its runs"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn skills_are_listed_and_read_and_images_travel_as_image_content() {
    let s = setup().await;
    let provider = Arc::new(FakeProvider::from_messages(&[
        calls(vec![
            call("k1", "read_skill", json!({"name": "style"})),
            call("p1", "snapshot", json!({})),
        ]),
        says("Short functions, and the window looks fine."),
    ]));
    let mut conv = open(&s, provider.clone(), None).await;
    assert!(matches!(
        conv.turn("how should I write code here, and how does the window look?")
            .await
            .unwrap(),
        TurnOutcome::Finished { .. }
    ));
    let first = &provider.requests()[0];
    assert!(first.system.iter().any(|b| {
        b.text
            .contains("- style: How code in this project is written.")
    }));
    let second = &provider.requests()[1];
    let results = &second.messages.last().unwrap().content;
    let skill = serde_json::to_string(&results[0]).unwrap();
    assert!(skill.contains("Functions are short"), "{skill}");
    let ContentBlock::ToolResult { content, .. } = &results[1] else {
        panic!()
    };
    assert!(
        matches!(&content[1], ContentBlock::Image { source: rein_wire::ImageSource::Base64 { media_type, .. } } if media_type == "image/png")
    );
    assert!(
        !serde_json::to_string(&content[0])
            .unwrap()
            .contains("iVBOR"),
        "the image is not in the text"
    );
}

#[tokio::test]
async fn the_prefix_is_byte_stable_over_a_long_session() {
    let s = setup().await;
    // 30 turns of 10 steps each (9 tool calls, then an answer): 300 model calls.
    let mut script = Vec::new();
    for turn in 0..30 {
        for step in 0..9 {
            // Distinct arguments each time: this is work, not a loop.
            let path = format!("src/f{}.rs", turn * 10 + step);
            script.push(calls(vec![call(
                &format!("t{turn}s{step}"),
                "read_file",
                json!({"path": path}),
            )]));
        }
        script.push(says(&format!("answer {turn}")));
    }
    let provider = Arc::new(FakeProvider::from_messages(&script));
    let mut conv = open(&s, provider.clone(), None).await;
    for turn in 0..30 {
        let outcome = conv.turn(&format!("question {turn}")).await.unwrap();
        assert_eq!(
            outcome,
            TurnOutcome::Finished {
                reply: format!("answer {turn}")
            }
        );
    }
    let requests = provider.requests();
    assert_eq!(requests.len(), 300);
    let first = rein_cache::prefix_bytes(&requests[0].system, &requests[0].tools);
    for (i, r) in requests.iter().enumerate() {
        assert_eq!(
            rein_cache::prefix_bytes(&r.system, &r.tools),
            first,
            "request {i} changed the prefix"
        );
    }
    let log = s.store.read(conv.session_id(), 1, 100_000).await.unwrap();
    let fingerprints: std::collections::BTreeSet<String> = log
        .iter()
        .filter_map(|e| match &e.event {
            Event::ModelRequested {
                prefix_fingerprint, ..
            } => Some(prefix_fingerprint.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(fingerprints.len(), 1);
}

#[tokio::test]
async fn compacting_on_request_summarises_older_groups_and_keeps_the_tail() {
    let s = setup().await;
    let mut script: Vec<ScriptedMessage> = (0..10)
        .map(|i| {
            calls(vec![call(
                &format!("c{i}"),
                "read_file",
                json!({"path": format!("f{i}.rs")}),
            )])
        })
        .collect();
    script.push(says("done"));
    let record = json!({
        "goal": "read ten files", "done": ["Ten reads, all of missing files."],
        "files_changed": [], "checks": [], "facts": [], "next": "",
    });
    script.push(says(&record.to_string()));
    let provider = Arc::new(FakeProvider::from_messages(&script));
    let mut conv = open(&s, provider, None).await;
    assert!(matches!(
        conv.turn("read ten files").await.unwrap(),
        TurnOutcome::Finished { .. }
    ));
    conv.compact_now().await.unwrap();
    let request = conv.next_request().await.unwrap();
    let first = serde_json::to_string(&request.messages[0]).unwrap();
    assert!(
        first.contains("[Earlier conversation, summarised to save room]")
            && first.contains("Ten reads"),
        "{first}"
    );
    // At least four complete groups stay raw after the summary.
    let raw_calls = request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    assert!(raw_calls >= 4, "{raw_calls}");
    // The log kept everything.
    let log = s.store.read(conv.session_id(), 1, 1000).await.unwrap();
    assert_eq!(
        log.iter()
            .filter(|e| matches!(e.event, Event::ToolResult { .. }))
            .count(),
        10
    );
}
