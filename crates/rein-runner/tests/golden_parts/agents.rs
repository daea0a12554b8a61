//! The golden trace of a turn whose model hands two tasks to sub-agents
//! side by side, one of which writes and so asks the person: the parent's
//! session and each sub-agent's are exported to files of their own
//! (`two_subagents.jsonl`, `two_subagents.agent-1.jsonl`, `….agent-2.jsonl`)
//! and a replay — each conversation given its own recorded model outputs,
//! the person's recorded answer given from the parent's surface — must
//! write exactly those bytes. What each conversation sends its model is
//! pinned as the other scenarios' is (`requests`), a file per conversation
//! and wire API, each session's id written by its name.

use std::collections::HashMap;
use std::sync::Arc;

use rein_approvals::{Answer, LeaseScope, Surface};
use rein_runner::{Conversation, Delegation, Profile, TurnOutcome, UiEvent, UiKind};
use rein_sessions::{MemoryStore, Store};
use rein_testing::{FakeProvider, FakeToolBackend, ScriptedCall};
use rein_trace::golden;
use rein_wire::{Request, Role};
use serde_json::json;

use super::{calls, golden_dir, recorded_calls, recorded_decisions, requests, says};

const NAME: &str = "two_subagents";
const PROMPT: &str = "ask two helpers: one reads a.rs, one writes notes.md";

/// Each conversation's model outputs, found by the first thing it was
/// asked (the parent's prompt, a sub-agent's task): which sub-agent calls
/// first is up to the scheduler, what each is answered is not.
struct ByTask {
    routes: HashMap<String, FakeProvider>,
}

fn first_user_text(request: &Request) -> String {
    request
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| m.text())
        .unwrap_or_default()
}

impl rein_gateway::Provider for ByTask {
    fn name(&self) -> &str {
        "golden"
    }
    fn capabilities(&self) -> rein_gateway::Capabilities {
        FakeProvider::default().capabilities()
    }
    fn stream(&self, request: Request) -> rein_gateway::EventStream {
        let asked = first_user_text(&request);
        match self.routes.get(&asked) {
            Some(provider) => provider.stream(request),
            None => panic!("no recorded outputs for a conversation asked {asked:?}"),
        }
    }
}

/// The model outputs to bless from.
fn scripted() -> HashMap<String, FakeProvider> {
    HashMap::from([
        (
            PROMPT.to_owned(),
            FakeProvider::from_messages(&[
                calls(vec![
                    ScriptedCall::to("delegate", json!({"task": "read a.rs"}))
                        .id("d1")
                        .in_fragments(2),
                    ScriptedCall::to("delegate", json!({"task": "write notes.md"}))
                        .id("d2")
                        .in_fragments(2),
                ]),
                says("a.rs defines a(), and notes.md is written."),
            ]),
        ),
        (
            "read a.rs".to_owned(),
            FakeProvider::from_messages(&[
                calls(vec![
                    ScriptedCall::to("read_file", json!({"path": "a.rs"}))
                        .id("r1")
                        .in_fragments(2),
                ]),
                says("a.rs defines a()."),
            ]),
        ),
        (
            "write notes.md".to_owned(),
            FakeProvider::from_messages(&[
                calls(vec![
                    ScriptedCall::to(
                        "write_file",
                        json!({"path": "notes.md", "content": "# notes\n"}),
                    )
                    .id("w1")
                    .in_fragments(3),
                ]),
                says("notes.md is written."),
            ]),
        ),
    ])
}

/// What a run left: each conversation's trace, parents first, with its
/// session and the requests it sent its model.
struct Ran {
    traces: Vec<String>,
    sessions: Vec<String>,
    sent: Vec<Vec<Request>>,
}

