//! What the API tests share: a server on loopback over a real SQLite file
//! with the scripted model, and a client that speaks to it.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]
#![allow(dead_code, reason = "each test file uses a part")]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rein_runner::{Profile, ToolLoading};
use rein_server::Server;
use rein_sessions::{SqliteStore, Store};
use rein_testing::{FakeToolBackend, Rule, ScriptedBrain};
use serde_json::{Value, json};

pub struct Running {
    pub _dir: tempfile::TempDir,
    pub addr: SocketAddr,
    pub bearer: String,
    pub login: String,
    pub store: Arc<dyn Store>,
    pub backend: Arc<FakeToolBackend>,
    pub http: reqwest::Client,
}

pub async fn start() -> Running {
    start_with(rein_server::Limits::default()).await
}

pub async fn start_with(limits: rein_server::Limits) -> Running {
    start_shaped(|server| server.with_limits(limits)).await
}

/// A server made as `shape` says (its limits, its memory, …).
pub async fn start_shaped(shape: impl FnOnce(Server) -> Server) -> Running {
    // reqwest is built without a default TLS provider; the tests speak
    // plain HTTP on loopback, but the client wants one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("rein.db")).await.unwrap());
    let backend = Arc::new(FakeToolBackend::new(&[("a.rs", "fn alpha() {}")]).unwrap());
    let brain = Arc::new(ScriptedBrain::new(vec![
        Rule::reply("read ", "Reading.")
            .and_call("read_file", json!({}))
            .word_into("path"),
        Rule::reply("write ", "Writing.")
            .and_call("write_file", json!({"content": "x\n"}))
            .word_into("path"),
        Rule::reply("hello", "Hello from the server."),
        Rule::reply("note ", "Noting.")
            .and_call("set_note", json!({"value": "blue"}))
            .word_into("key"),
    ]));
    let profile = Profile {
        tools: ToolLoading::Native,
        max_output_tokens: 256,
        ..Profile::new("served", "rein-scripted")
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = shape(Server::new(
        store.clone(),
        brain,
        backend.clone(),
        profile,
        addr,
    ));
    let bearer = server.secrets().bearer().to_owned();
    let login = server.secrets().login_token().unwrap();
    tokio::spawn(server.serve(listener));
    Running {
        _dir: dir,
        addr,
        bearer,
        login,
        store,
        backend,
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap(),
    }
}

impl Running {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.get(self.url(path)).bearer_auth(&self.bearer)
    }

    pub fn post(&self, path: &str, body: Value) -> reqwest::RequestBuilder {
        self.http
            .post(self.url(path))
            .bearer_auth(&self.bearer)
            .json(&body)
    }

    pub async fn json(&self, request: reqwest::RequestBuilder) -> (u16, Value) {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    pub async fn new_conversation(&self) -> String {
        let (status, body) = self.json(self.post("/api/conversations", json!({}))).await;
        assert_eq!(status, 201, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    /// The conversation's pending approvals, once there is one.
    pub async fn approvals(&self, id: &str) -> Value {
        for _ in 0..500 {
            let (_, body) = self
                .json(self.get(&format!("/api/conversations/{id}/approvals")))
                .await;
            if body["approvals"].as_array().is_some_and(|a| !a.is_empty()) {
                return body["approvals"].clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("no approval was ever asked");
    }

    /// Wait until the conversation is in `state`.
    pub async fn until_state(&self, id: &str, state: &str) -> Value {
        for _ in 0..500 {
            let (_, body) = self
                .json(self.get(&format!("/api/conversations/{id}")))
                .await;
            if body["state"] == state {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("never {state}");
    }
}

pub fn code(body: &Value) -> &str {
    body["code"].as_str().unwrap_or_default()
}

/// A conversation's event stream as its `ui` events, read a turn at a time.
pub struct UiStream {
    body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
    /// Whether the server ended the stream.
    pub ended: bool,
}

impl UiStream {
    pub fn new(response: reqwest::Response) -> Self {
        use futures::StreamExt;
        Self {
            body: response
                .bytes_stream()
                .map(|chunk| chunk.map(|b| b.to_vec()))
                .boxed(),
            buffer: String::new(),
            ended: false,
        }
    }

    /// The `ui` events up to and with the next `TurnFinished`, or what came
    /// before `limit` passed without one.
    pub async fn turn(&mut self, limit: Duration) -> Vec<rein_wire::UiEvent> {
        use futures::StreamExt;
        let deadline = tokio::time::Instant::now() + limit;
        let mut seen = Vec::new();
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if !block.lines().any(|l| l == "event: ui") {
                    continue;
                }
                let data = block
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .unwrap();
                let event: rein_wire::UiEvent = serde_json::from_str(data)
                    .unwrap_or_else(|e| panic!("not a UiEvent ({e}): {data}"));
                let finished = matches!(event.kind, rein_wire::UiKind::TurnFinished { .. });
                seen.push(event);
                if finished {
                    return seen;
                }
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Ok(Some(chunk)) => self
                    .buffer
                    .push_str(&String::from_utf8_lossy(&chunk.unwrap())),
                Ok(None) => {
                    self.ended = true;
                    return seen;
                }
                Err(_) => return seen,
            }
        }
    }
}

/// A terminal that takes what is typed and does nothing with it.
struct Quiet;

impl rein_host::session::SessionPty for Quiet {
    fn write(&mut self, _: &[u8]) -> std::io::Result<()> {
        Ok(())
    }
    fn resize(&mut self, _: u16, _: u16) -> std::io::Result<()> {
        Ok(())
    }
    fn close(&mut self) {}
}

/// A hosted session on a real session host, served on its socket under a
/// home of its own, as `rein agents run` serves one.
pub struct Hosted {
    pub home: tempfile::TempDir,
    pub host: rein_host::session::SessionHost,
    ended: tokio_util::sync::CancellationToken,
}

/// Host `session` (a terminal session) with `viewer` watching and holding it.
pub fn hosted(session: &str, viewer: &str) -> Hosted {
    use rein_host::session::{OpenRequest, RenderMode, SessionHost};
    let home = tempfile::tempdir().unwrap();
    let host = SessionHost::new();
    host.open(OpenRequest {
        session: session.into(),
        supports: vec![RenderMode::NativeTui],
        mode: RenderMode::NativeTui,
        pty: Box::new(Quiet),
        protocol: None,
    })
    .unwrap();
    host.attach(session, viewer, |_| {});
    host.take_over(session, viewer, b"x").unwrap();
    let ended = tokio_util::sync::CancellationToken::new();
    let socket = rein_host::attach::socket_path(home.path(), session);
    let listener = rein_host::attach::listen(&socket).unwrap();
    tokio::spawn(rein_host::attach::serve(
        listener,
        host.clone(),
        session.into(),
        ended.clone(),
    ));
    Hosted { home, host, ended }
}

impl Hosted {
    /// The server listing what is served under this home, as `rein serve` does.
    pub fn listed_by(&self, server: Server) -> Server {
        let home = self.home.path().to_path_buf();
        server.with_hosted(move || {
            let home = home.clone();
            Box::pin(async move { rein_host::attach::live_sessions(&home).await })
        })
    }

    /// The run ends: its owner stops serving and removes its socket.
    pub fn end(&self, session: &str) {
        self.ended.cancel();
        self.host.close(session);
        let _ = std::fs::remove_file(rein_host::attach::socket_path(self.home.path(), session));
    }
}

/// Read SSE `log` events' sequence numbers until `until` is seen.
pub async fn read_events(response: reqwest::Response, until: &str) -> Vec<(u64, String)> {
    let mut seen = Vec::new();
    let mut buffer = String::new();
    let mut body = response.bytes_stream();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while let Ok(Some(chunk)) =
        tokio::time::timeout_at(deadline, futures::StreamExt::next(&mut body)).await
    {
        buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let data = block
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap_or_default();
            if block.lines().any(|l| l == "event: log") {
                let event: Value = serde_json::from_str(data).unwrap();
                let kind = event["kind"].as_str().unwrap().to_owned();
                seen.push((event["seq"].as_u64().unwrap(), kind.clone()));
                if kind == until {
                    return seen;
                }
            }
        }
    }
    panic!("no `{until}` in {seen:?}");
}

/// Spoil event `seq` of conversation `session` in the SQLite file `db` by
/// hand (its data made a blob): the log cannot be read past it.
pub fn spoil_log_row(db: &std::path::Path, session: &str, seq: i64) {
    let db = rusqlite::Connection::open(db).unwrap();
    let spoiled = db
        .execute(
            "UPDATE log SET data = x'00ff' WHERE seq = ?1 AND session = (SELECT key FROM sessions WHERE id = ?2)",
            rusqlite::params![seq, session],
        )
        .unwrap();
    assert_eq!(spoiled, 1, "one row spoiled");
}
