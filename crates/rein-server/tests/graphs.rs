//! Task graphs over HTTP: a graph posted runs here, its record is read back
//! task by task, a task's question waits for a person who decides it through
//! its session's approvals, its events stream, and a running graph is
//! cancelled. A bad graph is refused before anything is recorded.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Running, code, read_events, start};

/// Two tasks: `greet` answers, `note` (after it) asks to write a file.
fn greet_then_note() -> Value {
    json!({
        "graph": {"max_parallel": 2},
        "task": [
            {"id": "greet", "brief": "hello"},
            {"id": "note", "brief": "write notes.md", "depends_on": ["greet"], "retries": 0}
        ]
    })
}

/// The graph as the API shows it, once `ready` says so.
async fn until(server: &Running, id: &str, ready: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..1_000 {
        let (status, body) = server.json(server.get(&format!("/api/graphs/{id}"))).await;
        assert_eq!(status, 200, "{body}");
        if ready(&body) {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the graph never got there");
}

fn task<'a>(graph: &'a Value, id: &str) -> &'a Value {
    graph["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posted_graph_runs_its_question_waits_for_a_person_and_its_record_streams() {
    let server = start().await;
    let (status, posted) = server
        .json(server.post("/api/graphs", greet_then_note()))
        .await;
    assert_eq!(status, 201, "{posted}");
    let id = posted["graph"].as_str().unwrap().to_owned();

    // The write waits, shown exactly: the tool, the path, the content.
    let asking = until(&server, &id, |g| {
        task(g, "note")["approvals"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
    })
    .await;
    assert_eq!(asking["running"], true);
    assert_eq!(task(&asking, "greet")["state"], "succeeded");
    let note = task(&asking, "note");
    assert_eq!(note["state"], "running");
    let question = &note["approvals"][0];
    assert_eq!(question["tool"], "write_file");
    assert_eq!(question["arguments"]["path"], "notes.md");
    assert_eq!(question["arguments"]["content"], "x\n");
    assert_eq!(server.backend.invocations("write_file"), 0);

    // A person decides it where any question is decided.
    let session = note["session"].as_str().unwrap();
    let approval = question["approval_id"].as_str().unwrap();
    let (status, decided) = server
        .json(server.post(
            &format!("/api/conversations/{session}/approvals/{approval}"),
            json!({"decision": "yes"}),
        ))
        .await;
    assert_eq!(status, 200, "{decided}");

    let done = until(&server, &id, |g| {
        g["outcome"].is_string() && g["running"] == false
    })
    .await;
    assert_eq!(done["outcome"], "succeeded");
    assert_eq!(task(&done, "note")["state"], "succeeded");
    assert_eq!(
        task(&done, "greet")["outputs"]["answer"],
        "Hello from the server."
    );
    assert_eq!(server.backend.invocations("write_file"), 1);
    let (_, listed) = server.json(server.get("/api/graphs")).await;
    assert_eq!(listed["graphs"][0]["graph"], json!(id), "{listed}");

    // Its record streams as a conversation's does, from the start.
    let stream = server
        .get(&format!("/api/graphs/{id}/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let kinds: Vec<String> = read_events(stream, "graph.finished")
        .await
        .into_iter()
        .map(|(_, kind)| kind)
        .collect();
    for kind in ["graph.created", "task.started", "task.finished"] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} in {kinds:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_graph_is_cancelled_and_its_waiting_write_never_runs() {
    let server = start().await;
    let (_, posted) = server
        .json(server.post("/api/graphs", greet_then_note()))
        .await;
    let id = posted["graph"].as_str().unwrap().to_owned();
    until(&server, &id, |g| {
        task(g, "note")["approvals"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
    })
    .await;
    let (status, body) = server
        .json(server.post(&format!("/api/graphs/{id}/cancel"), json!({})))
        .await;
    assert_eq!(status, 202, "{body}");
    let done = until(&server, &id, |g| {
        g["outcome"].is_string() && g["running"] == false
    })
    .await;
    assert_eq!(done["outcome"], "cancelled");
    assert_ne!(task(&done, "note")["state"], "succeeded");
    assert_eq!(server.backend.invocations("write_file"), 0);
    // Not running any more: nothing to cancel.
    let (status, body) = server
        .json(server.post(&format!("/api/graphs/{id}/cancel"), json!({})))
        .await;
    assert_eq!((status, code(&body)), (409, "conflict"), "{body}");
}

#[tokio::test]
async fn a_bad_graph_is_refused_before_anything_is_recorded_and_a_stranger_posts_none() {
    let server = start().await;
    let before = server.store.list_sessions(100).await.unwrap().len();
    let cycle = json!({"task": [
        {"id": "a", "brief": "hello", "depends_on": ["b"]},
        {"id": "b", "brief": "hello", "depends_on": ["a"]}
    ]});
    let unknown_agent = json!({"task": [{"id": "a", "brief": "hello", "agent": "nobody"}]});
    let not_a_graph = json!({"tasks": "all of them"});
    for (body, expected) in [
        (cycle, "graph_invalid"),
        (unknown_agent, "agent_unknown"),
        (not_a_graph, "graph_invalid"),
    ] {
        let (status, answer) = server.json(server.post("/api/graphs", body)).await;
        assert_eq!(code(&answer), expected, "{answer}");
        assert!(status >= 400, "{status}");
    }
    let stranger = server
        .http
        .post(server.url("/api/graphs"))
        .json(&greet_then_note())
        .send()
        .await
        .unwrap();
    assert_eq!(stranger.status().as_u16(), 401);
    assert_eq!(
        server.store.list_sessions(100).await.unwrap().len(),
        before,
        "nothing was recorded"
    );
    // A conversation is no graph.
    let conversation = server.new_conversation().await;
    let (status, body) = server
        .json(server.get(&format!("/api/graphs/{conversation}")))
        .await;
    assert_eq!((status, code(&body)), (404, "session_not_found"), "{body}");
}
