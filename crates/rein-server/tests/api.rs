//! The API over real HTTP on loopback, with a real SQLite file and the
//! scripted model: every route, the guards (no token, a wrong one, a
//! foreign Origin, a rebinding Host, the one-time login), bounded bodies,
//! an approval decided through the API, and the event stream resumed
//! after a disconnect with nothing lost or repeated.

use std::sync::Arc;
use std::time::Duration;

use crate::common::{self, UiStream, code, read_events, start};
use rein_runner::Profile;
use rein_server::Server;
use rein_testing::ScriptedBrain;
use serde_json::{Value, json};

#[tokio::test]
async fn the_guards_let_in_only_the_token_or_the_cookie_from_this_origin() {
    let server = start().await;
    let list = server.url("/api/conversations");
    // No credentials, a wrong token.
    let (status, body) = server.json(server.http.get(&list)).await;
    assert_eq!((status, code(&body)), (401, "unauthenticated"));
    let (status, body) = server
        .json(server.http.get(&list).bearer_auth("0".repeat(64)))
        .await;
    assert_eq!((status, code(&body)), (401, "unauthenticated"));
    // A page elsewhere making the browser post here.
    let (status, body) = server
        .json(
            server
                .post("/api/conversations", json!({}))
                .header("origin", "http://evil.example"),
        )
        .await;
    assert_eq!((status, code(&body)), (403, "origin_refused"));
    // A rebound name pointing at loopback.
    let (status, body) = server
        .json(
            server
                .get("/api/conversations")
                .header("host", format!("evil.example:{}", server.addr.port())),
        )
        .await;
    assert_eq!((status, code(&body)), (403, "host_refused"));
    // The one-time login: a cookie, HttpOnly and SameSite=Strict, once.
    let login = server.url(&format!("/api/login?token={}", server.login));
    let response = server.http.get(&login).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 303);
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let (status, body) = server.json(server.http.get(&login)).await;
    assert_eq!(
        (status, code(&body)),
        (401, "unauthenticated"),
        "the token works once"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    let (status, _) = server
        .json(server.http.get(&list).header("cookie", &pair))
        .await;
    assert_eq!(status, 200);
    // With the cookie, a change must carry this server's Origin.
    let create = server.url("/api/conversations");
    let (status, body) = server
        .json(
            server
                .http
                .post(&create)
                .header("cookie", &pair)
                .json(&json!({})),
        )
        .await;
    assert_eq!((status, code(&body)), (403, "origin_refused"));
    let (status, _) = server
        .json(
            server
                .http
                .post(&create)
                .header("cookie", &pair)
                .header("origin", format!("http://{}", server.addr))
                .json(&json!({})),
        )
        .await;
    assert_eq!(status, 201);
    // Unknown routes and bad bodies are problems with codes.
    let (status, body) = server.json(server.get("/api/nothing")).await;
    assert_eq!((status, code(&body)), (404, "route_not_found"));
    let id = server.new_conversation().await;
    let (status, body) = server
        .json(server.post(
            &format!("/api/conversations/{id}/turns"),
            json!({"txt": "hi"}),
        ))
        .await;
    assert_eq!((status, code(&body)), (400, "invalid_input"));
    let big = "x".repeat(100 * 1024);
    let (status, body) = server
        .json(server.post(
            &format!("/api/conversations/{id}/turns"),
            json!({"text": big}),
        ))
        .await;
    assert_eq!((status, code(&body)), (413, "body_too_large"));
    let (status, body) = server
        .json(server.get("/api/conversations/no-such-id"))
        .await;
    assert_eq!((status, code(&body)), (404, "session_not_found"));
}

