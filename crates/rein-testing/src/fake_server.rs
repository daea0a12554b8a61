//! [`FakeServer`]: scripted HTTP on loopback.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// One piece of a response body, sent after an optional pause.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// Wait this long before sending it.
    pub delay: Duration,
    /// Wait for this gate to open before sending it (after `delay`).
    pub gate: Option<std::sync::Arc<tokio::sync::Notify>>,
    /// The bytes.
    pub bytes: Bytes,
}

/// What the server answers one request with.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: Vec<(String, String)>,
    /// The body, in chunks.
    pub chunks: Vec<Chunk>,
    /// Cut the connection after the last chunk instead of ending the body.
    pub cut: bool,
}

impl Reply {
    /// A 200 `text/event-stream` reply with this body in one chunk.
    pub fn sse(body: impl Into<String>) -> Self {
        Reply::sse_chunks(vec![body.into()])
    }

    /// A 200 `text/event-stream` reply sent in these chunks.
    pub fn sse_chunks(chunks: Vec<String>) -> Self {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks: chunks
                .into_iter()
                .map(|c| Chunk {
                    delay: Duration::ZERO,
                    gate: None,
                    bytes: Bytes::from(c),
                })
                .collect(),
            cut: false,
        }
    }

    /// A 200 SSE reply whose body is split every `size` bytes (byte-wise,
    /// so UTF-8 sequences and CRLF pairs may be split too).
    pub fn sse_split(body: &str, size: usize) -> Self {
        let size = size.max(1);
        let bytes = Bytes::copy_from_slice(body.as_bytes());
        let mut reply = Reply::sse_chunks(Vec::new());
        let mut at = 0;
        while at < bytes.len() {
            let end = (at + size).min(bytes.len());
            reply.chunks.push(Chunk {
                delay: Duration::ZERO,
                gate: None,
                bytes: bytes.slice(at..end),
            });
            at = end;
        }
        reply
    }

    /// A reply with this status and a JSON (or text) body.
    pub fn status(status: u16, body: impl Into<String>) -> Self {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![Chunk {
                delay: Duration::ZERO,
                gate: None,
                bytes: Bytes::from(body.into()),
            }],
            cut: false,
        }
    }

    /// Add a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Pause before chunk `index`.
    pub fn delay_before(mut self, index: usize, delay: Duration) -> Self {
        if let Some(chunk) = self.chunks.get_mut(index) {
            chunk.delay = delay;
        }
        self
    }

    /// Hold chunk `index` until `gate` is opened (`Notify::notify_one`, which
    /// a gate opened before the chunk is reached remembers): a test decides
    /// when the model "answers", with no clock involved.
    pub fn held_until(mut self, index: usize, gate: std::sync::Arc<tokio::sync::Notify>) -> Self {
        if let Some(chunk) = self.chunks.get_mut(index) {
            chunk.gate = Some(gate);
        }
        self
    }

    /// Cut the connection after the chunks are sent.
    pub fn cut(mut self) -> Self {
        self.cut = true;
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// The method.
    pub method: String,
    /// The path and query.
    pub path: String,
    /// The headers, names lower-case.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Bytes,
    /// When it arrived.
    pub received_at: std::time::Instant,
}

