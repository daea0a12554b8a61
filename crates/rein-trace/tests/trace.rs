//! Reports and golden traces on a real SQLite file.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::time::Duration;

use rein_sessions::{Event, NewEvent, ResultSource, SqliteStore, Store, StoredEvent, ToolStatus};
use rein_trace::{golden, report};
use rein_wire::{ContentBlock, Message, Role, StopReason, Usage};
use serde_json::json;

fn model(
    call: &str,
    usage: Usage,
    cost: Option<u64>,
    verdict: &str,
    tool_call: Option<&str>,
) -> NewEvent {
    let mut content = vec![ContentBlock::text("thinking out loud")];
    if let Some(id) = tool_call {
        content.push(ContentBlock::ToolUse {
            id: id.into(),
            name: "read_file".into(),
            input: json!({"path": "a.rs"}),
        });
    }
    NewEvent::main(Event::ModelCompleted {
        call_id: call.into(),
        model: "claude-sonnet-4-5".into(),
        message: Message {
            role: Role::Assistant,
            content,
        },
        usage: Some(usage),
        cost_micro_usd: cost,
        reasoning_cost_micro_usd: None,
        stop_reason: Some(if tool_call.is_some() {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        }),
        cache_verdict: rein_wire::CacheVerdict::named(verdict),
        latency_ms: 250,
        repaired: Vec::new(),
    })
}

fn tool(call: &str, status: ToolStatus, source: ResultSource) -> Vec<NewEvent> {
    vec![
        NewEvent::main(Event::ToolCalled {
            call_id: call.into(),
            tool: "read_file".into(),
            arguments: json!({"path": "a.rs"}),
            permission: Some(rein_wire::permission::PermissionClass::Read),
        }),
        NewEvent::main(Event::ToolResult {
            call_id: call.into(),
            status,
            source,
            content: json!({"text": "fn main() {}"}),
            artifact: None,
            operation_id: None,
            undo: false,
            duration_ms: 7,
            seen: None,
        }),
    ]
}

/// A session with two runs, a branch, tool calls of every kind and an
/// event kind from the future.
#[expect(clippy::too_many_lines, reason = "one log with every event kind")]
async fn build(store: &dyn Store) -> String {
    let s = store
        .create_session(json!({"title": "golden", "owner_id": "u-42"}))
        .await
        .unwrap();
    let lease = store
        .acquire(&s.id, "test", Duration::from_secs(60))
        .await
        .unwrap();
    let u = |input, output, cache_read, cache_write| Usage {
        input,
        output,
        cache_read,
        cache_write,
        reasoning: 0,
    };
    let mut events = vec![
        NewEvent::main(Event::TurnStarted {
            turn_id: "t-1".into(),
            parent: None,
            prompt: "read a.rs".into(),
        }),
        NewEvent::main(Event::RunStarted {
            run_id: "r-1".into(),
            turn_id: "t-1".into(),
            budgets: json!({"steps": 100}),
            profile: json!({}),
        }),
        NewEvent::main(Event::ModelRequested {
            call_id: "m-1".into(),
            prefix_fingerprint: "00112233aabbccdd".into(),
            request_digest: "x".into(),
            estimated_tokens: 900,
            pressure: None,
        }),
        model(
            "m-1",
            u(100, 20, 0, 800),
            Some(3_500),
            "cold",
            Some("toolu_1"),
        ),
    ];
    events.extend(tool("toolu_1", ToolStatus::Ok, ResultSource::Live));
    events.push(model("m-2", u(50, 30, 800, 0), Some(900), "hit", None));
    events.push(NewEvent::main(Event::TurnFinished {
        turn_id: "t-1".into(),
        outcome: rein_wire::Ending::Finished,
        reply: Some("done".into()),
    }));
    events.push(NewEvent::main(Event::RunFinished {
        run_id: "r-1".into(),
        outcome: rein_wire::Ending::Finished,
        totals: json!({}),
    }));
    store.append(&lease, events).await.unwrap();

    let mut second = vec![
        NewEvent::main(Event::BranchCreated {
            from_turn: Some("t-1".into()),
        }),
        NewEvent::main(Event::TurnStarted {
            turn_id: "t-2".into(),
            parent: Some("t-1".into()),
            prompt: "again".into(),
        }),
        NewEvent::main(Event::RunStarted {
            run_id: "r-2".into(),
            turn_id: "t-2".into(),
            budgets: json!({}),
            profile: json!({}),
        }),
        model("m-3", u(60, 10, 800, 0), None, "miss", Some("toolu_2")),
    ];
    second.extend(tool("toolu_2", ToolStatus::Ok, ResultSource::Cache));
    second.extend(tool("toolu_3", ToolStatus::Error, ResultSource::Live));
    second.extend(tool("toolu_4", ToolStatus::Ok, ResultSource::Offload));
    second.extend(tool(
        "toolu_5",
        ToolStatus::Error,
        ResultSource::Interrupted,
    ));
    second.push(NewEvent {
        agent_path: "main/helper".into(),
        event: Event::AgentStarted {
            agent_path: "main/helper".into(),
            task: "look".into(),
            call_id: None,
            session: None,
        },
    });
    second.push(NewEvent::main(Event::Unknown {
        kind: "future.kind".into(),
        version: 7,
        data: json!({"call_id": "toolu_2", "x": 1}),
    }));
    second.push(NewEvent::main(Event::CompactionCreated {
        from_seq: 2,
        to_seq: 9,
        summary: Box::new(json!({"files": ["a.rs"]}).into()),
        target_tokens: 1000,
    }));
    store.append(&lease, second).await.unwrap();
    store.release(&lease).await.unwrap();
    s.id
}

