//! A thousand and more event-stream clients at once against the server's
//! default bounds: exactly as many streams as the bound allows are served,
//! every other client is answered with a coded refusal once a connection
//! place is free — never an error of another kind, a crash or a hang — and
//! once the crowd leaves, a request is served again. `bounds.rs` holds each
//! bound alone with small limits; this is the crowd at the bounds a product
//! gets.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::time::Duration;

use crate::common::{Running, start};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Clients in the crowd: past the default connection bound (1,024) and
/// twice the requests served at once (512); the kernel's backlog holds the
/// rest while they wait.
const CROWD: usize = 1100;

/// A client asking for `path`; `None` when the connection itself was
/// refused.
async fn ask(server: &Running, path: &str) -> Option<tokio::net::TcpStream> {
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.ok()?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n",
        server.addr, server.bearer
    );
    stream.write_all(request.as_bytes()).await.ok()?;
    Some(stream)
}

/// How a client was answered within `wait`: its status and the head and
/// first bytes of its body, or `None` while it waits.
async fn answer(stream: &mut tokio::net::TcpStream, wait: Duration) -> Option<(u16, String)> {
    let mut buf = vec![0u8; 2048];
    let n = tokio::time::timeout(wait, stream.read(&mut buf))
        .await
        .ok()?
        .unwrap_or(0);
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, text))
}

/// Room for the crowd's descriptors: both ends of every connection live in
/// this process. The soft limit is raised to what the crowd needs (a fresh
/// machine's is often 1,024); a hard limit below that fails, saying so.
fn room_for_the_crowd() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let needed = 4 * CROWD as u64;
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    assert!(
        hard >= needed,
        "open files are capped at {hard} here; the crowd needs {needed}"
    );
    if soft < needed {
        setrlimit(Resource::RLIMIT_NOFILE, needed, hard).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowd_of_event_streams_is_held_to_the_bounds_and_the_server_recovers() {
    room_for_the_crowd();
    let server = start().await;
    let limits = rein_server::Limits::default();
    let mut ids = Vec::new();
    for _ in 0..CROWD / 32 {
        ids.push(server.store.create_session(json!({})).await.unwrap().id);
    }
    // Every client at once, each holding its connection until the end.
    let running = std::sync::Arc::new(server);
    let mut crowd = tokio::task::JoinSet::new();
    for n in 0..CROWD {
        let path = format!("/api/conversations/{}/events", ids[n % ids.len()]);
        let server = running.clone();
        crowd.spawn(async move {
            let Some(mut stream) = ask(&server, &path).await else {
                return Err("the connection failed");
            };
            let got = answer(&mut stream, Duration::from_secs(60)).await;
            Ok((stream, got))
        });
    }
    let mut clients = Vec::new();
    let (mut streaming, mut refused, mut unanswered) = (0, 0, 0);
    let mut other = Vec::new();
    while let Some(joined) = crowd.join_next().await {
        match joined.unwrap() {
            Ok((stream, Some((200, _)))) => {
                streaming += 1;
                clients.push(stream);
            }
            Ok((stream, Some((503, text)))) if text.contains("too_many_clients") => {
                refused += 1;
                clients.push(stream);
            }
            Ok((_, Some((status, text)))) => other.push(format!("{status}: {text}")),
            Ok((_, None)) => unanswered += 1,
            Err(why) => other.push(why.to_owned()),
        }
    }
    let server = running;
    eprintln!("{CROWD} clients: {streaming} streaming, {refused} refused, {unanswered} unanswered");
    assert!(other.is_empty(), "answers of another kind: {other:?}");
    assert_eq!(unanswered, 0, "every client was answered");
    assert_eq!(
        streaming, limits.requests,
        "streams served at once: the bound, no more"
    );
    assert_eq!(refused, CROWD - limits.requests);
    drop(clients);
    // The crowd gone, the server serves again.
    let mut served = 0;
    for _ in 0..250 {
        let (status, _) = server.json(server.get("/api/conversations")).await;
        served = status;
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(served, 200, "served once the crowd left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_conversation_takes_no_more_watchers_than_its_bound() {
    let server = start().await;
    let bound = rein_server::Limits::default().watchers_per_conversation;
    let id = server.store.create_session(json!({})).await.unwrap().id;
    let path = format!("/api/conversations/{id}/events");
    let mut clients = Vec::new();
    for _ in 0..bound + 16 {
        clients.push(ask(&server, &path).await.unwrap());
    }
    let mut watching = 0;
    let mut refused = 0;
    for client in &mut clients {
        match answer(client, Duration::from_secs(5)).await {
            Some((200, _)) => watching += 1,
            Some((503, text)) if text.contains("too_many_clients") => refused += 1,
            got => panic!("an answer of another kind: {got:?}"),
        }
    }
    assert_eq!((watching, refused), (bound, 16));
    // Another conversation is not crowded out.
    let other = server.store.create_session(json!({})).await.unwrap().id;
    let mut fresh = ask(&server, &format!("/api/conversations/{other}/events"))
        .await
        .unwrap();
    let got = answer(&mut fresh, Duration::from_secs(5)).await;
    assert_eq!(got.map(|g| g.0), Some(200));
}
