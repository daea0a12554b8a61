//! The ACP reducer on synthetic messages, and the JSON-RPC framing's bounds.

#![allow(clippy::unwrap_used, reason = "tests")]

use rein_host::acp_stream::AcpStream;
use rein_host::jsonrpc::{self, Incoming};
use rein_host::{Outcome, Reducer, Step};
use serde_json::{Value, json};

fn update(u: Value) -> Value {
    json!({"method": "session/update", "params": {"sessionId": "s", "update": u}})
}

fn run(messages: &[Value]) -> (AcpStream, Vec<Step>) {
    let mut r = AcpStream::new("/work/p");
    let mut steps = Vec::new();
    for m in messages {
        r.feed(m.to_string().as_bytes());
        let got = r.drain();
        assert!(
            got.iter().any(|s| matches!(s, Step::Progress(_))) || r.outcome().failure.is_some(),
            "no progress for {m}"
        );
        steps.extend(got);
    }
    r.stream_ended();
    steps.extend(r.drain());
    (r, steps)
}

#[test]
fn an_answer_its_tools_and_nothing_secret() {
    let secret = "sk-ant-api03-ACPSECRET99";
    let (r, steps) = run(&[
        update(
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": secret}}),
        ),
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": format!("curl -H {secret}"), "kind": "execute", "status": "in_progress", "rawInput": {"command": secret}}),
        ),
        update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed", "rawOutput": secret}),
        ),
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "Edit", "kind": "edit", "status": "pending", "locations": [{"path": "/work/p/src/a.rs"}]}),
        ),
        update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c2", "status": "failed"}),
        ),
        update(
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done "}}),
        ),
        update(
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "now."}}),
        ),
        update(json!({"sessionUpdate": "hologram"})),
        json!({"result": {"stopReason": "end_turn"}}),
    ]);
    assert_eq!(r.outcome().text.as_deref(), Some("Done now."));
    let progress = format!("{steps:?} {}", r.summary());
    assert!(!progress.contains(secret), "{progress}");
    assert!(progress.contains("src/a.rs"), "{progress}");
    assert_eq!(r.summary()["tool_calls"], 2);
    assert_eq!(r.summary()["tool_errors"], 1);
    assert_eq!(r.summary()["unknown_events"], 1);
    assert!(steps.contains(&Step::ToolDone {
        id: "c1".into(),
        ok: true
    }));
}

#[test]
fn a_turn_ends_well_only_with_end_turn() {
    for (last, want) in [
        (
            json!({"result": {"stopReason": "refusal"}}),
            "acp: the turn ended without an answer (stop reason refusal)",
        ),
        (
            json!({"result": {"stopReason": "cancelled"}}),
            "acp: the turn ended without an answer (stop reason cancelled)",
        ),
        (
            json!({"error": {"message": "boom\u{1b}[2J"}}),
            "acp: the prompt failed: boom^[[2J",
        ),
        (
            json!({"what": 1}),
            "acp: protocol violation: a message is neither a call nor a response",
        ),
    ] {
        let (r, _) = run(&[last]);
        assert_eq!(r.outcome().failure.as_deref(), Some(want));
    }
    let (r, _) = run(&[update(json!({"sessionUpdate": "plan"}))]);
    assert_eq!(
        r.outcome().failure.as_deref(),
        Some("acp: the agent went away before the turn ended")
    );
}

#[test]
fn a_refusal_is_kept_once_per_call() {
    let mut r = AcpStream::new("/work/p");
    let call =
        json!({"toolCallId": "c9", "kind": "delete", "locations": [{"path": "/work/p/.env"}]});
    r.refused(&call);
    r.refused(&call);
    let Outcome {
        refused,
        refused_count,
        ..
    } = r.outcome();
    assert_eq!(refused_count, 1);
    assert_eq!(refused[0].subject, "delete: .env");
}

mod property {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn arbitrary_messages_end_in_exactly_one_outcome(lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..48), 0..16), end in any::<bool>()) {
            let mut r = AcpStream::new("");
            for line in &lines {
                r.feed(line);
            }
            if end {
                r.feed(br#"{"result": {"stopReason": "end_turn"}}"#);
            }
            r.stream_ended();
            let Outcome { text, failure, .. } = r.outcome();
            prop_assert!(text.is_some() != failure.is_some());
        }
    }
}

#[tokio::test]
async fn json_rpc_answers_by_id_and_an_oversize_line_ends_the_connection() {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (their_read, mut their_write) = tokio::io::split(theirs);
    let (our_read, our_write) = tokio::io::split(ours);
    let (peer, mut incoming, reading) = jsonrpc::connect(our_read, our_write, 1024);
    // The other side: answers request 1, sends a notification, then a line past the bound.
    let other = tokio::spawn(async move {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let mut lines = tokio::io::BufReader::new(their_read).lines();
        let request: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(request["method"], "ping");
        let note = json!({"jsonrpc": "2.0", "method": "note", "params": {"n": 1}});
        let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"pong": true}});
        their_write
            .write_all(format!("{note}\n{answer}\n").as_bytes())
            .await
            .unwrap();
        their_write.write_all(&vec![b'x'; 5000]).await.unwrap();
        their_write.write_all(b"\n").await.unwrap();
        their_write
    });
    let answer = peer.request("ping", json!({})).await.unwrap();
    assert_eq!(answer, json!({"pong": true}));
    assert!(
        matches!(incoming.recv().await, Some(Incoming::Notification { method, .. }) if method == "note")
    );
    let _keep = other.await.unwrap();
    assert_eq!(reading.await.unwrap(), "a message longer than 1024 bytes");
    assert!(incoming.recv().await.is_none());
    assert!(
        peer.request("late", json!({})).await.is_err(),
        "no request waits on a closed connection"
    );
}
