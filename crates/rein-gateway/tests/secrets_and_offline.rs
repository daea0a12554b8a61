//! Two security invariants: the offline switch opens no socket, and an API
//! key appears in no error, log line or `Debug` output.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use rein_gateway::{ApiKey, HttpProvider, Provider, ProviderConfig, RetryPolicy, WireApi};
use rein_testing::{FakeServer, Reply, ScriptedMessage};
use rein_wire::error::codes;
use rein_wire::{AgentError, Message, Request};

const CANARY: &str = "sk-canary-7f3a9c2e5b1d4086";

fn request() -> Request {
    Request::new("m", vec![Message::user("hi")])
}

async fn first_error(provider: &HttpProvider) -> Option<AgentError> {
    let mut stream = provider.stream(request());
    while let Some(item) = stream.next().await {
        if let Err(err) = item {
            return Some(err);
        }
    }
    None
}

#[tokio::test]
async fn offline_refuses_before_any_socket_opens() {
    for api in [
        WireApi::AnthropicMessages,
        WireApi::OpenAiChat,
        WireApi::OpenAiResponses,
    ] {
        let server = FakeServer::start(vec![Reply::sse(
            ScriptedMessage::text(&["x"]).openai_chat_sse(),
        )])
        .await
        .unwrap();
        let mut config = ProviderConfig::new(api)
            .with_base_url(server.base_url())
            .with_api_key(ApiKey::new(CANARY));
        config.offline = Some(true);
        let provider = HttpProvider::new(config).unwrap();
        let err = first_error(&provider).await.unwrap();
        assert_eq!(err.code, codes::OFFLINE);
        assert!(!err.retryable);
        assert_eq!(
            server.connections(),
            0,
            "{api}: a socket was opened while offline"
        );
        assert!(server.requests().is_empty());
    }
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_canary_key_appears_in_no_error_log_or_debug_output() {
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    // A hostile or careless server echoes the key back in its errors.
    let echo = format!(
        r#"{{"error":{{"message":"invalid x-api-key {CANARY}","type":"authentication_error"}}}}"#
    );
    let server = FakeServer::start(vec![
        Reply::status(503, format!("upstream said {CANARY}")),
        Reply::status(401, echo),
        Reply::sse(format!("data: {{\"error\":{{\"message\":\"key {CANARY} revoked\",\"type\":\"server_error\"}}}}\n\n")),
    ])
    .await
    .unwrap();
    let mut errors = Vec::new();
    for api in [WireApi::AnthropicMessages, WireApi::OpenAiChat] {
        let mut config = ProviderConfig::new(api)
            .with_base_url(server.base_url())
            .with_api_key(ApiKey::new(CANARY));
        config.offline = Some(false);
        config.retry = RetryPolicy {
            min_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
            ..RetryPolicy::default()
        };
        let provider = HttpProvider::new(config.clone()).unwrap();
        let shown = format!("{provider:?} {config:?} {:?}", ApiKey::new(CANARY));
        assert!(!shown.contains(CANARY), "Debug leaked the key: {shown}");
        if let Some(err) = first_error(&provider).await {
            errors.push(err);
        }
    }
    // A connection refused, with the key set.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let mut config = ProviderConfig::new(WireApi::OpenAiChat)
        .with_base_url(format!("http://{closed}/v1"))
        .with_api_key(ApiKey::new(CANARY));
    config.offline = Some(false);
    config.retry = RetryPolicy::none();
    errors.push(
        first_error(&HttpProvider::new(config).unwrap())
            .await
            .unwrap(),
    );

    assert_eq!(errors.len(), 3);
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.header("x-api-key") == Some(CANARY)
                || r.header("authorization") == Some(&format!("Bearer {CANARY}"))),
        "the key did reach the server, so the test is meaningful"
    );
    assert_eq!(errors[0].code, codes::PROVIDER_AUTH);
    assert_eq!(errors[2].code, codes::CONNECT_FAILED);
    for err in &errors {
        let forms = format!("{err} {err:?} {}", err.to_problem());
        assert!(!forms.contains(CANARY), "an error leaked the key: {forms}");
    }
    assert!(
        errors[0].message.contains("<redacted>"),
        "{}",
        errors[0].message
    );
    let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(!logs.is_empty(), "logging was captured");
    assert!(!logs.contains(CANARY), "a log line leaked the key");
}
