//! Golden traces: each scenario is replayed through the runner with the
//! model outputs recorded in `tests/golden/NAME.jsonl`, and the session it
//! writes must export to exactly those bytes.
//!
//! Every request the model is sent is pinned beside them, as each wire
//! API's body (`golden_parts/requests.rs`).
//!
//! `cargo xtask golden` runs this; `cargo xtask golden --bless` (or
//! `REIN_GOLDEN_BLESS=1`) writes the files anew from each scenario's
//! scripted model, after a reviewed change.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::path::PathBuf;
use std::sync::Arc;

use rein_approvals::{Answer, LeaseScope, Surface};
use rein_runner::{Conversation, Profile, TurnOutcome};
use rein_sessions::{MemoryStore, Store};
use rein_testing::{FakeProvider, FakeToolBackend, ScriptedCall, ScriptedMessage};
use rein_trace::golden;
use rein_wire::{AgentError, ContentBlock, StopReason, StreamEvent, Usage};
use serde_json::{Value, json};

#[path = "golden_parts/agents.rs"]
mod agents;
#[path = "golden_parts/requests.rs"]
mod requests;

struct Turn {
    prompt: &'static str,
    say_before: Option<&'static str>,
    interrupt_before: bool,
    /// Answers to the approvals this turn asks for, in order (bless only;
    /// replay takes them from the trace).
    decisions: Vec<bool>,
}

fn turn(prompt: &'static str) -> Turn {
    Turn {
        prompt,
        say_before: None,
        interrupt_before: false,
        decisions: Vec::new(),
    }
}

struct Scenario {
    name: &'static str,
    turns: Vec<Turn>,
    brain: Vec<ScriptedMessage>,
    /// A context window small enough to make pruning or compaction happen.
    window: Option<u64>,
}

/// A scripted model that also answers summary requests (compaction), from
/// its own queue: the recorded summaries on replay, fixed ones to bless.
struct WithSummaries {
    inner: FakeProvider,
    summaries: std::sync::Mutex<std::collections::VecDeque<String>>,
    /// Every request sent, in order.
    sent: Arc<std::sync::Mutex<Vec<rein_wire::Request>>>,
}

impl rein_gateway::Provider for WithSummaries {
    fn name(&self) -> &str {
        "golden"
    }
    fn capabilities(&self) -> rein_gateway::Capabilities {
        self.inner.capabilities()
    }
    fn stream(&self, request: rein_wire::Request) -> rein_gateway::EventStream {
        self.sent.lock().unwrap().push(request.clone());
        if request
            .system
            .first()
            .is_some_and(|b| b.text.starts_with("Summarise"))
        {
            let text = self
                .summaries
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_default();
            let events = vec![
                Ok(StreamEvent::MessageStart {
                    id: None,
                    model: "fake-model".into(),
                }),
                Ok(StreamEvent::TextDelta { text }),
                Ok(StreamEvent::Stop {
                    reason: StopReason::EndTurn,
                }),
            ];
            return Box::pin(futures::stream::iter(events));
        }
        self.inner.stream(request)
    }
}

/// The summary records the trace's compactions kept, as the model gave
/// them (a compaction that kept none answers with nothing).
fn recorded_summaries(trace: &str) -> Vec<String> {
    golden::parse(trace)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "compaction.created" && e.data["summary"]["kind"] == "compact")
        .map(|e| {
            let record = &e.data["summary"]["summary_check"]["record"];
            if record.is_null() {
                String::new()
            } else {
                record.to_string()
            }
        })
        .collect()
}

fn says(text: &str) -> ScriptedMessage {
    ScriptedMessage::text(&[text])
}

fn calls(list: Vec<ScriptedCall>) -> ScriptedMessage {
    list.into_iter()
        .fold(ScriptedMessage::text(&[]), ScriptedMessage::with_call)
}

fn log_text(lines: u32) -> String {
    (0..lines)
        .map(|i| format!("line {i}: compiling module_{i}\n"))
        .collect()
}