impl RecordedRequest {
    /// The body parsed as JSON (`Null` if it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Computes a reply from the request (and its position, from 0): for
/// servers whose answer depends on what was sent, like a prompt cache.
pub type Responder = Arc<dyn Fn(&RecordedRequest, usize) -> Reply + Send + Sync>;

struct State {
    script: Mutex<VecDeque<Reply>>,
    /// What a `GET` of a path answers (a server's `/props`, say); any other
    /// `GET` is a 404. Neither takes a scripted reply nor is recorded.
    gets: Mutex<std::collections::HashMap<String, (u16, String)>>,
    responder: Mutex<Option<Responder>>,
    requests: Mutex<Vec<RecordedRequest>>,
    connections: AtomicUsize,
    /// How many response bodies have ended: sent in full, cut, or dropped
    /// because the client went away.
    bodies_ended: tokio::sync::watch::Sender<usize>,
}

impl Default for State {
    fn default() -> Self {
        State {
            script: Mutex::default(),
            gets: Mutex::default(),
            responder: Mutex::default(),
            requests: Mutex::default(),
            connections: AtomicUsize::new(0),
            bodies_ended: tokio::sync::watch::channel(0).0,
        }
    }
}

/// Counts a response body as ended when it is dropped.
struct BodyEndGuard(Arc<State>);

impl Drop for BodyEndGuard {
    fn drop(&mut self) {
        self.0.bodies_ended.send_modify(|n| *n += 1);
    }
}

/// A scripted HTTP server on `127.0.0.1`. Stops when dropped.
pub struct FakeServer {
    addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

impl std::fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl FakeServer {
    /// Start a server that answers requests with `script`, in order. A
    /// request beyond the script gets a 500 saying so.
    pub async fn start(script: Vec<Reply>) -> std::io::Result<FakeServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State::default());
        state
            .script
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(script);
        let accept_state = state.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                accept_state.connections.fetch_add(1, Ordering::SeqCst);
                let state = accept_state.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| handle(state.clone(), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(FakeServer {
            addr,
            state,
            accept,
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A provider config for `api` pointed at this server: a test key,
    /// the offline switch off, no retries (a test scripts every reply).
    pub fn config_for(&self, api: rein_gateway::WireApi) -> rein_gateway::ProviderConfig {
        let base = match api {
            rein_gateway::WireApi::AnthropicMessages => self.base_url(),
            _ => format!("{}/v1", self.base_url()),
        };
        let mut config = rein_gateway::ProviderConfig::new(api)
            .with_base_url(base)
            .with_api_key(rein_gateway::ApiKey::new("sk-test"));
        config.offline = Some(false);
        config.retry = rein_gateway::RetryPolicy::none();
        config
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Add replies to the end of the script.
    pub fn push(&self, reply: Reply) {
        self.state
            .script
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(reply);
    }

    /// Answer every `GET path` with `status` and the JSON `body` (a model
    /// server's `/props`, say), apart from the script.
    pub fn answer_get(&self, path: &str, status: u16, body: impl Into<String>) {
        self.state
            .gets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(path.to_owned(), (status, body.into()));
    }

    /// Answer requests beyond the script with `responder`.
    pub fn respond_with(&self, responder: Responder) {
        *self
            .state
            .responder
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(responder);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Wait until `n` response bodies have ended (sent, cut, or dropped
    /// because the client closed the connection).
    pub async fn bodies_ended(&self, n: usize) {
        let mut rx = self.state.bodies_ended.subscribe();
        let _ = rx.wait_for(|ended| *ended >= n).await;
    }

    /// How many TCP connections were accepted.
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

type BoxBody = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

#[expect(clippy::too_many_lines, reason = "one arm per route of the stand-in")]
async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<BoxBody>, Infallible> {
    let method = req.method().to_string();
    let path = req
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.to_string());
    // A `GET` is a question beside the model calls (a server's window):
    // answered as set, else 404, never from the script.
    if method == "GET" {
        let (status, body) = state
            .gets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&path)
            .cloned()
            .unwrap_or((404, r#"{"error":"not found"}"#.to_owned()));
        let body = http_body_util::Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed();
        return Ok(Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(body)
            .unwrap_or_else(|_| {
                Response::new(BodyExt::boxed(
                    http_body_util::Empty::new().map_err(|never| match never {}),
                ))
            }));
    }
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = match req.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let recorded = RecordedRequest {
        method,
        path,
        headers,
        body,
        received_at: std::time::Instant::now(),
    };
    let position = {
        let mut requests = state.requests.lock().unwrap_or_else(|p| p.into_inner());
        requests.push(recorded.clone());
        requests.len() - 1
    };
    let responder = state
        .responder
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let scripted = state
        .script
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .pop_front();
    let reply = scripted
        .or_else(|| responder.map(|respond| respond(&recorded, position)))
        .unwrap_or_else(|| {
            Reply::status(500, r#"{"error":{"message":"fake server: script exhausted","type":"script_exhausted"}}"#)
        });
    let mut response = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        response = response.header(name.as_str(), value.as_str());
    }
    let cut = reply.cut;
    let chunks = reply.chunks;
    let guard = BodyEndGuard(state.clone());
    let stream = futures::stream::unfold(
        (chunks.into_iter(), cut, guard),
        |(mut chunks, cut, guard)| async move {
            match chunks.next() {
                Some(chunk) => {
                    if !chunk.delay.is_zero() {
                        tokio::time::sleep(chunk.delay).await;
                    }
                    if let Some(gate) = &chunk.gate {
                        gate.notified().await;
                    }
                    Some((Ok(Frame::data(chunk.bytes)), (chunks, cut, guard)))
                }
                None if cut => {
                    // Let hyper flush what was sent before the cut, so the
                    // client really receives the partial body.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Some((
                        Err(std::io::Error::new(
                            std::io::ErrorKind::ConnectionReset,
                            "fake server cut the connection",
                        )),
                        (chunks, false, guard),
                    ))
                }
                None => None,
            }
        },
    );
    let body = BodyExt::boxed(StreamBody::new(stream));
    Ok(response.body(body).unwrap_or_else(|_| {
        Response::new(BodyExt::boxed(
            http_body_util::Empty::new().map_err(|never| match never {}),
        ))
    }))
}
