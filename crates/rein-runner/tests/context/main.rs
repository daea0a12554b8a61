//! Context pressure over a long scripted session: soft pruning, repeated
//! hard compaction reaching the 60% target with a tail bounded in tokens
//! (huge groups too), the reasons on the record, and a session that
//! cannot fit.
//!
//! Not here: what one file alone said, carried through compaction
//! (`reads`).

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

mod reads;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rein_gateway::{CachingStyle, Capabilities, EventStream, Provider};
use rein_runner::{Conversation, Profile, ToolLoading, TurnOutcome, estimate};
use rein_sessions::{Event, SqliteStore, Store};
use rein_testing::FakeToolBackend;
use rein_wire::{ContentBlock, Request, Role, StopReason, StreamEvent, Usage};
use serde_json::json;

/// A model that reasons and reads file after file, then answers; and writes
/// summaries when asked to. It records the largest request it was sent and
/// every request whose reasoning is not where it belongs.
struct Worker {
    window: u32,
    steps: usize,
    /// The files read go round this many (`f{step % cycle}.txt`).
    cycle: usize,
    /// From this file on, the same file is read again and again.
    stuck_at: usize,
    next: Mutex<usize>,
    summaries: AtomicUsize,
    largest: AtomicU64,
    misplaced: Mutex<Vec<String>>,
    /// Whether a summary was just written, and the size of each request
    /// that followed one (what a compaction left).
    summarised: std::sync::atomic::AtomicBool,
    after_summary: Mutex<Vec<u64>>,
    /// What each summary request showed the model, as text.
    summary_requests: Mutex<Vec<String>>,
}

impl Worker {
    fn new(window: u32, steps: usize) -> Arc<Worker> {
        Self::cycling(window, steps, usize::MAX)
    }

    /// A worker that reads file after file up to `f{at}.txt`, then that
    /// one over and over, as a small model going round in circles did.
    fn stuck(window: u32, steps: usize, at: usize) -> Arc<Worker> {
        let mut worker = Self::cycling(window, steps, usize::MAX);
        Arc::get_mut(&mut worker).unwrap().stuck_at = at;
        worker
    }

    /// A worker that reads the same `cycle` files over and over.
    fn cycling(window: u32, steps: usize, cycle: usize) -> Arc<Worker> {
        Arc::new(Worker {
            window,
            steps,
            cycle,
            stuck_at: usize::MAX,
            next: Mutex::new(0),
            summaries: AtomicUsize::new(0),
            largest: AtomicU64::new(0),
            misplaced: Mutex::new(Vec::new()),
            summarised: std::sync::atomic::AtomicBool::new(false),
            after_summary: Mutex::new(Vec::new()),
            summary_requests: Mutex::new(Vec::new()),
        })
    }

    /// Whatever compaction and pruning left, each signed thinking block
    /// sits in the message whose call it reasoned about (`sig-c3` with
    /// call `c3`), and the message whose calls are being answered keeps
    /// its own — an API refuses a tool loop whose reasoning went missing.
    fn check_reasoning(&self, request: &Request) {
        let mut misplaced = Vec::new();
        for message in request.messages.iter() {
            let calls: Vec<&str> = message
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
                    _ => None,
                })
                .collect();
            for block in &message.content {
                if let ContentBlock::Thinking { signature, .. } = block {
                    let of = signature
                        .as_deref()
                        .unwrap_or("")
                        .trim_start_matches("sig-");
                    if !calls.contains(&of) {
                        misplaced.push(format!("{signature:?} beside calls {calls:?}"));
                    }
                }
            }
        }
        let last = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant);
        let calls = |m: &rein_wire::Message| {
            m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolUse { .. }))
        };
        if let Some(last) = last
            && calls(last)
            && !matches!(last.content.first(), Some(ContentBlock::Thinking { .. }))
        {
            misplaced.push(format!("the last step lost its reasoning: {last:?}"));
        }
        self.misplaced.lock().unwrap().extend(misplaced);
    }
}