/// Run the turn.
async fn run(routes: HashMap<String, FakeProvider>, mut decisions: Vec<bool>) -> Ran {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let backend =
        Arc::new(FakeToolBackend::new(&[("a.rs", "fn a() {}"), ("b.rs", "fn b() {}")]).unwrap());
    let profile = Profile {
        max_output_tokens: 1024,
        ..Profile::new("Golden", "fake-model").with_system("You help with a small project.")
    };
    let models = Arc::new(ByTask { routes });
    let mut conv = Conversation::open(store.clone(), models.clone(), backend, profile, None)
        .await
        .unwrap();
    conv.agent.delegation = Some(Delegation::default());
    // The person at the parent's surface answers each sub-agent's question.
    let mut ui = conv.subscribe();
    let at_surface = store.clone();
    decisions.reverse();
    let person = tokio::spawn(async move {
        while let Ok(event) = ui.recv().await {
            if let UiEvent {
                kind: UiKind::AgentAwaiting { session, request },
                ..
            } = event
            {
                let answer = if decisions.pop().expect("a recorded decision") {
                    Answer::Approve(LeaseScope::Once)
                } else {
                    Answer::Deny
                };
                rein_approvals::decide(
                    at_surface.as_ref(),
                    &session,
                    &request.approval_id,
                    answer,
                    &Surface::terminal(),
                )
                .await
                .unwrap();
            }
        }
    });
    let outcome = conv.turn(PROMPT).await.unwrap();
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    person.abort();
    let parent = conv.session_id().to_owned();
    conv.close().await.unwrap();
    let mut ran = Ran {
        traces: Vec::new(),
        sessions: Vec::new(),
        sent: Vec::new(),
    };
    for (session, _) in rein_approvals::family(store.as_ref(), &parent)
        .await
        .unwrap()
    {
        let events = store.read(&session, 1, 100_000).await.unwrap();
        let trace = golden::export(&events).unwrap();
        ran.sent
            .push(models.routes[&first_prompt(&trace)].requests());
        ran.traces.push(trace);
        ran.sessions.push(session);
    }
    ran
}

/// What a conversation's trace says it was first asked.
fn first_prompt(trace: &str) -> String {
    golden::parse(trace)
        .unwrap()
        .into_iter()
        .find(|e| e.kind == "turn.started")
        .and_then(|e| e.data["prompt"].as_str().map(str::to_owned))
        .unwrap()
}

/// Write (`bless`) or check what each conversation sent; what differs.
fn pinned(ran: &Ran, bless: bool) -> Vec<String> {
    let names = ["<session>", "<agent-1 session>", "<agent-2 session>"];
    let sessions: Vec<(&str, &str)> = ran.sessions.iter().map(String::as_str).zip(names).collect();
    ["", ".agent-1", ".agent-2"]
        .iter()
        .zip(&ran.sent)
        .flat_map(|(part, sent)| {
            requests::pinned_named(
                &golden_dir().join("requests"),
                &format!("{NAME}{part}"),
                sent,
                &sessions,
                bless,
            )
        })
        .collect()
}

fn paths() -> [std::path::PathBuf; 3] {
    ["", ".agent-1", ".agent-2"].map(|part| golden_dir().join(format!("{NAME}{part}.jsonl")))
}

/// Each conversation's recorded outputs, by what it was first asked.
fn recorded(traces: &[String]) -> HashMap<String, FakeProvider> {
    traces
        .iter()
        .map(|trace| {
            (
                first_prompt(trace),
                FakeProvider::new(recorded_calls(trace)),
            )
        })
        .collect()
}

#[tokio::test]
async fn two_sub_agents_one_asking_replay_byte_for_byte() {
    let bless = std::env::var("REIN_GOLDEN_BLESS").is_ok_and(|v| v == "1");
    if bless {
        let first = run(scripted(), vec![true]).await.traces;
        let decisions = first.iter().flat_map(|t| recorded_decisions(t)).collect();
        let fixed = run(recorded(&first), decisions).await;
        for (path, trace) in paths().iter().zip(&fixed.traces) {
            std::fs::write(path, trace).unwrap();
            eprintln!("blessed {}", path.display());
        }
        pinned(&fixed, true);
        return;
    }
    let expected: Vec<String> = paths()
        .iter()
        .map(|p| {
            std::fs::read_to_string(p).unwrap_or_else(|e| {
                panic!(
                    "{}: {e} (run `cargo xtask golden --bless` to create it)",
                    p.display()
                )
            })
        })
        .collect();
    let decisions = expected
        .iter()
        .flat_map(|t| recorded_decisions(t))
        .collect();
    let replayed = run(recorded(&expected), decisions).await;
    let differs = pinned(&replayed, false);
    assert!(
        differs.is_empty(),
        "what the model is sent differs (review, then `cargo xtask golden --bless`):\n{}",
        differs.join("\n")
    );
    for ((path, want), got) in paths().iter().zip(&expected).zip(&replayed.traces) {
        assert_eq!(
            got,
            want,
            "{} differs (review, then `cargo xtask golden --bless`)",
            path.display()
        );
    }
    // What the trace is for: two sub-agents, one asking, decided by a person.
    let parent = golden::parse(&expected[0]).unwrap();
    let started = parent.iter().filter(|e| e.kind == "agent.started").count();
    assert_eq!(started, 2);
    let writer = golden::parse(&expected[2]).unwrap();
    assert!(
        writer
            .iter()
            .any(|e| e.kind == "approval.requested" && e.agent == "main/agent-2")
    );
    assert!(
        writer
            .iter()
            .any(|e| e.kind == "approval.decided" && e.data["by"] == "terminal")
    );
}