#[tokio::test]
async fn a_write_waits_for_a_decision_through_the_api_and_the_report_counts_it() {
    let server = start().await;
    let id = server.new_conversation().await;
    let (status, body) = server
        .json(server.post(
            &format!("/api/conversations/{id}/turns"),
            json!({"text": "write notes.md"}),
        ))
        .await;
    assert_eq!(status, 202, "{body}");
    let waiting = server.until_state(&id, "running").await;
    assert_eq!(waiting["state"], "running");
    // The approval is listed with what it changes.
    let approvals = server.approvals(&id).await;
    let asked = &approvals[0];
    assert_eq!(asked["tool"], "write_file");
    assert_eq!(asked["agent_path"], "main");
    assert_eq!(asked["arguments"]["path"], "notes.md", "{asked}");
    assert!(
        asked.get("preview").is_some(),
        "the change's preview, when the tool makes one"
    );
    // A second turn while one is open is refused.
    let (status, body) = server
        .json(server.post(
            &format!("/api/conversations/{id}/turns"),
            json!({"text": "hello"}),
        ))
        .await;
    assert_eq!((status, code(&body)), (409, "turn_running"));
    let approval = asked["approval_id"].as_str().unwrap();
    let path = format!("/api/conversations/{id}/approvals/{approval}");
    let (status, body) = server
        .json(server.post(&path, json!({"decision": "maybe"})))
        .await;
    assert_eq!((status, code(&body)), (400, "invalid_input"));
    let (status, body) = server
        .json(server.post(&path, json!({"decision": "yes"})))
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server
        .json(server.post(&path, json!({"decision": "no"})))
        .await;
    assert_eq!((status, code(&body)), (409, "conflict"));
    server.until_state(&id, "idle").await;
    assert_eq!(server.backend.invocations("write_file"), 1);
    let log = server.store.read(&id, 1, 1000).await.unwrap();
    assert!(log.iter().any(|e| matches!(&e.event,
        rein_sessions::Event::ApprovalDecided { by, .. } if by == "http:token")));
    // The report and the list.
    let (status, report) = server
        .json(server.get(&format!("/api/conversations/{id}/report")))
        .await;
    assert_eq!(status, 200);
    assert_eq!(report["totals"]["model_calls"], 2);
    let (_, listed) = server.json(server.get("/api/conversations")).await;
    let first = &listed["conversations"][0];
    assert_eq!(first["id"], id.as_str());
    assert_eq!(first["title"], "write notes.md");
    assert_eq!(first["model"], "rein-scripted");
    // Branch from the first turn; steer is queued; interrupt needs a
    // running turn, and a stop an open one (it is never kept for the next).
    let turn = report["runs"][0]["turn_id"].as_str().unwrap().to_owned();
    let (status, _) = server
        .json(server.post(
            &format!("/api/conversations/{id}/branch"),
            json!({"turn_id": turn}),
        ))
        .await;
    assert_eq!(status, 200);
    let (status, _) = server
        .json(server.post(
            &format!("/api/conversations/{id}/steer"),
            json!({"text": "be brief"}),
        ))
        .await;
    assert_eq!(status, 202);
    let (status, body) = server
        .json(server.post(&format!("/api/conversations/{id}/interrupt"), json!({})))
        .await;
    assert_eq!((status, code(&body)), (400, "invalid_input"));
    let (status, body) = server
        .json(server.post(&format!("/api/conversations/{id}/stop"), json!({})))
        .await;
    assert_eq!((status, code(&body)), (409, "no_open_turn"), "{body}");
    let (status, body) = server
        .json(server.post(&format!("/api/conversations/{id}/resume"), json!({})))
        .await;
    assert_eq!((status, code(&body)), (400, "invalid_input"), "{body}");
}

#[tokio::test]
async fn a_conversation_forks_after_a_turn_into_a_new_one() {
    let server = start().await;
    let id = server.new_conversation().await;
    for text in ["hello there", "hello again"] {
        let path = format!("/api/conversations/{id}/turns");
        let (status, body) = server.json(server.post(&path, json!({"text": text}))).await;
        assert_eq!(status, 202, "{body}");
        server.until_state(&id, "idle").await;
    }
    let (_, first) = server
        .json(server.get(&format!("/api/conversations/{id}")))
        .await;
    let turn = first["turns"][0]["id"].as_str().unwrap().to_owned();
    let path = format!("/api/conversations/{id}/fork");
    let (status, made) = server
        .json(server.post(&path, json!({"turn_id": turn})))
        .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["forked_from"], json!({"id": id, "turn_id": turn}));
    let copy = made["id"].as_str().unwrap();
    let (status, forked) = server
        .json(server.get(&format!("/api/conversations/{copy}")))
        .await;
    assert_eq!(status, 200, "{forked}");
    assert_eq!(forked["turns"].as_array().unwrap().len(), 1, "{forked}");
    let (_, again) = server
        .json(server.get(&format!("/api/conversations/{id}")))
        .await;
    assert_eq!(
        again["turns"].as_array().unwrap().len(),
        2,
        "the first is untouched"
    );
    // The copy takes a turn of its own.
    let (status, body) = server
        .json(server.post(
            &format!("/api/conversations/{copy}/turns"),
            json!({"text": "hello, fork"}),
        ))
        .await;
    assert_eq!(status, 202, "{body}");
    server.until_state(copy, "idle").await;

    let (status, body) = server
        .json(server.post(&path, json!({"turn_id": "no-such-turn"})))
        .await;
    assert_eq!((status, code(&body)), (404, "turn_not_found"));
    let (status, body) = server.json(server.post(&path, json!({"turn": 1}))).await;
    assert_eq!((status, code(&body)), (400, "invalid_input"));
    let missing = "/api/conversations/no-such-id/fork";
    let (status, body) = server.json(server.post(missing, json!({}))).await;
    assert_eq!((status, code(&body)), (404, "session_not_found"));
}

