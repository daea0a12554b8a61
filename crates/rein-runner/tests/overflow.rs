//! One step that asks for more at once than the window holds — a small
//! model reading twelve files in one message — which no compaction can cut:
//! the newest results are set aside (the model told so, and able to read
//! them again) until the request reaches the target, and the turn goes on.
//! Before, such a turn ended `context_window_exceeded`.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::sync::{Arc, Mutex};

use rein_gateway::{CachingStyle, Capabilities, EventStream, Provider};
use rein_runner::{Conversation, Profile, ToolLoading, TurnOutcome, estimate};
use rein_sessions::{Event, SqliteStore, Store};
use rein_testing::{FakeToolBackend, ScriptedCall, ScriptedMessage};
use rein_wire::{ContentBlock, Request, Role};

const WINDOW: u32 = 8000;
const FILES: usize = 12;

/// Reads every file in its first step, answers in its second; every
/// request it is sent is kept.
#[derive(Default)]
struct Greedy {
    requests: Mutex<Vec<Request>>,
}

impl Provider for Greedy {
    fn name(&self) -> &str {
        "greedy"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            caching: CachingStyle::None,
            max_cache_breakpoints: 0,
            context_window: WINDOW,
            structured_output: false,
            token_counting: false,
        }
    }
    fn stream(&self, request: Request) -> EventStream {
        let summarising = request
            .system
            .first()
            .is_some_and(|b| b.text.starts_with("Summarise"));
        let steps = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        let message = if summarising {
            ScriptedMessage::text(&["Read the files."])
        } else if steps == 0 {
            (0..FILES).fold(ScriptedMessage::text(&[]), |m, i| {
                m.with_call(ScriptedCall {
                    id: format!("c{i}"),
                    name: "read_file".into(),
                    arguments: format!(r#"{{"path":"f{i}.txt"}}"#),
                    fragments: 1,
                })
            })
        } else {
            ScriptedMessage::text(&["Read what fitted."])
        };
        if !summarising {
            self.requests.lock().unwrap().push(request);
        }
        let events = message.events();
        Box::pin(futures::stream::iter(events.into_iter().map(Ok)))
    }
}

fn files() -> Vec<(String, String)> {
    (0..FILES)
        .map(|i| {
            (
                format!("f{i}.txt"),
                format!("file {i}: {}\n", "lorem ipsum dolor sit amet ".repeat(60)),
            )
        })
        .collect()
}

/// What the model was shown for call `id` in `request`.
fn shown(request: &Request, id: &str) -> String {
    request
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .find_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                ..
            } if tool_use_id == id => Some(format!("{content:?}")),
            _ => None,
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn reads_asked_at_once_beyond_the_window_are_set_aside_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let owned = files();
    let refs: Vec<(&str, &str)> = owned
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let backend = Arc::new(FakeToolBackend::new(&refs).unwrap());
    let model = Arc::new(Greedy::default());
    let profile = Profile {
        max_output_tokens: 1000,
        tools: ToolLoading::Native,
        ..Profile::new("Reader", "greedy").with_system("Read the files.")
    };
    let mut conv = Conversation::open(store.clone(), model.clone(), backend, profile, None)
        .await
        .unwrap();
    let outcome = conv.turn("read every file").await.unwrap();
    assert_eq!(
        outcome,
        TurnOutcome::Finished {
            reply: "Read what fitted.".into()
        }
    );
    let requests = model.requests.lock().unwrap().clone();
    let [_, second] = requests.as_slice() else {
        panic!("{} requests", requests.len())
    };
    assert!(
        estimate(second) <= u64::from(WINDOW) * 6 / 10,
        "the request reached the 60% target: {} tokens",
        estimate(second)
    );
    // The oldest results are shown whole; the newest leave the view with
    // their calls (each shown call must be answered), named in a note on
    // the step's first result so the model can make them again.
    let first = shown(second, "c0");
    assert!(first.contains("file 0: lorem"), "{first}");
    let last = format!("c{}", FILES - 1);
    assert_eq!(shown(second, &last), "", "the last result is out of view");
    let called: Vec<&str> = second
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert!(!called.contains(&last.as_str()), "{called:?}");
    assert!(
        first.contains("set aside") && first.contains(&format!("f{}.txt", FILES - 1)),
        "the note names the call: {first}"
    );
    let log = store.read(conv.session_id(), 1, 10_000).await.unwrap();
    let set_aside = log
        .iter()
        .find_map(|e| match &e.event {
            Event::CompactionCreated { summary, .. } => match &**summary {
                rein_sessions::Compaction::Prune(prune) if prune.at_once => {
                    Some(serde_json::to_value(prune).unwrap())
                }
                _ => None,
            },
            _ => None,
        })
        .expect("the setting aside is on the record");
    assert_eq!(set_aside["trigger"], "over_target");
    let calls = set_aside["calls"].as_array().unwrap();
    assert!(
        !calls.is_empty() && calls.len() < FILES,
        "only as many as needed: {}",
        calls.len()
    );
}
