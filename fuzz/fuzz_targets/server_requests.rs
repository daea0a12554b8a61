//! `rein serve`'s router, given any request a client can send: any method,
//! path, headers (`Last-Event-ID`, `Origin`, `Host`, cookies) and body,
//! with or without the bearer token. Every answer is a status under 500
//! (or 503, a bound reached), and every error is `application/problem+json`.
//!
//! Input: the first byte picks the method and whether the token is sent;
//! then the path on the first line, headers as `name: value` lines, an
//! empty line, and the body.

#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::Body;
use rein_runner::{Profile, ToolLoading};
use rein_server::Server;
use rein_testing::{FakeToolBackend, Rule, ScriptedBrain};
use tower::ServiceExt;

/// Requests served by one server before a fresh one (and a fresh store)
/// replaces it, so that what the requests created does not pile up.
const PER_SERVER: u64 = 500;

struct Served {
    runtime: tokio::runtime::Runtime,
    server: Mutex<(Arc<Server>, axum::Router)>,
    served: AtomicU64,
}

/// A server on a fresh store, and its router (made once: it builds the
/// OpenAPI document).
fn fresh() -> (Arc<Server>, axum::Router) {
    let store = Arc::new(rein_sessions::MemoryStore::new());
    let backend = Arc::new(FakeToolBackend::new(&[("a.rs", "fn alpha() {}")]).expect("files"));
    let brain = Arc::new(ScriptedBrain::new(vec![
        Rule::reply("read ", "Reading.")
            .and_call("read_file", serde_json::json!({}))
            .word_into("path"),
        Rule::reply("hello", "Hello."),
    ]));
    let profile = Profile {
        tools: ToolLoading::Native,
        max_output_tokens: 256,
        ..Profile::new("fuzzed", "rein-scripted")
    };
    let addr = "127.0.0.1:8080".parse().expect("an address");
    let server = Server::new(store, brain, backend, profile, addr);
    let router = server.router();
    (Arc::new(server), router)
}

fn served() -> &'static Served {
    static SERVED: OnceLock<Served> = OnceLock::new();
    SERVED.get_or_init(|| Served {
        runtime: tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime"),
        server: Mutex::new(fresh()),
        served: AtomicU64::new(0),
    })
}

const METHODS: [&str; 6] = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let (head, body) = text.split_once("\n\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let path = lines.next().unwrap_or("/");
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    let served = served();
    if served.served.fetch_add(1, Ordering::Relaxed) % PER_SERVER == PER_SERVER - 1 {
        *served.server.lock().expect("the server") = fresh();
    }
    let (server, router) = served.server.lock().expect("the server").clone();
    let mut request = http::Request::builder()
        .method(METHODS[usize::from(pick) % METHODS.len()])
        .header("host", "127.0.0.1:8080");
    if pick & 0x80 == 0 {
        request = request.header(
            "authorization",
            format!("Bearer {}", server.secrets().bearer()),
        );
    }
    for line in lines {
        if let Some((name, value)) = line.split_once(':')
            && let (Ok(name), Ok(value)) = (
                http::HeaderName::from_bytes(name.trim().as_bytes()),
                http::HeaderValue::from_str(value.trim()),
            )
        {
            request = request.header(name, value);
        }
    }
    let Ok(request) = request.uri(path.as_str()).body(Body::from(body.to_owned())) else {
        return;
    };
    let response = served
        .runtime
        .block_on(router.oneshot(request))
        .expect("the router answers");
    let status = response.status();
    assert!(
        status.as_u16() < 500 || status.as_u16() == 503,
        "{status} for {path}"
    );
    if status.is_client_error() || status.is_server_error() {
        let kind = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        assert!(
            kind.starts_with("application/problem+json"),
            "{status} as {kind:?}"
        );
    }
});
