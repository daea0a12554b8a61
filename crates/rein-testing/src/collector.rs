//! An OTLP collector stand-in on loopback: it answers every HTTP request
//! `200 OK` and keeps each request's body, for a test to look for the spans
//! it expects (protobuf keeps names as plain UTF-8) and for what must not
//! be there.
//!
//! Not here: decoding OTLP.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The bodies a collector got, in order.
pub type Bodies = Arc<Mutex<Vec<Vec<u8>>>>;

/// Start a collector: its traces endpoint
/// (`http://127.0.0.1:PORT/v1/traces`) and what it gets.
///
/// # Panics
///
/// When no loopback port can be bound (a test machine without loopback).
pub async fn otlp_collector() -> (String, Bodies) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    let bodies: Bodies = Arc::default();
    let kept = bodies.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(serve(socket, kept.clone()));
        }
    });
    (format!("http://{addr}/v1/traces"), bodies)
}

async fn serve(mut socket: tokio::net::TcpStream, kept: Bodies) {
    let mut data = Vec::new();
    let mut buf = [0u8; 16384];
    while let Ok(n) = socket.read(&mut buf).await {
        if n == 0 {
            return;
        }
        data.extend_from_slice(&buf[..n]);
        let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&data[..end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| {
                l.strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap_or(0))
            })
            .unwrap_or(0);
        if data.len() >= end + 4 + length {
            if let Ok(mut bodies) = kept.lock() {
                bodies.push(data[end + 4..end + 4 + length].to_vec());
            }
            let _ = socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                .await;
            data.clear();
        }
    }
}