impl Provider for Worker {
    fn name(&self) -> &str {
        "worker"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            caching: CachingStyle::None,
            max_cache_breakpoints: 0,
            context_window: self.window,
            structured_output: false,
            token_counting: false,
        }
    }
    fn stream(&self, request: Request) -> EventStream {
        let mut events = vec![StreamEvent::MessageStart {
            id: None,
            model: "worker".into(),
        }];
        if request
            .system
            .first()
            .is_some_and(|b| b.text.starts_with("Summarise"))
        {
            self.summarised.store(true, Ordering::SeqCst);
            self.summary_requests
                .lock()
                .unwrap()
                .push(serde_json::to_string(&request.messages).unwrap());
            let n = self.summaries.fetch_add(1, Ordering::SeqCst) + 1;
            // The record asked for, honest: it names no file.
            let record = json!({
                "goal": "read the files", "done": [format!("Summary {n}: read files one by one.")],
                "files_changed": [], "checks": [], "facts": [], "next": "read on",
            });
            events.push(StreamEvent::TextDelta {
                text: record.to_string(),
            });
            events.push(StreamEvent::Stop {
                reason: StopReason::EndTurn,
            });
        } else {
            self.largest.fetch_max(estimate(&request), Ordering::SeqCst);
            if self.summarised.swap(false, Ordering::SeqCst) {
                self.after_summary.lock().unwrap().push(estimate(&request));
            }
            self.check_reasoning(&request);
            let mut next = self.next.lock().unwrap();
            let step = *next;
            *next += 1;
            if step < self.steps {
                let file = (step % self.cycle).min(self.stuck_at);
                events.push(StreamEvent::ThinkingDelta {
                    text: format!("f{file}.txt is next."),
                });
                events.push(StreamEvent::ThinkingSignature {
                    signature: format!("sig-c{step}"),
                    id: None,
                });
                events.push(StreamEvent::ToolCallStart {
                    index: 0,
                    id: format!("c{step}"),
                    name: "read_file".into(),
                });
                events.push(StreamEvent::ToolCallDelta {
                    index: 0,
                    fragment: json!({"path": format!("f{file}.txt")}).to_string(),
                });
                events.push(StreamEvent::ToolCallEnd { index: 0 });
                events.push(StreamEvent::Stop {
                    reason: StopReason::ToolUse,
                });
            } else {
                events.push(StreamEvent::TextDelta {
                    text: "All files read.".into(),
                });
                events.push(StreamEvent::Stop {
                    reason: StopReason::EndTurn,
                });
            }
        }
        events.push(StreamEvent::Usage {
            usage: Usage {
                input: 100,
                output: 10,
                ..Usage::default()
            },
        });
        Box::pin(futures::stream::iter(events.into_iter().map(Ok)))
    }
}

fn files(n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| {
            (
                format!("f{i}.txt"),
                format!("file {i}: {}\n", "lorem ipsum dolor sit amet ".repeat(40)),
            )
        })
        .collect()
}

/// A tool backend holding `owned` (path, content) files.
fn backend_of(owned: &[(String, String)]) -> Arc<FakeToolBackend> {
    let refs: Vec<(&str, &str)> = owned
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    Arc::new(FakeToolBackend::new(&refs).unwrap())
}

/// The kind of each of the log's compactions ("prune", "compact"), in order.
fn kinds(log: &[rein_sessions::StoredEvent]) -> Vec<&str> {
    log.iter()
        .filter_map(|e| match &e.event {
            Event::CompactionCreated { summary, .. } => Some(summary.kind()),
            _ => None,
        })
        .collect()
}

/// The summaries of the log's compactions (prunes left out).
fn compacted(log: &[rein_sessions::StoredEvent]) -> Vec<serde_json::Value> {
    log.iter()
        .filter_map(|e| match &e.event {
            Event::CompactionCreated { summary, .. }
                if matches!(**summary, rein_sessions::Compaction::Compact(_)) =>
            {
                Some(serde_json::to_value(summary).unwrap())
            }
            _ => None,
        })
        .collect()
}

fn profile() -> Profile {
    Profile {
        max_output_tokens: 1000,
        tools: ToolLoading::Native,
        ..Profile::new("Reader", "worker").with_system("Read the files.")
    }
}