#[tokio::test]
async fn the_report_counts_tokens_cost_cache_and_tools_per_session_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("rein.db")).await.unwrap();
    let id = build(&store).await;
    let events = store.read(&id, 1, 10_000).await.unwrap();
    let r = report(&id, &events);
    assert_eq!(r.turns, 2);
    assert_eq!(r.runs.len(), 2);
    let t = &r.totals;
    assert_eq!(t.model_calls, 3);
    assert_eq!(
        (
            t.usage.input,
            t.usage.output,
            t.usage.cache_read,
            t.usage.cache_write
        ),
        (210, 60, 1600, 800)
    );
    assert_eq!(t.cost_micro_usd, 4_400);
    assert_eq!(t.calls_without_cost, 1);
    assert_eq!(
        t.cache_verdicts.get(&rein_wire::CacheVerdict::Cold),
        Some(&1)
    );
    assert_eq!(
        t.cache_verdicts.get(&rein_wire::CacheVerdict::Hit),
        Some(&1)
    );
    assert_eq!(
        t.cache_verdicts.get(&rein_wire::CacheVerdict::Miss),
        Some(&1)
    );
    assert!((t.cache_read_share - 1600.0 / 2610.0).abs() < 1e-9);
    assert_eq!((t.tools.total, t.tools.ok, t.tools.error), (5, 3, 2));
    assert_eq!(
        (t.tools.cached, t.tools.offloaded, t.tools.interrupted),
        (1, 1, 1)
    );
    assert_eq!(t.model_ms, 750);
    assert_eq!(t.tool_ms, 35);
    assert_eq!(t.compactions, 1);
    assert_eq!(r.runs[0].outcome.map(|o| o.as_str()), Some("finished"));
    assert_eq!(r.runs[0].totals.model_calls, 2);
    assert_eq!(r.runs[0].totals.cost_micro_usd, 4_400);
    assert_eq!(r.runs[1].outcome, None);
    assert_eq!(r.runs[1].totals.tools.total, 4);
    let text = r.render();
    assert!(text.contains("cache read 1600"), "{text}");
    assert!(
        text.contains("cold 1, hit 1, miss 1 · read share 61.3%"),
        "{text}"
    );
    assert!(
        text.contains("$0.004400 + 1 calls of unknown cost"),
        "{text}"
    );
    assert!(text.contains("unfinished"));
}