#[expect(clippy::too_many_lines, reason = "the table of scenarios")]
fn scenarios() -> Vec<Scenario> {
    let artifact = rein_sessions::hash_hex(
        serde_json::to_string(&json!({"log": log_text(3000)}))
            .unwrap()
            .as_bytes(),
    );
    vec![
        Scenario {
            name: "plain_answer",
            turns: vec![turn("hello")],
            brain: vec![says("Hello! How can I help?")],
            window: None,
        },
        Scenario {
            name: "parallel_reads",
            turns: vec![turn("what do a.rs and b.rs define?")],
            brain: vec![
                calls(vec![
                    ScriptedCall::to("read_file", json!({"path": "a.rs"}))
                        .id("c1")
                        .in_fragments(2),
                    ScriptedCall::to("read_file", json!({"path": "b.rs"}))
                        .id("c2")
                        .in_fragments(2),
                ]),
                says("a.rs defines a(); b.rs defines b()."),
            ],
            window: None,
        },
        Scenario {
            name: "write_approved",
            turns: vec![Turn {
                decisions: vec![true],
                ..turn("make a.rs return 1")
            }],
            brain: vec![
                calls(vec![
                    ScriptedCall::to(
                        "write_file",
                        json!({"path": "a.rs", "content": "fn a() -> i32 { 1 }"}),
                    )
                    .id("w1")
                    .in_fragments(3),
                ]),
                says("a.rs now returns 1."),
            ],
            window: None,
        },
        Scenario {
            name: "write_denied",
            turns: vec![Turn {
                decisions: vec![false],
                ..turn("delete b.rs")
            }],
            brain: vec![
                calls(vec![
                    ScriptedCall::to("delete_file", json!({"path": "b.rs"})).id("d1"),
                ]),
                says("I left b.rs in place."),
            ],
            window: None,
        },
        Scenario {
            name: "offload_read_by_slices",
            turns: vec![turn("what does the build log end with?")],
            brain: vec![
                calls(vec![
                    ScriptedCall::to("read_log", json!({"lines": 3000})).id("l1"),
                ]),
                calls(vec![
                    ScriptedCall::to(
                        "read_result",
                        json!({"artifact": artifact, "offset": 0, "length": 2000}),
                    )
                    .id("r1"),
                ]),
                calls(vec![
                    ScriptedCall::to(
                        "read_result",
                        json!({"artifact": artifact, "offset": 98_000, "length": 2000}),
                    )
                    .id("r2"),
                ]),
                says("It ends with module_2999."),
            ],
            window: None,
        },
        Scenario {
            name: "steer_and_interrupt",
            turns: vec![
                Turn {
                    say_before: Some("only look at a.rs"),
                    ..turn("look at the project")
                },
                Turn {
                    interrupt_before: true,
                    ..turn("now look at everything")
                },
            ],
            brain: vec![
                calls(vec![
                    ScriptedCall::to("read_file", json!({"path": "a.rs"})).id("c1"),
                ]),
                says("a.rs defines a()."),
            ],
            window: None,
        },
        Scenario {
            name: "soft_prune",
            turns: vec![turn("read the build log in parts")],
            brain: (0..9)
                .map(|i| {
                    calls(vec![
                        ScriptedCall::to("read_log", json!({"lines": 40 + i})).id(&format!("p{i}")),
                    ])
                })
                .chain(std::iter::once(says(
                    "The log grows by one module per line.",
                )))
                .collect(),
            window: Some(5200),
        },
        Scenario {
            name: "hard_compaction",
            turns: vec![turn("read the build log in parts")],
            brain: (0..12)
                .map(|i| {
                    calls(vec![
                        ScriptedCall::to("read_log", json!({"lines": 40 + i})).id(&format!("h{i}")),
                    ])
                })
                .chain(std::iter::once(says("Done reading.")))
                .collect(),
            window: Some(4300),
        },
    ]
}

/// The model outputs recorded in a golden trace, as provider events.
fn recorded_calls(trace: &str) -> Vec<Vec<Result<StreamEvent, AgentError>>> {
    golden::parse(trace)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "model.completed")
        .map(|e| {
            let d = &e.data;
            let mut events = vec![Ok(StreamEvent::MessageStart {
                id: None,
                model: d["model"].as_str().unwrap().to_owned(),
            })];
            let content: Vec<ContentBlock> =
                serde_json::from_value(d["message"]["content"].clone()).unwrap();
            let mut index = 0;
            for block in content {
                match block {
                    ContentBlock::Text { text } => events.push(Ok(StreamEvent::TextDelta { text })),
                    ContentBlock::ToolUse { id, name, input } => {
                        events.push(Ok(StreamEvent::ToolCallStart { index, id, name }));
                        events.push(Ok(StreamEvent::ToolCallDelta {
                            index,
                            fragment: input.to_string(),
                        }));
                        events.push(Ok(StreamEvent::ToolCallEnd { index }));
                        index += 1;
                    }
                    _ => {}
                }
            }
            if let Ok(reason) = serde_json::from_value::<StopReason>(d["stop_reason"].clone()) {
                events.push(Ok(StreamEvent::Stop { reason }));
            }
            if let Ok(usage) = serde_json::from_value::<Usage>(d["usage"].clone()) {
                events.push(Ok(StreamEvent::Usage { usage }));
            }
            events
        })
        .collect()
}

fn recorded_decisions(trace: &str) -> Vec<bool> {
    golden::parse(trace)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "approval.decided")
        .map(|e| e.data["decision"] == "approved")
        .collect()
}