#[tokio::test]
async fn a_long_session_prunes_compacts_more_than_once_and_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let owned = files(310);
    let backend = backend_of(&owned);
    let worker = Worker::new(16_000, 3);
    let mut conv = Conversation::open(store.clone(), worker.clone(), backend, profile(), None)
        .await
        .unwrap();
    // A short first turn: nothing to compact yet.
    assert_eq!(
        conv.turn("read three").await.unwrap(),
        TurnOutcome::Finished {
            reply: "All files read.".into()
        }
    );
    let first_turn_end = store.session(conv.session_id()).await.unwrap().head_seq;
    // A long second turn: 300 more reads.
    *worker.next.lock().unwrap() = 0;
    let long = Worker::new(16_000, 300);
    let id = conv.session_id().to_owned();
    conv.close().await.unwrap();
    let owned = files(310);
    let backend = backend_of(&owned);
    let mut conv = Conversation::open(store.clone(), long.clone(), backend, profile(), Some(&id))
        .await
        .unwrap();
    conv.agent.budgets.max_steps = 400;
    let outcome = conv.turn("now read all of them").await.unwrap();
    assert_eq!(
        outcome,
        TurnOutcome::Finished {
            reply: "All files read.".into()
        }
    );

    let log = store.read(&id, 1, 100_000).await.unwrap();
    let kinds = kinds(&log);
    let prunes = kinds.iter().filter(|k| **k == "prune").count();
    let compactions = kinds.iter().filter(|k| **k == "compact").count();
    assert!(prunes >= 1, "{kinds:?}");
    assert!(compactions >= 2, "{kinds:?}");
    assert_eq!(
        long.summaries.load(Ordering::SeqCst),
        compactions,
        "one summary per compaction"
    );
    // Each compaction reached the 60% target.
    let after = long.after_summary.lock().unwrap().clone();
    assert!(
        !after.is_empty() && after.iter().all(|t| *t <= 9_600),
        "{after:?}"
    );
    // However much was pruned and compacted, reasoning stayed with its call.
    assert_eq!(*long.misplaced.lock().unwrap(), Vec::<String>::new());
    // Every request the model saw fit the window.
    assert!(
        long.largest.load(Ordering::SeqCst) <= 16_000,
        "{}",
        long.largest.load(Ordering::SeqCst)
    );
    // The log was never rewritten: every read has its call and its result.
    let results = log
        .iter()
        .filter(|e| matches!(e.event, Event::ToolResult { .. }))
        .count();
    assert_eq!(results, 303);
    // The report counts the compactions.
    let report = rein_trace::report(&id, &log);
    assert_eq!(report.totals.compactions as usize, prunes + compactions);
    // A view from before the long turn still sees the uncompacted history.
    let first_turn: Vec<String> = store
        .turns(&id)
        .await
        .unwrap()
        .into_iter()
        .take(1)
        .map(|t| t.id)
        .collect();
    let early: Vec<_> = log
        .iter()
        .filter(|e| e.seq <= first_turn_end)
        .cloned()
        .collect();
    let later_view = rein_runner::project(&log, &first_turn);
    assert_eq!(later_view, rein_runner::project(&early, &first_turn));
    assert!(
        !serde_json::to_string(&later_view)
            .unwrap()
            .contains("[Earlier conversation")
    );
}

/// A read the model repeats after pruning or compaction took its earlier
/// result out of view is not a loop: the model cannot see what it read.
/// Thirty files read ten times each over 300 steps — each read five or more
/// times in the turn, never twice between two compactions — finishes.
#[tokio::test]
async fn a_read_repeated_after_compaction_hid_its_result_is_not_a_loop() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let owned = files(30);
    let backend = backend_of(&owned);
    let worker = Worker::cycling(16_000, 300, 30);
    let mut conv = Conversation::open(store.clone(), worker.clone(), backend, profile(), None)
        .await
        .unwrap();
    conv.agent.budgets.max_steps = 400;
    let outcome = conv.turn("read them again and again").await.unwrap();
    assert_eq!(
        outcome,
        TurnOutcome::Finished {
            reply: "All files read.".into()
        }
    );
    let log = store.read(conv.session_id(), 1, 100_000).await.unwrap();
    let reads = log
        .iter()
        .filter(|e| matches!(e.event, Event::ToolResult { .. }))
        .count();
    assert_eq!(reads, 300, "every file was read ten times");
}

#[tokio::test]
async fn a_session_that_cannot_fit_ends_with_context_window_exceeded_after_one_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let backend = Arc::new(FakeToolBackend::new(&[("a.txt", "a")]).unwrap());
    // The tools alone are larger than this window.
    let worker = Worker::new(800, 5);
    let mut conv = Conversation::open(store.clone(), worker.clone(), backend, profile(), None)
        .await
        .unwrap();
    let TurnOutcome::Error { error } = conv.turn("read").await.unwrap() else {
        panic!()
    };
    assert_eq!(error.code, rein_wire::error::codes::CONTEXT_WINDOW_EXCEEDED);
    assert_eq!(
        worker.largest.load(Ordering::SeqCst),
        0,
        "nothing too large was sent"
    );
    assert!(worker.summaries.load(Ordering::SeqCst) <= 1);
}

