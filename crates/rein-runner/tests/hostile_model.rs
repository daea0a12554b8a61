//! A hostile model against rein's real file tools on real files: calls to
//! tools that do not exist, arguments that are not JSON or far over any
//! bound, paths out of the root by `..`, by an absolute path, through a
//! symbolic link or a hard link, a thousand calls in one message, and a
//! model that never stops calling. Each gets a clear error result or a
//! budget stop — never a panic, a hang, a call without its one result, or
//! a byte changed outside the root — even with a person who says yes to
//! everything.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_approvals::{Answer, Surface};
use rein_gateway::{CachingStyle, Capabilities, EventStream, Provider};
use rein_runner::{Conversation, Profile, ToolLoading, TurnOutcome};
use rein_sessions::{Event, SqliteStore, Store, StoredEvent, ToolStatus};
use rein_testing::{ScriptedCall, ScriptedMessage};
use rein_wire::permission::LeaseScope;
use rein_wire::{ContentBlock, Request, Role};

/// One scripted message: tool calls (name, raw arguments), or an answer.
enum Says {
    Calls(Vec<(String, String)>),
    Answer,
}

/// A model that says its messages in order, one per step of the turn; past
/// its script, with `forever`, it keeps calling (a new file each time).
struct Hostile {
    script: Vec<Says>,
    forever: bool,
}

impl Provider for Hostile {
    fn name(&self) -> &str {
        "hostile"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            caching: CachingStyle::None,
            max_cache_breakpoints: 0,
            context_window: 1_000_000,
            structured_output: false,
            token_counting: false,
        }
    }
    fn stream(&self, request: Request) -> EventStream {
        let step = request
            .messages
            .iter()
            .rev()
            .take_while(|m| {
                m.role == Role::Assistant
                    || m.content
                        .iter()
                        .all(|b| matches!(b, ContentBlock::ToolResult { .. }))
            })
            .filter(|m| m.role == Role::Assistant)
            .count();
        let says = match self.script.get(step) {
            Some(Says::Calls(calls)) => Some(calls.clone()),
            Some(Says::Answer) => None,
            None if self.forever => Some(vec![(
                "read_file".to_owned(),
                format!(r#"{{"path":"never-{step}.txt"}}"#),
            )]),
            None => None,
        };
        let message = match says {
            Some(calls) => (0..).zip(calls).fold(
                ScriptedMessage::text(&[]),
                |message, (index, (name, arguments))| {
                    message.with_call(ScriptedCall {
                        id: format!("s{step}c{index}"),
                        name,
                        arguments,
                        fragments: 1,
                    })
                },
            ),
            None => ScriptedMessage::text(&["Done."]),
        };
        let events = message.events();
        Box::pin(futures::stream::iter(events.into_iter().map(Ok)))
    }
}

/// A project root beside a folder outside it, with every way out planted
/// in the root: a link to the outside file, a link to the outside folder,
/// a hard link to the outside file.
struct Ground {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

impl Ground {
    fn new() -> Ground {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
        std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
        std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("dirlink")).unwrap();
        std::fs::hard_link(outside.join("secret.txt"), root.join("hard.txt")).unwrap();
        Ground {
            root,
            outside,
            _dir: dir,
        }
    }

    /// Every file outside the root, with its bytes.
    fn outside_now(&self) -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect()
    }
}

/// Run one turn of `script` to its end, saying yes to every approval.
async fn run(
    ground: &Ground,
    script: Vec<Says>,
    forever: bool,
    max_steps: u32,
) -> (TurnOutcome, Vec<StoredEvent>) {
    let db = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(db.path().join("rein.db")).await.unwrap());
    let root = rein_files::Root::new(&ground.root).unwrap();
    let tools =
        rein_files::file_tools(Arc::new(root), Some(rein_files::Stash(store.clone()))).unwrap();
    let model = Arc::new(Hostile { script, forever });
    let profile = Profile {
        tools: ToolLoading::Native,
        ..Profile::new("Target", "hostile")
    };
    let mut conv = Conversation::open(store.clone(), model, Arc::new(tools), profile, None)
        .await
        .unwrap();
    conv.agent.budgets.max_steps = max_steps;
    let mut outcome = conv.turn("do your worst").await.unwrap();
    while let TurnOutcome::AwaitingApproval(_) = outcome {
        for pending in conv.pending_approvals().await.unwrap() {
            conv.decide(
                &pending.approval_id,
                Answer::Approve(LeaseScope::Once),
                &Surface::terminal(),
            )
            .await
            .unwrap();
        }
        outcome = conv.resume().await.unwrap();
    }
    let log = conv.log_events().await.unwrap();
    (outcome, log)
}

