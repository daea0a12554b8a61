//! [`HttpProvider`]: the streamed call over HTTP, with retries and timeouts.
//!
//! One call is: refuse if offline; write the body once; then per attempt,
//! POST it, wait for headers (connect and first-byte timeouts), and decode
//! the body (idle timeout between chunks), all under one total deadline.
//!
//! Events that carry no output (message start, usage) are held back until
//! the first output event, so an attempt that fails before any output
//! reached the caller can be retried cleanly. Once output has been yielded,
//! a failure is never retried; the error says so
//! (`detail.output_delivered: true`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use rein_wire::{AgentError, Request, StreamEvent, error::codes};
use serde_json::Value;
use tokio::time::Instant;

use crate::answered::{not_event_stream, not_sse_error, status_error};
use crate::config::{ProviderConfig, WireApi};
use crate::decode::decode_stream;
use crate::encode::{EncodedCache, body_bytes_kept, body_for};
use crate::provider::{EventStream, Provider};
use rein_wire::{CachingStyle, Capabilities};

/// A [`Provider`] speaking one wire API over HTTP.
#[derive(Debug, Clone)]
pub struct HttpProvider {
    config: Arc<ProviderConfig>,
    client: reqwest::Client,
    /// The encoded messages of recent sessions' last requests, so a step
    /// encodes only what is new (shared by clones of this provider).
    kept: Arc<EncodedCache>,
    /// The window the server stated (`learn_window`), shared by clones.
    learned: crate::window::Shared,
}

