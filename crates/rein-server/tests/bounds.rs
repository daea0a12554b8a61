//! The server's bounds over real HTTP: requests at once (an open event
//! stream holds its place until it closes) and connections held open (past
//! the bound the next waits in the backlog).

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::time::Duration;

use crate::common::{Running, code, start_with};
use serde_json::json;

#[tokio::test]
async fn requests_at_once_are_bounded_and_a_closed_stream_gives_its_place_back() {
    let server = start_with(rein_server::Limits {
        requests: 2,
        ..rein_server::Limits::default()
    })
    .await;
    let id = server.new_conversation().await;
    let events = format!("/api/conversations/{id}/events");
    let first = server.get(&events).send().await.unwrap();
    let second = server.get(&events).send().await.unwrap();
    assert_eq!(first.status().as_u16(), 200);
    assert_eq!(second.status().as_u16(), 200);
    // Both places are held by the open streams.
    let (status, body) = server.json(server.get("/api/conversations")).await;
    assert_eq!((status, code(&body)), (503, "too_many_clients"));
    drop(first);
    let mut answered = 0;
    for _ in 0..200 {
        let (status, _) = server.json(server.get("/api/conversations")).await;
        answered = status;
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(answered, 200, "the closed stream's place came back");
    drop(second);
}

/// A raw connection asking for `path` with the bearer token; closing it
/// is dropping it.
async fn raw_request(server: &Running, path: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n",
        server.addr, server.bearer
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

/// The status line's code, once an answer starts.
async fn status_of(stream: &mut tokio::net::TcpStream) -> u16 {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 64];
    let n = stream.read(&mut buf).await.unwrap();
    let head = String::from_utf8_lossy(&buf[..n]).into_owned();
    head.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn connections_at_once_are_bounded_and_the_next_waits_its_turn() {
    let server = start_with(rein_server::Limits {
        connections: 2,
        ..rein_server::Limits::default()
    })
    .await;
    // Made in the store: no pooled client connection holds a place.
    let id = server.store.create_session(json!({})).await.unwrap().id;
    let events = format!("/api/conversations/{id}/events");
    let mut first = raw_request(&server, &events).await;
    let mut second = raw_request(&server, &events).await;
    assert_eq!(status_of(&mut first).await, 200);
    assert_eq!(status_of(&mut second).await, 200);
    // A third is not served while both are open...
    let mut third = raw_request(&server, "/api/conversations").await;
    let early = tokio::time::timeout(Duration::from_millis(300), status_of(&mut third)).await;
    assert!(early.is_err(), "served beyond the bound");
    // ...and is once one closes.
    drop(first);
    let status = tokio::time::timeout(Duration::from_secs(10), status_of(&mut third))
        .await
        .expect("served once a place was free");
    assert_eq!(status, 200);
    drop(second);
}

/// Sockets opened and left, or a request head sent by halves, do not hold
/// the places for good: each is closed, and a real request is served.
#[tokio::test]
async fn idle_and_half_sent_connections_give_their_places_back() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = start_with(rein_server::Limits {
        connections: 4,
        ..rein_server::Limits::default()
    })
    .await;
    // Bare line ends are no request head: sent every second, they keep
    // the socket no longer than a socket left idle.
    let mut blank = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let blanks = tokio::spawn(async move {
        for _ in 0..40 {
            if blank.write_all(b"\r\n").await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        false
    });
    let mut idle = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut half = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    half.write_all(b"GET /api/conversations HTTP/1.1\r\nHost: ")
        .await
        .unwrap();
    let mut trickle = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let id = server.store.create_session(json!({})).await.unwrap().id;
    // All three places are held; a real request waits...
    let mut real = raw_request(&server, &format!("/api/conversations/{id}")).await;
    // ...while one of them keeps sending a byte at a time, never a whole
    // head; the server closes all three, and the real request is served.
    let trickling = tokio::spawn(async move {
        for _ in 0..40 {
            if trickle.write_all(b"X").await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        false
    });
    let status = tokio::time::timeout(Duration::from_secs(60), status_of(&mut real))
        .await
        .expect("a real request was served once the idle ones were closed");
    assert_eq!(status, 200);
    let mut buf = [0u8; 16];
    for stream in [&mut idle, &mut half] {
        let closed = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf))
            .await
            .expect("closed by the server");
        assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    }
    assert!(
        trickling.await.unwrap(),
        "the trickling socket was never closed"
    );
    assert!(
        blanks.await.unwrap(),
        "the socket of bare line ends was never closed"
    );
}

/// A request on `stream` (kept alive), and its answer's status once the
/// whole answer is read.
async fn kept_alive(server: &Running, stream: &mut tokio::net::TcpStream, path: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n",
        server.addr, server.bearer
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed mid-answer");
        answer.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&answer).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            // A whole body: its length, or the last chunk (the guard
            // streams each answer).
            let length: Option<usize> = text[..end].lines().find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap())
            });
            let whole = match length {
                Some(length) => answer.len() >= end + 4 + length,
                None => text.ends_with("\r\n0\r\n\r\n"),
            };
            if whole {
                return text.split_whitespace().nth(1).unwrap().parse().unwrap();
            }
        }
    }
}