#[tokio::test]
async fn a_person_undoes_a_change_through_the_api_and_the_model_is_told() {
    let server = start().await;
    let id = server.new_conversation().await;
    let undo = format!("/api/conversations/{id}/undo");
    let (status, body) = server.json(server.post(&undo, json!({}))).await;
    assert_eq!(
        (status, code(&body)),
        (400, "invalid_input"),
        "nothing yet: {body}"
    );
    let turns = format!("/api/conversations/{id}/turns");
    let (status, body) = server
        .json(server.post(&turns, json!({"text": "note color"})))
        .await;
    assert_eq!(status, 202, "{body}");
    server.until_state(&id, "idle").await;
    let notes = || server.backend.project().lock().unwrap().notes.clone();
    assert_eq!(notes().get("color").map(String::as_str), Some("blue"));

    let (status, body) = server
        .json(server.post(&undo, json!({"operation_id": "op-999"})))
        .await;
    assert_eq!(
        (status, code(&body)),
        (400, "invalid_input"),
        "not this conversation's: {body}"
    );
    let (status, body) = server.json(server.post(&undo, json!({}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["undone"], "note color");
    assert!(!notes().contains_key("color"), "the product's own undo ran");
    let log = server.store.read(&id, 1, 1000).await.unwrap();
    assert!(log.iter().any(|e| matches!(&e.event,
        rein_sessions::Event::OperationUndone { by, .. } if by == "http:token")));
    let (status, body) = server.json(server.post(&undo, json!({}))).await;
    assert_eq!(
        (status, code(&body)),
        (400, "invalid_input"),
        "undone once: {body}"
    );
}

#[tokio::test]
async fn an_interrupt_ends_a_turn_that_waits_for_a_person() {
    let server = start().await;
    let id = server.new_conversation().await;
    server
        .json(server.post(
            &format!("/api/conversations/{id}/turns"),
            json!({"text": "write notes.md"}),
        ))
        .await;
    for _ in 0..500 {
        let (_, body) = server
            .json(server.get(&format!("/api/conversations/{id}")))
            .await;
        if body["pending_approvals"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, _) = server
        .json(server.post(&format!("/api/conversations/{id}/interrupt"), json!({})))
        .await;
    assert_eq!(status, 202);
    let done = server.until_state(&id, "idle").await;
    assert_eq!(done["pending_approvals"], 0);
    assert_eq!(server.backend.invocations("write_file"), 0);
}

#[tokio::test]
async fn the_event_stream_resumes_after_a_disconnect_losing_and_repeating_nothing() {
    let server = start().await;
    let id = server.new_conversation().await;
    let events = format!("/api/conversations/{id}/events");
    let first = server.get(&events).send().await.unwrap();
    assert_eq!(first.headers()["content-type"], "text/event-stream");
    server
        .json(server.post(
            &format!("/api/conversations/{id}/turns"),
            json!({"text": "read a.rs"}),
        ))
        .await;
    // Up to the call, then the client goes away.
    let before = read_events(first, "tool.called").await;
    let last = before.last().unwrap().0;
    server.until_state(&id, "idle").await;
    let again = server
        .get(&events)
        .header("last-event-id", last.to_string())
        .send()
        .await
        .unwrap();
    let after = read_events(again, "turn.finished").await;
    let seqs: Vec<u64> = before.iter().chain(&after).map(|(s, _)| *s).collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "every event once, in order");
    let log = server.store.read(&id, 1, 1000).await.unwrap();
    let through = log
        .iter()
        .position(|e| matches!(e.event, rein_sessions::Event::TurnFinished { .. }))
        .unwrap();
    assert_eq!(seqs.len(), through + 1);
}

#[tokio::test]
async fn a_second_server_cannot_drive_a_conversation_the_first_drives() {
    let first = start().await;
    let id = first.new_conversation().await;
    first
        .json(first.post(
            &format!("/api/conversations/{id}/turns"),
            json!({"text": "write notes.md"}),
        ))
        .await;
    first.until_state(&id, "running").await;
    // Another server on the same store.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let other = Server::new(
        first.store.clone(),
        Arc::new(ScriptedBrain::new(Vec::new())),
        first.backend.clone(),
        Profile::new("served", "rein-scripted"),
        addr,
    );
    let bearer = other.secrets().bearer().to_owned();
    tokio::spawn(other.serve(listener));
    let response = first
        .http
        .post(format!("http://{addr}/api/conversations/{id}/resume"))
        .bearer_auth(&bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 423);
    let body: Value = response.json().await.unwrap();
    assert_eq!(code(&body), "session_locked");
}

#[tokio::test]
async fn the_openapi_document_lists_every_route() {
    let server = start().await;
    let (status, doc) = server.json(server.get("/api/openapi.json")).await;
    assert_eq!(status, 200);
    assert_eq!(doc, rein_server::api_doc());
    let mut paths: Vec<String> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| format!("{} {path}", method.to_uppercase()))
        })
        .collect();
    paths.sort();
    let c = "/api/conversations/{id}";
    let mut expected = vec![
        "GET /api/login".to_owned(),
        "GET /api/conversations".to_owned(),
        "POST /api/conversations".to_owned(),
        format!("GET {c}"),
        format!("POST {c}/turns"),
        format!("POST {c}/resume"),
        format!("GET {c}/events"),
        format!("GET {c}/approvals"),
        format!("POST {c}/approvals/{{approval}}"),
        format!("POST {c}/steer"),
        format!("POST {c}/interrupt"),
        format!("POST {c}/stop"),
        format!("POST {c}/branch"),
        format!("POST {c}/fork"),
        format!("POST {c}/undo"),
        format!("POST {c}/compact"),
        format!("GET {c}/report"),
        "GET /api/agents".to_owned(),
        "GET /api/agents/sessions".to_owned(),
        "GET /api/memory".to_owned(),
        "POST /api/memory".to_owned(),
        "DELETE /api/memory/{item}".to_owned(),
        "GET /api/memory/history".to_owned(),
        "GET /api/graphs".to_owned(),
        "POST /api/graphs".to_owned(),
        "GET /api/graphs/{id}".to_owned(),
        "GET /api/graphs/{id}/events".to_owned(),
        "POST /api/graphs/{id}/cancel".to_owned(),
    ];
    expected.sort();
    assert_eq!(paths, expected);
}