/// Each call the model made and how it ended (`ok` or the error's code);
/// fails unless every call has exactly one result.
fn results(log: &[StoredEvent]) -> BTreeMap<String, String> {
    let mut made = Vec::new();
    let mut ends: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in log {
        match &e.event {
            Event::ModelCompleted { message, .. } => {
                for b in &message.content {
                    if let ContentBlock::ToolUse { id, .. } = b {
                        made.push(id.clone());
                    }
                }
            }
            Event::ToolResult {
                call_id,
                status,
                content,
                ..
            } => {
                let how = match status {
                    ToolStatus::Ok => "ok".to_owned(),
                    ToolStatus::Error => content["error"]["code"]
                        .as_str()
                        .unwrap_or("error")
                        .to_owned(),
                };
                ends.entry(call_id.clone()).or_default().push(how);
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    for id in made {
        let got = ends.remove(&id).unwrap_or_default();
        assert_eq!(got.len(), 1, "call {id} has results {got:?}");
        out.insert(id, got[0].clone());
    }
    assert!(ends.is_empty(), "results for calls never made: {ends:?}");
    out
}

fn call(name: &str, args: &str) -> (String, String) {
    (name.to_owned(), args.to_owned())
}

fn abs(path: &Path) -> String {
    path.display().to_string()
}

#[tokio::test]
async fn no_call_reaches_outside_the_root_however_it_is_written() {
    let ground = Ground::new();
    let before = ground.outside_now();
    let secret = abs(&ground.outside.join("secret.txt"));
    let fresh = abs(&ground.outside.join("fresh.txt"));
    let script = vec![
        Says::Calls(vec![
            call("rm_rf", r#"{"path":"."}"#),
            call("read_file", "this is not JSON"),
            call("read_file", r#"{"path":"../outside/secret.txt"}"#),
            call("read_file", &format!(r#"{{"path":"{secret}"}}"#)),
            call("read_file", r#"{"path":"link.txt"}"#),
            call("read_file", r#"{"path":"dirlink/secret.txt"}"#),
            call("read_file", r#"{"path":"hard.txt"}"#),
            call("read_file", r#"{"path":"a.txt"}"#),
        ]),
        Says::Calls(vec![
            call(
                "write_file",
                r#"{"path":"../outside/fresh.txt","content":"pwned"}"#,
            ),
            call(
                "write_file",
                &format!(r#"{{"path":"{fresh}","content":"pwned"}}"#),
            ),
            call(
                "write_file",
                r#"{"path":"dirlink/fresh.txt","content":"pwned"}"#,
            ),
            call("write_file", r#"{"path":"link.txt","content":"pwned"}"#),
            call("write_file", r#"{"path":"hard.txt","content":"pwned"}"#),
            call(
                "edit_file",
                r#"{"path":"hard.txt","edits":[{"old_text":"secret","new_text":"pwned"}]}"#,
            ),
            call("delete_file", r#"{"path":"hard.txt"}"#),
            call("delete_file", r#"{"path":"dirlink/secret.txt"}"#),
            call("write_file", r#"{"path":"a.txt","content":"{"}"#),
        ]),
        Says::Answer,
    ];
    let (outcome, log) = run(&ground, script, false, 50).await;
    assert_eq!(
        outcome,
        TurnOutcome::Finished {
            reply: "Done.".into()
        }
    );
    let ends = results(&log);
    // The one read inside the root worked; every other call was refused
    // with a code the model can read.
    assert_eq!(ends["s0c7"], "ok", "{ends:?}");
    for (id, how) in &ends {
        if id != "s0c7" && id != "s1c8" {
            assert_ne!(how, "ok", "{id} reached outside: {ends:?}");
        }
    }
    let expected = [
        ("s0c0", "tool_not_found"),
        ("s0c1", "tool_arguments_malformed"),
        ("s0c2", "outside_root"),
        ("s0c3", "outside_root"),
        ("s0c4", "outside_root"),
        ("s0c5", "outside_root"),
        ("s0c6", "hard_link"),
        ("s1c0", "outside_root"),
        ("s1c1", "outside_root"),
        ("s1c2", "outside_root"),
        ("s1c3", "outside_root"),
        ("s1c4", "hard_link"),
        ("s1c5", "hard_link"),
        ("s1c6", "hard_link"),
        ("s1c7", "outside_root"),
    ];
    for (id, code) in expected {
        assert_eq!(ends[id], code, "{id}: {ends:?}");
    }
    assert_eq!(
        ground.outside_now(),
        before,
        "a byte outside the root changed"
    );
    // The links are still links, to what they were.
    assert!(
        std::fs::symlink_metadata(ground.root.join("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[tokio::test]
async fn arguments_far_over_the_bound_are_refused_and_nothing_is_written() {
    let ground = Ground::new();
    // 6 MB of content in one call's arguments: over a file's bound (4 MB)
    // and over the whole context window.
    let huge = "x".repeat(6 << 20);
    let script = vec![
        Says::Calls(vec![call(
            "write_file",
            &format!(r#"{{"path":"big.txt","content":"{huge}"}}"#),
        )]),
        Says::Answer,
    ];
    let (outcome, log) = run(&ground, script, false, 50).await;
    let ends = results(&log);
    // Refused before the person is asked: rein never writes a file it
    // could not read back.
    assert_eq!(ends["s0c0"], "too_large", "{ends:?}");
    assert!(!ground.root.join("big.txt").exists());
    assert!(
        !log.iter()
            .any(|e| matches!(e.event, Event::ApprovalRequested { .. })),
        "the person was asked about a write that could not run"
    );
    // The model's message is in the log as it came, so the next request
    // cannot fit the window: the turn ends with that coded error (the next
    // turn branches around it), never a panic or a hang.
    match outcome {
        TurnOutcome::Error { error } => {
            assert_eq!(error.code, rein_wire::error::codes::CONTEXT_WINDOW_EXCEEDED);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_thousand_calls_in_one_message_each_get_their_one_result() {
    let ground = Ground::new();
    let calls = (0..1000)
        .map(|i| call("read_file", &format!(r#"{{"path":"missing-{i}.txt"}}"#)))
        .collect();
    let script = vec![Says::Calls(calls), Says::Answer];
    let (outcome, log) = run(&ground, script, false, 50).await;
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    let ends = results(&log);
    assert_eq!(ends.len(), 1000);
    assert!(ends.values().all(|how| how == "not_found"), "{ends:?}");
}

#[tokio::test]
async fn a_thousand_identical_calls_end_as_a_loop_with_every_call_answered() {
    let ground = Ground::new();
    let calls = (0..1000)
        .map(|_| call("read_file", r#"{"path":"a.txt"}"#))
        .collect();
    let script = vec![Says::Calls(calls), Says::Answer];
    let (outcome, log) = run(&ground, script, false, 50).await;
    let ends = results(&log);
    assert_eq!(ends.len(), 1000);
    assert_eq!(outcome, TurnOutcome::LoopDetected);
}

#[tokio::test]
async fn a_model_that_never_stops_calling_is_stopped_by_its_budget() {
    let ground = Ground::new();
    let (outcome, log) = run(&ground, Vec::new(), true, 40).await;
    assert!(matches!(outcome, TurnOutcome::Budget { .. }), "{outcome:?}");
    let ends = results(&log);
    assert!(ends.len() <= 40, "{}", ends.len());
}