/// Sockets opened without credentials, however many, never keep a caller
/// from a place: past the strangers' bound the oldest is closed (after a
/// second's grace), so a request with the token is served within seconds
/// (not after the strangers' head deadline), and a caller's kept-alive
/// connection is never the one closed.
#[tokio::test]
async fn strangers_never_keep_a_caller_from_a_place() {
    use tokio::io::AsyncReadExt;
    let server = start_with(rein_server::Limits {
        connections: 8,
        strangers: 4,
        ..rein_server::Limits::default()
    })
    .await;
    let id = server.store.create_session(json!({})).await.unwrap().id;
    let path = format!("/api/conversations/{id}");
    let mut caller = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    assert_eq!(kept_alive(&server, &mut caller, &path).await, 200);
    let mut strangers = Vec::new();
    for _ in 0..8 {
        strangers.push(tokio::net::TcpStream::connect(server.addr).await.unwrap());
    }
    let mut real = raw_request(&server, &path).await;
    // Each stranger keeps its place a second at least: the last four
    // wait that out once, the caller once more — never the ten seconds a
    // stranger may take to send its head.
    let status = tokio::time::timeout(Duration::from_secs(6), status_of(&mut real))
        .await
        .expect("a caller was served while strangers held every place");
    assert_eq!(status, 200);
    // The oldest strangers were closed to make room...
    let mut buf = [0u8; 16];
    for stream in &mut strangers[..4] {
        let closed = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .expect("closed by the server");
        assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    }
    // ...and the caller's own connection goes on.
    assert_eq!(kept_alive(&server, &mut caller, &path).await, 200);
}

/// A client refused for too many requests at once is told so and its
/// connection is closed, so its place goes at once to a client that may be
/// served (kept alive, it would hold the place until its idle bound).
#[tokio::test]
async fn a_client_refused_as_too_many_is_disconnected() {
    use tokio::io::AsyncReadExt;
    let server = start_with(rein_server::Limits {
        requests: 1,
        connections: 2,
        ..rein_server::Limits::default()
    })
    .await;
    let id = server.store.create_session(json!({})).await.unwrap().id;
    let mut stream = raw_request(&server, &format!("/api/conversations/{id}/events")).await;
    assert_eq!(status_of(&mut stream).await, 200);
    let mut refused = raw_request(&server, "/api/conversations").await;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), refused.read_to_end(&mut answer))
        .await
        .expect("the refused connection was closed");
    read.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("too_many_clients"), "{answer}");
    assert!(
        answer.to_lowercase().contains("connection: close"),
        "{answer}"
    );
    // Its place is free though the client never closed its end: the next
    // is answered (refused too: the stream still holds the one request).
    let mut next = raw_request(&server, "/api/conversations").await;
    let status = tokio::time::timeout(Duration::from_secs(5), status_of(&mut next))
        .await
        .expect("the refused client's place was given back");
    assert_eq!(status, 503);
    drop((stream, refused));
}