#[tokio::test]
async fn several_conversations_wait_at_once_in_one_server() {
    let server = start().await;
    let mut ids = Vec::new();
    for file in ["one.md", "two.md", "three.md"] {
        let id = server.new_conversation().await;
        let (status, _) = server
            .json(server.post(
                &format!("/api/conversations/{id}/turns"),
                json!({"text": format!("write {file}")}),
            ))
            .await;
        assert_eq!(status, 202);
        ids.push(id);
    }
    // All three run side by side, each paused at its own question.
    for id in &ids {
        for _ in 0..500 {
            let (_, body) = server
                .json(server.get(&format!("/api/conversations/{id}")))
                .await;
            if body["pending_approvals"] == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    for id in &ids {
        let (_, body) = server
            .json(server.get(&format!("/api/conversations/{id}/approvals")))
            .await;
        let approval = body["approvals"][0]["approval_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let (status, _) = server
            .json(server.post(
                &format!("/api/conversations/{id}/approvals/{approval}"),
                json!({"decision": "yes"}),
            ))
            .await;
        assert_eq!(status, 200);
    }
    for id in &ids {
        server.until_state(id, "idle").await;
    }
    assert_eq!(server.backend.invocations("write_file"), 3);
}

/// A client reads the live events with the vocabulary crate alone: every
/// `ui` event the stream sends is a `rein_wire::UiEvent`, a failed call's
/// code a typed `ErrorCode`, the agent the conversation's own.
#[tokio::test]
async fn the_live_events_read_back_as_rein_wires_own_type() {
    let server = start().await;
    let id = server.new_conversation().await;
    let stream = server
        .get(&format!("/api/conversations/{id}/events"))
        .send()
        .await
        .unwrap();
    server
        .json(server.post(
            &format!("/api/conversations/{id}/turns"),
            json!({"text": "read nowhere.rs"}),
        ))
        .await;
    let mut ui = UiStream::new(stream);
    let seen = ui.turn(Duration::from_secs(30)).await;
    assert!(!ui.ended, "the stream ended: {seen:?}");
    assert!(seen.iter().all(|e| e.agent.is_main()), "{seen:?}");
    let failed = seen.iter().find_map(|e| match &e.kind {
        rein_wire::UiKind::ToolResult {
            ok: false, error, ..
        } => error.clone(),
        _ => None,
    });
    let (code, message) = failed.unwrap_or_else(|| panic!("no failed call in {seen:?}"));
    assert_eq!(code.as_str(), "not_found", "{message}");
    assert!(
        seen.iter()
            .any(|e| matches!(e.kind, rein_wire::UiKind::ToolCall { .. })),
        "{seen:?}"
    );
    assert!(
        matches!(
            seen.last().map(|e| &e.kind),
            Some(rein_wire::UiKind::TurnFinished { .. })
        ),
        "{seen:?}"
    );
}

#[tokio::test]
async fn the_hosted_sessions_live_are_listed_with_mode_viewers_and_holder() {
    let none = common::start().await;
    let (status, body) = none.json(none.get("/api/agents/sessions")).await;
    assert_eq!(
        (status, body),
        (200, json!({"sessions": []})),
        "told of none"
    );

    let hosted = common::hosted("run-1", "ann#1");
    let server = common::start_shaped(|server| hosted.listed_by(server)).await;
    let (status, body) = server.json(server.get("/api/agents/sessions")).await;
    assert_eq!(status, 200, "{body}");
    let session = &body["sessions"][0];
    assert_eq!(session["session"], "run-1", "{body}");
    assert_eq!(session["mode"], "native-tui");
    assert_eq!(session["holder"], "person");
    assert_eq!(session["viewer"], "ann#1");
    assert_eq!(session["viewers"], json!(["ann#1"]));
    assert!(session["opened_at_ms"].as_i64().unwrap() > 0);

    let (status, _) = server
        .json(server.http.get(server.url("/api/agents/sessions")))
        .await;
    assert_eq!(status, 401, "a stranger is told nothing");

    hosted.end("run-1");
    let (_, body) = server.json(server.get("/api/agents/sessions")).await;
    assert_eq!(body, json!({"sessions": []}), "an ended run is not live");
}

#[tokio::test]
async fn a_log_read_that_fails_is_said_on_the_stream_and_in_the_list() {
    let server = start().await;
    let id = server.new_conversation().await;
    let (status, _) = server
        .json(server.post(
            &format!("/api/conversations/{id}/turns"),
            json!({"text": "hello"}),
        ))
        .await;
    assert_eq!(status, 202);
    server.until_state(&id, "idle").await;
    // The third event's data made a blob: the log cannot be read past it.
    crate::common::spoil_log_row(&server._dir.path().join("rein.db"), &id, 3);
    let response = server
        .get(&format!("/api/conversations/{id}/events"))
        .send()
        .await
        .unwrap();
    let body = tokio::time::timeout(Duration::from_secs(30), response.text())
        .await
        .expect("the stream ended")
        .unwrap();
    assert!(body.contains("event: failed"), "{body}");
    assert!(body.contains("\"code\":\"store_unavailable\""), "{body}");
    // The list still answers, naming it as one that cannot be read.
    let (status, listed) = server.json(server.get("/api/conversations")).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["conversations"][0]["state"], "unreadable");
    assert_eq!(
        listed["conversations"][0]["problem"]["code"],
        "store_unavailable"
    );
    assert!(
        !body.contains("id: 3\n"),
        "nothing past the spoiled event: {body}"
    );
}