impl HttpProvider {
    /// A provider for `config`. Builds the HTTP client (rustls with the
    /// ring crypto provider; no OpenSSL; HTTP/2 where the server offers it
    /// over TLS). A certificate of `extra_roots` that is not PEM is refused
    /// with `config_invalid`.
    pub fn new(config: ProviderConfig) -> Result<Self, AgentError> {
        let client = crate::client::build(&config)?;
        Ok(HttpProvider {
            config: Arc::new(config),
            client,
            kept: Arc::default(),
            learned: Arc::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }
}

impl Provider for HttpProvider {
    fn name(&self) -> &str {
        self.config.api.as_str()
    }

    fn capabilities(&self) -> Capabilities {
        let explicit = self.config.api == WireApi::AnthropicMessages;
        Capabilities {
            caching: if explicit {
                CachingStyle::Explicit
            } else {
                CachingStyle::Automatic
            },
            max_cache_breakpoints: if explicit { 4 } else { 0 },
            context_window: self
                .learned
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map_or(self.config.context_window, |l| l.tokens),
            structured_output: !explicit,
            token_counting: explicit,
        }
    }

    fn learn_window(&self, model: &str) -> crate::provider::WindowFuture {
        if !self.config.ask_window {
            return Box::pin(async { None });
        }
        let (client, learned) = (self.client.clone(), self.learned.clone());
        let (base, model, assumed) = (
            self.config.base_url.clone(),
            model.to_owned(),
            self.config.context_window,
        );
        Box::pin(async move {
            let stated = crate::window::ask(&client, &base, &model).await;
            *learned.lock().unwrap_or_else(|p| p.into_inner()) = stated.clone();
            Some(match stated {
                Some(stated) => crate::window::Asked::Stated(stated),
                None => crate::window::Asked::Unanswered { assumed },
            })
        })
    }

    fn count_tokens(&self, request: Request) -> crate::provider::CountFuture {
        let config = self.config.clone();
        let client = self.client.clone();
        Box::pin(async move {
            if config.api != WireApi::AnthropicMessages {
                return Ok(None);
            }
            if config.is_offline() {
                return Err(AgentError::new(
                    codes::OFFLINE,
                    "model calls are refused: REIN_OFFLINE is set",
                ));
            }
            // The count endpoint takes the request without the streaming and
            // output fields.
            let mut body = body_for(&config, &request);
            if let Some(map) = body.as_object_mut() {
                map.remove("stream");
                map.remove("max_tokens");
                map.remove("stop_sequences");
                map.remove("temperature");
                map.remove("top_p");
                map.remove("metadata");
            }
            let url = format!("{}/count_tokens", config.endpoint());
            let mut builder = client
                .post(url)
                .header("content-type", "application/json")
                .header("anthropic-version", "2023-06-01")
                .json(&body);
            if let Some(key) = &config.api_key {
                builder = match &config.key_header {
                    Some(header) => builder.header(header.as_str(), key.expose()),
                    None => builder.header("x-api-key", key.expose()),
                };
            }
            for (name, value) in &config.extra_headers {
                builder = builder.header(name.as_str(), value.as_str());
            }
            let limit = config.timeouts.connect + config.timeouts.first_byte;
            let response = match tokio::time::timeout(limit, builder.send()).await {
                Err(_) => {
                    return Err(AgentError::new(
                        codes::TIMEOUT_FIRST_BYTE,
                        "counting tokens timed out",
                    ));
                }
                Ok(Err(err)) => return Err(scrub(&config, transport_error(&err))),
                Ok(Ok(response)) => response,
            };
            if !response.status().is_success() {
                let status = response.status().as_u16();
                return Err(AgentError::new(
                    codes::PROVIDER_ERROR,
                    format!("counting tokens failed with HTTP {status}"),
                )
                .with_field("status", status));
            }
            let value: Value =
                match tokio::time::timeout(config.timeouts.idle, response.json()).await {
                    Ok(Ok(value)) => value,
                    _ => {
                        return Err(AgentError::new(
                            codes::STREAM_MALFORMED,
                            "the token count answer is not JSON",
                        ));
                    }
                };
            Ok(value.get("input_tokens").and_then(Value::as_u64))
        })
    }

    fn stream(&self, request: Request) -> EventStream {
        let span = tracing::info_span!(
            "model_call",
            api = self.config.api.as_str(),
            model = %request.model,
        );
        let config = self.config.clone();
        let client = self.client.clone();
        let inner = call(config.clone(), client, self.kept.clone(), request, span);
        // Every error leaving the provider is scrubbed of the key.
        Box::pin(inner.map(move |item| item.map_err(|err| scrub(&config, err))))
    }
}

fn scrub(config: &ProviderConfig, mut err: AgentError) -> AgentError {
    if let Some(key) = &config.api_key {
        err.message = key.scrub(&err.message);
        if let Some(detail) = &err.detail {
            let text = detail.to_string();
            let clean = key.scrub(&text);
            if clean != text {
                err.detail = serde_json::from_str(&clean).ok();
            }
        }
    }
    err
}

#[expect(
    clippy::too_many_lines,
    reason = "the attempts, their retries and the hold-back rule read as one loop"
)]
fn call(
    config: Arc<ProviderConfig>,
    client: reqwest::Client,
    kept: Arc<EncodedCache>,
    request: Request,
    span: tracing::Span,
) -> impl futures::Stream<Item = Result<StreamEvent, AgentError>> + Send {
    async_stream::stream! {
        if config.is_offline() {
            yield Err(AgentError::new(codes::OFFLINE, "model calls are refused: REIN_OFFLINE is set"));
            return;
        }
        let body = match body_bytes_kept(&config, &request, &kept) {
            Ok(body) => Bytes::from(body),
            Err(err) => {
                yield Err(AgentError::new(codes::INTERNAL, format!("could not write the request body: {err}")));
                return;
            }
        };
        let deadline = Instant::now() + config.timeouts.total;
        let mut backoff = backoff_delays(&config);
        let mut attempt: usize = 0;
        loop {
            attempt += 1;
            tracing::debug!(parent: &span, attempt, bytes = body.len(), "sending model request");
            let failure: AgentError;
            let retry_after: Option<Duration>;
            match send(&config, &client, body.clone(), deadline).await {
                Err(err) => {
                    failure = err;
                    retry_after = None;
                }
                Ok(response) if !response.status().is_success() => {
                    retry_after = retry_after_of(response.headers());
                    failure = status_error(response, &config, deadline).await;
                }
                Ok(response) if not_event_stream(response.headers()).is_some() => {
                    let media = not_event_stream(response.headers()).unwrap_or_default();
                    failure = not_sse_error(media, response, &config, deadline).await;
                    retry_after = None;
                }
                Ok(response) => {
                    let bytes = body_chunks(response, config.timeouts.idle, deadline);
                    let mut events = Box::pin(decode_stream(config.api, bytes, config.sse));
                    let mut held: Vec<StreamEvent> = Vec::new();
                    let mut delivered = false;
                    let outcome = loop {
                        match events.next().await {
                            Some(Ok(StreamEvent::Error { code, message, retryable })) => {
                                break Some(AgentError::new(code, message).retryable(retryable));
                            }
                            Some(Ok(event)) => {
                                if delivered {
                                    yield Ok(event);
                                } else if event.is_output() || matches!(event, StreamEvent::Stop { .. }) {
                                    delivered = true;
                                    for held_event in held.drain(..) {
                                        yield Ok(held_event);
                                    }
                                    yield Ok(event);
                                } else {
                                    held.push(event);
                                }
                            }
                            Some(Err(err)) => break Some(err),
                            None => break None,
                        }
                    };
                    match outcome {
                        None => {
                            for held_event in held.drain(..) {
                                yield Ok(held_event);
                            }
                            tracing::debug!(parent: &span, attempt, "model call complete");
                            return;
                        }
                        Some(err) if delivered => {
                            tracing::warn!(parent: &span, code = %err.code, "model stream failed after output; not retried");
                            let message = format!("{} (not retried: output had already reached the caller)", err.message);
                            let mut err = err.with_field("output_delivered", true).with_field("attempts", attempt);
                            err.message = message;
                            err.retryable = false;
                            yield Err(err);
                            return;
                        }
                        Some(err) => {
                            failure = err;
                            retry_after = None;
                        }
                    }
                }
            }
            // Decide whether to try again.
            if failure.retryable && attempt <= config.retry.max_retries {
                let planned = backoff.next().unwrap_or(config.retry.max_delay);
                if let Some(wait) = retry_after
                    && wait > config.retry.max_retry_after
                {
                    yield Err(failure
                        .with_field("attempts", attempt)
                        .with_field("retry_after_s", wait.as_secs_f64())
                        .retryable(true));
                    return;
                }
                // The server's word beats our schedule.
                let delay = retry_after.unwrap_or(planned);
                if Instant::now() + delay >= deadline {
                    yield Err(failure.with_field("attempts", attempt));
                    return;
                }
                tracing::warn!(parent: &span, code = %failure.code, attempt, delay_ms = delay.as_millis() as u64, "model call failed; retrying");
                tokio::time::sleep(delay).await;
                continue;
            }
            yield Err(failure.with_field("attempts", attempt));
            return;
        }
    }
}