#[tokio::test]
async fn export_import_export_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("rein.db")).await.unwrap();
    let id = build(&store).await;
    let first = golden::export(&store.read(&id, 1, 10_000).await.unwrap()).unwrap();
    // Volatile values are tokens; references stay linked.
    assert!(!first.contains(&id));
    assert!(!first.contains("toolu_1"));
    assert!(first.contains("\"<duration>\""));
    assert!(!first.contains("at_ms"));
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines[0], r#"{"format":"rein-golden","version":1}"#);
    assert!(
        lines.iter().any(|l| l.contains("\"future.kind\"")),
        "unknown kinds are exported"
    );

    // Import into another store (a fresh file), export again.
    let other = SqliteStore::open(dir.path().join("other.db"))
        .await
        .unwrap();
    let imported = golden::import(&other, &first).await.unwrap();
    assert_ne!(imported, id);
    let second = golden::export(&other.read(&imported, 1, 10_000).await.unwrap()).unwrap();
    assert_eq!(first, second);
    // The imported tree has the same shape.
    let turns = other.turns(&imported).await.unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[1].parent.as_deref(), Some(turns[0].id.as_str()));
}

#[test]
fn a_broken_golden_trace_is_refused_with_a_code() {
    let good = "{\"format\":\"rein-golden\",\"version\":1}\n{\"agent\":\"main\",\"data\":{\"metadata\":null},\"kind\":\"session.created\",\"seq\":1,\"version\":1}\n";
    assert!(golden::parse(good).is_ok());
    for bad in [
        "",
        "{\"format\":\"other\"}\n",
        "{\"format\":\"rein-golden\",\"version\":1}\n{\"seq\":1, \"agent\":\"main\"}\n",
        "{\"format\":\"rein-golden\",\"version\":1}\n{\"agent\":\"main\",\"data\":{},\"kind\":\"session.created\",\"seq\":2,\"version\":1}\n",
        "{\"format\":\"rein-golden\",\"version\":1}\n{\"agent\":\"main\",\"data\":{},\"kind\":\"steer.said\",\"seq\":1,\"version\":1}\n",
        "{\"format\":\"rein-golden\",\"version\":1}\nnot json\n",
    ] {
        let err = golden::parse(bad).unwrap_err();
        assert_eq!(
            err.code,
            rein_wire::error::codes::GOLDEN_TRACE_INVALID,
            "{bad:?}"
        );
    }
}

/// A log written before compactions recorded their reasons, and before
/// model calls recorded their pressure, still reads: the report lists the
/// compaction without the reason it does not have.
#[test]
fn older_compaction_and_request_records_still_read() {
    let lines = [
        r#"{"kind":"model.requested","version":1,"data":{"call_id":"m1","prefix_fingerprint":"00","request_digest":"d","estimated_tokens":5}}"#,
        r#"{"kind":"compaction.created","version":1,"data":{"from_seq":1,"to_seq":2,"summary":{"kind":"compact","groups_covered":5,"groups_kept":4},"target_tokens":3000}}"#,
    ];
    let events: Vec<StoredEvent> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let event: Event = serde_json::from_value(json!({
                "kind": value["kind"], "data": value["data"]
            }))
            .unwrap();
            StoredEvent {
                session_id: "s".into(),
                seq: i as u64 + 1,
                at_ms: 0,
                agent_path: "main".into(),
                event,
            }
        })
        .collect();
    assert!(matches!(
        &events[0].event,
        Event::ModelRequested { pressure: None, .. }
    ));
    let report = report("s", &events);
    assert_eq!(report.compactions.len(), 1);
    let line = &report.compactions[0];
    assert_eq!((line.trigger.clone(), line.pressure), (None, None));
    assert_eq!(line.groups, Some((5, 4)));
    assert!(
        report
            .render()
            .contains("compact at seq 2 · target 3000 tokens · 5 groups summarised, 4 kept"),
        "{}",
        report.render()
    );
}
