//! Replays against `rein serve`, as a hostile client would send them: the
//! one-time login link raced by many requests at once, one approval
//! decided by many racing requests (a "yes" and a "no" among them), a
//! turn posted many times at once, and one server's secrets sent to
//! another (a server started again makes new ones). Each must take effect
//! once or not at all.

use crate::common::{code, start};
use serde_json::json;

/// Send `count` copies of a request at once; each one's status and body.
async fn raced(
    count: usize,
    request: impl Fn(usize) -> reqwest::RequestBuilder,
) -> Vec<(u16, serde_json::Value)> {
    let sent: Vec<_> = (0..count)
        .map(|i| {
            let request = request(i);
            tokio::spawn(async move {
                let response = request.send().await.expect("answered");
                let status = response.status().as_u16();
                (status, response.json().await.unwrap_or_default())
            })
        })
        .collect();
    let mut answers = Vec::with_capacity(count);
    for answer in sent {
        answers.push(answer.await.expect("the request task"));
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_login_link_raced_logs_in_once() {
    let server = start().await;
    let login = server.url(&format!("/api/login?token={}", server.login));
    let answers = raced(32, |_| server.http.get(&login)).await;
    let logged_in = answers.iter().filter(|(status, _)| *status == 303).count();
    let refused = answers
        .iter()
        .filter(|(status, body)| *status == 401 && code(body) == "unauthenticated")
        .count();
    assert_eq!((logged_in, refused), (1, 31), "{answers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_approval_raced_by_yes_and_no_is_decided_once() {
    let server = start().await;
    let id = server.new_conversation().await;
    let (status, body) = server
        .json(server.post(
            &format!("/api/conversations/{id}/turns"),
            json!({"text": "write notes.md"}),
        ))
        .await;
    assert_eq!(status, 202, "{body}");
    let approvals = server.approvals(&id).await;
    let approval = approvals[0]["approval_id"].as_str().expect("its id");
    let path = format!("/api/conversations/{id}/approvals/{approval}");
    // Alternate yes and no, each several times, all at once.
    let answers = raced(24, |i| {
        let decision = if i.is_multiple_of(2) { "yes" } else { "no" };
        server.post(&path, json!({"decision": decision}))
    })
    .await;
    let decided: Vec<usize> = answers
        .iter()
        .enumerate()
        .filter(|(_, (status, _))| *status == 200)
        .map(|(i, _)| i)
        .collect();
    let conflicts = answers
        .iter()
        .filter(|(status, body)| *status == 409 && code(body) == "conflict")
        .count();
    assert_eq!((decided.len(), conflicts), (1, 23), "{answers:?}");
    server.until_state(&id, "idle").await;
    let log = server.store.read(&id, 1, 1000).await.expect("the log");
    let recorded: Vec<bool> = log
        .iter()
        .filter_map(|e| match &e.event {
            rein_sessions::Event::ApprovalDecided { decision, .. } => {
                Some(*decision == rein_wire::permission::Decision::Approved)
            }
            _ => None,
        })
        .collect();
    let allowed = decided[0].is_multiple_of(2);
    assert_eq!(
        recorded,
        vec![allowed],
        "the one decision that answered 200"
    );
    assert_eq!(
        server.backend.invocations("write_file"),
        u64::from(allowed),
        "the write runs only if the one decision was yes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_posted_many_times_at_once_runs_once() {
    let server = start().await;
    let id = server.new_conversation().await;
    let turns = format!("/api/conversations/{id}/turns");
    // A turn that stays open (it waits for a person), so every copy that
    // did not start it finds it there.
    let answers = raced(16, |_| {
        server.post(&turns, json!({"text": "write notes.md"}))
    })
    .await;
    let accepted = answers.iter().filter(|(status, _)| *status == 202).count();
    let refused = answers
        .iter()
        .filter(|(status, body)| *status == 409 && code(body) == "turn_running")
        .count();
    assert_eq!((accepted, refused), (1, 15), "{answers:?}");
    server.approvals(&id).await;
    let log = server.store.read(&id, 1, 1000).await.expect("the log");
    let count = |kind: &str| log.iter().filter(|e| e.event.kind() == kind).count();
    assert_eq!((count("turn.started"), count("approval.requested")), (1, 1));
}

#[tokio::test]
async fn one_servers_secrets_open_nothing_on_another() {
    let first = start().await;
    let second = start().await;
    // The first server's cookie, got through its login link.
    let response = first
        .http
        .get(first.url(&format!("/api/login?token={}", first.login)))
        .send()
        .await
        .expect("login");
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .expect("a cookie")
        .split(';')
        .next()
        .expect("its pair")
        .to_owned();
    let value = cookie.split_once('=').expect("name=value").1.to_owned();
    let list = second.url("/api/conversations");
    // Under the second server's own cookie name, as a client would resend it.
    let renamed = format!("rein_session_{}={value}", second.addr.port());
    for request in [
        second.http.get(&list).bearer_auth(&first.bearer),
        second.http.get(&list).header("cookie", &renamed),
        second
            .http
            .get(second.url(&format!("/api/login?token={}", first.login))),
    ] {
        let (status, body) = second.json(request).await;
        assert_eq!((status, code(&body)), (401, "unauthenticated"), "{body}");
    }
    // The first server's own still work there.
    let (status, _) = first
        .json(
            first
                .http
                .get(first.url("/api/conversations"))
                .header("cookie", &cookie),
        )
        .await;
    assert_eq!(status, 200);
}