/// The backoff delays (exponential with jitter), from `backon`.
fn backoff_delays(config: &ProviderConfig) -> impl Iterator<Item = Duration> + Send + use<> {
    use backon::BackoffBuilder;
    backon::ExponentialBuilder::default()
        .with_min_delay(config.retry.min_delay)
        .with_max_delay(config.retry.max_delay)
        .with_max_times(config.retry.max_retries)
        .with_jitter()
        .build()
}

async fn send(
    config: &ProviderConfig,
    client: &reqwest::Client,
    body: Bytes,
    deadline: Instant,
) -> Result<reqwest::Response, AgentError> {
    let mut builder = client
        .post(config.endpoint())
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(body);
    if config.api == WireApi::AnthropicMessages {
        builder = builder.header("anthropic-version", "2023-06-01");
    }
    if let Some(key) = &config.api_key {
        builder = match (&config.key_header, config.api) {
            (Some(header), _) => builder.header(header.as_str(), key.expose()),
            (None, WireApi::AnthropicMessages) => builder.header("x-api-key", key.expose()),
            (None, _) => builder.bearer_auth(key.expose()),
        };
    }
    for (name, value) in &config.extra_headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let first_byte = Instant::now() + config.timeouts.connect + config.timeouts.first_byte;
    let limit = first_byte.min(deadline);
    match tokio::time::timeout_at(limit, builder.send()).await {
        Err(_) if limit == deadline => Err(AgentError::new(
            codes::TIMEOUT_TOTAL,
            "the model call ran out of time waiting for the provider",
        )),
        Err(_) => Err(AgentError::new(
            codes::TIMEOUT_FIRST_BYTE,
            format!(
                "the provider did not answer within {:?}",
                config.timeouts.first_byte
            ),
        )),
        Ok(Err(err)) => Err(transport_error(&err)),
        Ok(Ok(response)) => Ok(response),
    }
}

fn transport_error(err: &reqwest::Error) -> AgentError {
    // `without_url`: a base URL may carry a key in its query string.
    let text = format!("{}", ErrorChain(err));
    if err.is_timeout() {
        AgentError::new(
            codes::TIMEOUT_CONNECT,
            format!("connecting to the provider timed out: {text}"),
        )
    } else if err.is_connect() {
        AgentError::new(
            codes::CONNECT_FAILED,
            format!("could not connect to the provider: {text}"),
        )
    } else {
        AgentError::new(codes::STREAM_IO, format!("the request failed: {text}"))
    }
}

/// Displays an error and its sources, without any URL.
struct ErrorChain<'a>(&'a reqwest::Error);

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut source = std::error::Error::source(self.0);
        let mut first = true;
        while let Some(err) = source {
            if !first {
                f.write_str(": ")?;
            }
            write!(f, "{err}")?;
            first = false;
            source = err.source();
        }
        if first {
            f.write_str("request error")?;
        }
        Ok(())
    }
}

fn retry_after_of(headers: &http::HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    // The other form RFC 9110 allows: an HTTP date. A date in the past
    // means "now"; the caller caps a far one like the seconds form.
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The response body as chunks, under the idle timeout and the deadline.
fn body_chunks(
    response: reqwest::Response,
    idle: Duration,
    deadline: Instant,
) -> impl futures::Stream<Item = Result<Bytes, AgentError>> + Send + 'static {
    async_stream::stream! {
        let mut chunks = response.bytes_stream();
        loop {
            let limit = (Instant::now() + idle).min(deadline);
            match tokio::time::timeout_at(limit, chunks.next()).await {
                Err(_) if limit == deadline => {
                    yield Err(AgentError::new(codes::TIMEOUT_TOTAL, "the model call ran out of time mid-stream"));
                    return;
                }
                Err(_) => {
                    yield Err(AgentError::new(codes::TIMEOUT_IDLE, format!("no data from the provider for {idle:?}"))
                        .with_field("idle_timeout_ms", idle.as_millis() as u64));
                    return;
                }
                Ok(None) => return,
                Ok(Some(Ok(bytes))) => yield Ok(bytes),
                Ok(Some(Err(err))) => {
                    yield Err(AgentError::new(
                        codes::STREAM_TRUNCATED,
                        format!("the connection failed mid-stream: {}", ErrorChain(&err)),
                    ));
                    return;
                }
            }
        }
    }
}
