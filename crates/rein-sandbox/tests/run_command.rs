//! `run_command` in a real conversation: the policy's allow runs without
//! asking, its forbid is refused before anyone is asked, the default asks
//! and runs once a person approves; the working directory stays in the
//! root; the command gets only the environment the config names.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use rein_approvals::{Answer, LeaseScope, Surface};
use rein_runner::{Conversation, Profile, TurnOutcome};
use rein_sandbox::policy::CommandPolicy;
use rein_sandbox::{RunCommand, Sandbox};
use rein_sessions::{Event, MemoryStore};
use rein_testing::{FakeProvider, ScriptedCall, ScriptedMessage};
use rein_tools::Registry;
use serde_json::json;

const POLICY: &str = r#"
default = "ask"
[[rule]]
prefix = ["ls"]
decision = "allow"
examples = ["ls -la"]
[[rule]]
prefix = ["env"]
decision = "allow"
examples = ["env"]
[[rule]]
prefix = ["rm"]
decision = "forbid"
examples = ["rm -rf ."]
"#;

fn call(id: &str, args: serde_json::Value) -> ScriptedMessage {
    ScriptedMessage::text(&[]).with_call(ScriptedCall::to("run_command", args).id(id))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_decides_and_a_person_approves_the_rest() {
    let root = tempfile::tempdir().expect("root");
    std::fs::write(root.path().join("present.txt"), "here\n").expect("seed");
    let Some(sandbox) = common::usable(common::sandbox(root.path())).await else {
        return;
    };
    let sandbox: Arc<dyn Sandbox> = Arc::new(sandbox);
    let env = BTreeMap::from([
        ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
        ("REIN_NAMED".to_owned(), "named-value".to_owned()),
    ]);
    let tool = RunCommand::new(
        sandbox,
        CommandPolicy::parse(POLICY).expect("policy"),
        root.path().to_path_buf(),
        env,
    )
    .expect("tool");
    let backend = Arc::new(Registry::new().with(tool).expect("registry"));
    let provider = Arc::new(FakeProvider::from_messages(&[
        call("c1", json!({"command": ["ls"]})),
        call("c2", json!({"command": ["rm", "-rf", "."]})),
        call("c3", json!({"command": ["ls"], "cwd": ".."})),
        call("c4", json!({"command": ["env"]})),
        call("c5", json!({"command": ["touch", "made.txt"]})),
        ScriptedMessage::text(&["Done."]),
    ]));
    let store = Arc::new(MemoryStore::new());
    let mut conversation = Conversation::open(
        store.clone(),
        provider.clone(),
        backend,
        Profile::new("t", "fake-model"),
        None,
    )
    .await
    .expect("open");
    let first = conversation.turn("work").await.expect("turn");
    let TurnOutcome::AwaitingApproval(asked) = first else {
        panic!("`touch` is the policy's default, so it asks: {first:?}");
    };
    assert_eq!(asked.tool, "run_command");
    assert_eq!(asked.arguments["command"], json!(["touch", "made.txt"]));
    assert!(
        !root.path().join("made.txt").exists(),
        "nothing ran before the person decided"
    );
    let done = conversation
        .decide_and_resume(
            &asked.approval_id,
            Answer::Approve(LeaseScope::Once),
            &Surface::terminal(),
        )
        .await
        .expect("resumed");
    assert!(matches!(done, TurnOutcome::Finished { .. }), "{done:?}");
    assert!(root.path().join("made.txt").exists());

    let events = rein_sessions::read_all(store.as_ref(), conversation.session_id())
        .await
        .expect("log");
    let results: BTreeMap<String, serde_json::Value> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolResult {
                call_id, content, ..
            } => Some((call_id.clone(), content.clone())),
            _ => None,
        })
        .collect();
    let asked_for: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ApprovalRequested { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(asked_for, ["c5"], "only the default asked");
    let text = |id: &str| results[id].to_string();
    assert!(
        text("c1").contains("present.txt") && text("c1").contains("landlock"),
        "{}",
        text("c1")
    );
    assert!(text("c2").contains("command_forbidden"), "{}", text("c2"));
    assert!(text("c3").contains("outside_root"), "{}", text("c3"));
    assert!(
        text("c4").contains("REIN_NAMED=named-value"),
        "{}",
        text("c4")
    );
    assert!(
        !text("c4").contains("HOME="),
        "only the named environment: {}",
        text("c4")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verification_gate_runs_in_the_same_sandbox() {
    let root = tempfile::tempdir().expect("root");
    let outside = tempfile::tempdir().expect("outside");
    let Some(sandbox) = common::usable(common::sandbox(root.path())).await else {
        return;
    };
    // The check tries to write outside the root: confined, it fails, and
    // the model is told; the file never appears.
    let escaped = outside.path().join("escaped.txt");
    let script = format!("echo x > {} && test -f fixed.txt", escaped.display());
    let place = rein::SandboxChecks::new(
        Arc::new(sandbox),
        BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]),
        CommandPolicy::default(),
    );
    let mut check =
        rein_runner::Verification::new(&["sh", "-c", &script]).in_place(Arc::new(place));
    check.cwd = Some(root.path().to_path_buf());
    check.attempts = 0;
    let provider = Arc::new(FakeProvider::from_messages(&[ScriptedMessage::text(&[
        "All done.",
    ])]));
    let mut conversation = Conversation::open(
        Arc::new(MemoryStore::new()),
        provider,
        Arc::new(Registry::new()),
        Profile::new("t", "fake-model"),
        None,
    )
    .await
    .expect("open");
    conversation.agent.verification = Some(check);
    let outcome = conversation.turn("finish").await.expect("turn");
    let TurnOutcome::Error { error } = outcome else {
        panic!("the confined check fails: {outcome:?}");
    };
    assert_eq!(error.code.as_str(), "verification_failed");
    assert!(!escaped.exists(), "the check wrote outside the root");
}