/// Run a scenario with these model outputs and approvals; return its trace
/// and the requests the model was sent.
async fn run(
    scenario: &Scenario,
    provider: FakeProvider,
    mut decisions: Vec<bool>,
    summaries: Vec<String>,
) -> (String, Vec<rein_wire::Request>, String) {
    let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
    let provider = WithSummaries {
        inner: provider,
        summaries: std::sync::Mutex::new(summaries.into()),
        sent: sent.clone(),
    };
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let backend =
        Arc::new(FakeToolBackend::new(&[("a.rs", "fn a() {}"), ("b.rs", "fn b() {}")]).unwrap());
    let profile = Profile {
        max_output_tokens: 1024,
        ..Profile::new("Golden", "fake-model").with_system("You help with a small project.")
    };
    let mut conv = Conversation::open(store.clone(), Arc::new(provider), backend, profile, None)
        .await
        .unwrap();
    conv.agent.context.window = scenario.window;
    decisions.reverse();
    for t in &scenario.turns {
        if let Some(text) = t.say_before {
            conv.steering().say(text);
        }
        if t.interrupt_before {
            conv.steering().interrupt();
        }
        let mut outcome = conv.turn(t.prompt).await.unwrap();
        while let TurnOutcome::AwaitingApproval(rein_runner::ApprovalRequest {
            approval_id, ..
        }) = &outcome
        {
            let answer = if decisions.pop().expect("a recorded decision") {
                Answer::Approve(LeaseScope::Once)
            } else {
                Answer::Deny
            };
            conv.decide(approval_id, answer, &Surface::terminal())
                .await
                .unwrap();
            outcome = conv.resume().await.unwrap();
        }
    }
    let id = conv.session_id().to_owned();
    let trace = golden::export(&store.read(&id, 1, 100_000).await.unwrap()).unwrap();
    let sent = std::mem::take(&mut *sent.lock().unwrap());
    (trace, sent, id)
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden")
}

#[tokio::test]
async fn golden_traces_replay_byte_for_byte() {
    let bless = std::env::var("REIN_GOLDEN_BLESS").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    for scenario in scenarios() {
        let path = golden_dir().join(format!("{}.jsonl", scenario.name));
        if bless {
            let decisions: Vec<bool> = scenario
                .turns
                .iter()
                .flat_map(|t| t.decisions.clone())
                .collect();
            let fixed: Vec<String> = (1..=20)
                .map(|n| {
                    json!({
                        "goal": "read the build log in parts",
                        "done": [format!("Summary {n}: the log was read in parts.")],
                        "files_changed": [], "checks": [], "facts": [], "next": "",
                    })
                    .to_string()
                })
                .collect();
            let (first, _, _) = run(
                &scenario,
                FakeProvider::from_messages(&scenario.brain),
                decisions,
                fixed,
            )
            .await;
            // Replay once so the file is the fixed point replays reproduce.
            let (fixed, sent, session) = run(
                &scenario,
                FakeProvider::new(recorded_calls(&first)),
                recorded_decisions(&first),
                recorded_summaries(&first),
            )
            .await;
            std::fs::write(&path, &fixed).unwrap();
            let dir = golden_dir().join("requests");
            requests::pinned(&dir, scenario.name, (&sent, &session), true);
            eprintln!("blessed {}", path.display());
            continue;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run `cargo xtask golden --bless` to create it)",
                path.display()
            )
        });
        let (replayed, sent, session) = run(
            &scenario,
            FakeProvider::new(recorded_calls(&expected)),
            recorded_decisions(&expected),
            recorded_summaries(&expected),
        )
        .await;
        failures.extend(requests::pinned(
            &golden_dir().join("requests"),
            scenario.name,
            (&sent, &session),
            false,
        ));
        if replayed != expected {
            let at = expected
                .lines()
                .zip(replayed.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(expected.lines().count().min(replayed.lines().count()));
            failures.push(format!(
                "{}: line {} differs\n  golden:   {}\n  replayed: {}",
                scenario.name,
                at + 1,
                expected.lines().nth(at).unwrap_or("<end>"),
                replayed.lines().nth(at).unwrap_or("<end>")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "golden traces differ (review, then `cargo xtask golden --bless`):\n{}",
        failures.join("\n")
    );
}

#[test]
fn there_are_golden_traces_for_every_scenario() {
    for scenario in scenarios() {
        let path = golden_dir().join(format!("{}.jsonl", scenario.name));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            text.lines().count() > 5,
            "{} is missing or empty",
            path.display()
        );
        let kinds: Vec<String> = golden::parse(&text)
            .unwrap()
            .into_iter()
            .map(|e| e.kind)
            .collect();
        let has = |k: &str| kinds.iter().any(|x| x == k);
        match scenario.name {
            "write_approved" => assert!(has("approval.requested") && has("approval.decided")),
            "offload_read_by_slices" => {
                assert!(text.contains("\"offload\"") && text.contains("read_result"))
            }
            "steer_and_interrupt" => assert!(has("steer.said") && has("steer.interrupted")),
            "soft_prune" => assert!(
                text.contains("\"kind\":\"prune\""),
                "no soft prune in {}",
                path.display()
            ),
            "hard_compaction" => assert!(
                text.contains("\"kind\":\"compact\""),
                "no compaction in {}",
                path.display()
            ),
            _ => {}
        }
        let _ = Value::Null;
    }
}
