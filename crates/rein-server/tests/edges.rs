//! The HTTP surface's edges, probed as a careless script or a hostile local
//! client would: every error is problem+json with a stable code, the
//! bearer scheme is case-insensitive, a resume point is checked, two
//! servers keep their own cookies, and the inbox is bounded.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::time::Duration;

use crate::common::{UiStream, code, start};
use serde_json::json;

async fn problem(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        kind.starts_with("application/problem+json"),
        "{status}: {kind}"
    );
    let body: serde_json::Value = response.json().await.unwrap();
    (status, code(&body).to_owned())
}

#[tokio::test]
async fn every_error_is_problem_json_with_a_stable_code() {
    let server = start().await;
    let id = server.new_conversation().await;
    let raw = reqwest::Client::new();
    for (what, request, expected) in [
        (
            "no token",
            raw.get(server.url("/api/conversations")),
            (401, "unauthenticated"),
        ),
        (
            "a bad query",
            server.get(&format!("/api/conversations/{id}/events?after=abc")),
            (400, "invalid_input"),
        ),
        (
            "a method the route does not take",
            server
                .http
                .delete(server.url("/api/conversations"))
                .bearer_auth(&server.bearer),
            (405, "method_not_allowed"),
        ),
        (
            "a path that is no UTF-8",
            server.get("/api/conversations/%ff"),
            (404, "session_not_found"),
        ),
        (
            "no such route",
            server.get("/api/nothing"),
            (404, "route_not_found"),
        ),
    ] {
        let answer = request.send().await.unwrap();
        let (status, code) = problem(answer).await;
        if what == "a path that is no UTF-8" {
            assert!(status == 400 || status == 404, "{what}: {status} {code}");
            continue;
        }
        assert_eq!((status, code.as_str()), expected, "{what}");
    }
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let server = start().await;
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let answer = server
            .http
            .get(server.url("/api/conversations"))
            .header("authorization", format!("{scheme} {}", server.bearer))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 200, "{scheme}");
    }
}

#[tokio::test]
async fn a_resume_point_is_checked_and_never_wraps() {
    let server = start().await;
    let id = server.new_conversation().await;
    let events = format!("/api/conversations/{id}/events");
    let garbage = server
        .get(&events)
        .header("last-event-id", "abc")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(garbage).await, (400, "invalid_input".to_owned()));
    // Past the head (u64::MAX included): the stream goes on from the head
    // and sends what comes next.
    for last in ["999999", &u64::MAX.to_string()] {
        let mut stream = server
            .get(&events)
            .header("last-event-id", last)
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status().as_u16(), 200);
        let (status, _) = server
            .json(server.post(
                &format!("/api/conversations/{id}/turns"),
                json!({"text": "hello"}),
            ))
            .await;
        assert_eq!(status, 202);
        let got = tokio::time::timeout(Duration::from_secs(30), async {
            let mut seen = String::new();
            while let Ok(Some(chunk)) = stream.chunk().await {
                seen.push_str(&String::from_utf8_lossy(&chunk));
                if seen.contains("event: log") {
                    return seen;
                }
            }
            seen
        })
        .await
        .expect("an event after the head");
        assert!(got.contains("event: log"), "{last}: {got}");
        for _ in 0..500 {
            let turns = server.store.turns(&id).await.unwrap();
            if turns.iter().all(|t| t.outcome.is_some()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test]
async fn two_servers_keep_their_own_cookies() {
    let (a, b) = (start().await, start().await);
    let mut names = Vec::new();
    for server in [&a, &b] {
        let answer = server
            .http
            .get(server.url(&format!("/api/login?token={}", server.login)))
            .send()
            .await
            .unwrap();
        let cookie = answer
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .unwrap()
            .to_owned();
        names.push(cookie.split('=').next().unwrap().to_owned());
    }
    assert_ne!(names[0], names[1], "{names:?}");
}

#[tokio::test]
async fn what_waits_for_a_turn_is_bounded() {
    let server = start().await;
    let id = server.new_conversation().await;
    let steer = format!("/api/conversations/{id}/steer");
    let long = "x".repeat(60 * 1024);
    let mut accepted = 0;
    let mut refused = None;
    for _ in 0..300 {
        let (status, body) = server
            .json(server.post(&steer, json!({"text": long})))
            .await;
        if status == 202 {
            accepted += 1;
        } else {
            refused = Some((status, code(&body).to_owned()));
            break;
        }
    }
    assert_eq!(
        refused,
        Some((429, "inbox_full".to_owned())),
        "after {accepted}"
    );
    assert!(accepted < 300);
    // The next turn still runs.
    let (status, _) = server
        .json(server.post(
            &format!("/api/conversations/{id}/turns"),
            json!({"text": "hello"}),
        ))
        .await;
    assert_eq!(status, 202);
    let mut outcome = None;
    for _ in 0..500 {
        let turns = server.store.turns(&id).await.unwrap();
        outcome = turns.last().and_then(|t| t.outcome);
        if outcome.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(outcome.map(|o| o.as_str()), Some("finished"));
}

/// Every turn's end reaches a watcher, however quickly the turn ends: a
/// served turn's last live event is handed on before its place is given
/// back, never cut off with its forwarder.
#[tokio::test]
async fn every_turns_end_reaches_a_watcher() {
    let server = start().await;
    let id = server.new_conversation().await;
    let stream = server
        .get(&format!("/api/conversations/{id}/events"))
        .send()
        .await
        .unwrap();
    let mut ui = UiStream::new(stream);
    for turn in 0..20 {
        let (status, _) = server
            .json(server.post(
                &format!("/api/conversations/{id}/turns"),
                json!({"text": "hello"}),
            ))
            .await;
        assert_eq!(status, 202, "turn {turn}");
        let seen = ui.turn(Duration::from_secs(20)).await;
        assert!(!ui.ended, "turn {turn}: the stream ended: {seen:?}");
        assert!(
            matches!(
                seen.last().map(|e| &e.kind),
                Some(rein_wire::UiKind::TurnFinished { .. })
            ),
            "turn {turn}: {seen:?}"
        );
        server.until_state(&id, "idle").await;
    }
}