/// Groups so large that the four newest are over the hard line: the tail
/// is bounded in tokens instead (the newest group kept alone if need be),
/// every compaction reaches the 60% target, and the turn finishes. Kept
/// by group count, this session ended `context_window_exceeded`.
#[tokio::test]
async fn a_tail_of_huge_groups_is_bounded_in_tokens_and_reaches_the_target() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let owned: Vec<(String, String)> = (0..10)
        .map(|i| {
            (
                format!("f{i}.txt"),
                format!("file {i}: {}\n", "lorem ipsum dolor sit amet ".repeat(520)),
            )
        })
        .collect();
    let backend = backend_of(&owned);
    let worker = Worker::new(16_000, 8);
    let mut conv = Conversation::open(store.clone(), worker.clone(), backend, profile(), None)
        .await
        .unwrap();
    // Each result whole (about 3,500 tokens), not set aside as an artifact.
    conv.agent.bounds.max_chars = 100_000;
    conv.agent.bounds.max_string = 100_000;
    let outcome = conv.turn("read them").await.unwrap();
    assert_eq!(
        outcome,
        TurnOutcome::Finished {
            reply: "All files read.".into()
        }
    );
    let log = store.read(conv.session_id(), 1, 100_000).await.unwrap();
    let compactions = compacted(&log);
    assert!(!compactions.is_empty());
    for summary in &compactions {
        // Why, on the record: the trigger, the pressure, the policy, the tail.
        assert_eq!(summary["trigger"], "hard_line", "{summary}");
        assert!(summary["pressure"].as_f64().unwrap() > 0.85, "{summary}");
        assert_eq!(summary["policy"]["target"], 0.6, "{summary}");
        let kept = summary["groups_kept"].as_u64().unwrap();
        assert!((1..4).contains(&kept), "{summary}");
        assert!(summary["tail_tokens"].as_u64().unwrap() > 0, "{summary}");
    }
    let after = worker.after_summary.lock().unwrap().clone();
    assert!(after.iter().all(|t| *t <= 9_600), "{after:?}");
    assert!(worker.largest.load(Ordering::SeqCst) <= 16_000);
    // Each model call's record says how full the window was; the calls
    // that compacted say why, and were sent at or under the target.
    let pressures: Vec<rein_sessions::Pressure> = log
        .iter()
        .filter_map(|e| match &e.event {
            Event::ModelRequested { pressure, .. } => pressure.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(pressures.len(), 9, "one per model call");
    assert!(
        pressures
            .iter()
            .all(|p| p.window == 16_000 && p.before > 0.0)
    );
    let compacted: Vec<&rein_sessions::Pressure> = pressures
        .iter()
        .filter(|p| {
            p.acted
                .iter()
                .any(|a| a.action == rein_wire::PressureAction::Compacted)
        })
        .collect();
    assert_eq!(compacted.len(), compactions.len());
    for p in compacted {
        let acted = p.acted.last().unwrap();
        assert_eq!((acted.line, acted.target), (0.85, 0.6), "{p:?}");
        assert!(acted.reason.contains("over the 85% line"), "{p:?}");
        assert!(p.before > 0.85 && p.sent <= 0.6, "{p:?}");
    }
    // The report lists each compaction with its reason.
    let report = rein_trace::report(conv.session_id(), &log);
    let listed: Vec<&rein_trace::CompactionLine> = report
        .compactions
        .iter()
        .filter(|c| c.kind == "compact")
        .collect();
    assert_eq!(listed.len(), compactions.len());
    assert_eq!(listed[0].trigger.as_deref(), Some("hard_line"));
    assert!(
        report.render().contains("compact at seq"),
        "{}",
        report.render()
    );
    assert!(
        report.render().contains("· hard_line at "),
        "{}",
        report.render()
    );
}

#[test]
fn the_tail_rule() {
    use rein_runner::tail_groups;
    // Small groups: as many as the budget holds.
    assert_eq!(tail_groups(&[100; 50], 1_000, 5_000, 4), 10);
    // The four newest are kept whenever the floor holds them.
    assert_eq!(tail_groups(&[900; 10], 1_000, 5_000, 4), 4);
    // One huge newest group is kept alone.
    assert_eq!(tail_groups(&[100, 100, 9_000], 1_000, 5_000, 4), 1);
    // Never nothing.
    assert_eq!(tail_groups(&[50_000], 0, 0, 4), 1);
    assert_eq!(tail_groups(&[], 1_000, 5_000, 4), 0);
}
