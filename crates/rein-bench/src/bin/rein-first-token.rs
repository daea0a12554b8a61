//! The latency rein adds before a consumer sees the first streamed token.
//!
//! A model stand-in on loopback (`rein_testing::FakeServer`) answers every
//! request with the same OpenAI Chat stream at once. Each path is timed
//! from the moment its caller starts the request to the moment its
//! consumer holds the first piece of answer text, `--trials` times after
//! a warm-up, and reported as p50 / p99:
//!
//! - **raw**: a plain HTTP client (reqwest) posts a chat request and reads
//!   the body until the first text arrives — the floor;
//! - **library**: `Conversation::turn` on a durable SQLite store, the
//!   first `UiEvent::TextDelta` from `Conversation::subscribe` (the turn's
//!   opening events are committed before the model is called);
//! - **server**: the same over `rein serve`'s HTTP API (the server crate
//!   on loopback, as the binary runs it): a client watching the
//!   conversation's SSE stream posts a turn and waits for the first `ui`
//!   text delta.
//!
//! Prints one JSON line. Measured, never asserted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use futures::StreamExt;
use rein_gateway::{ApiKey, HttpProvider, Provider, ProviderConfig, RetryPolicy, WireApi};
use rein_runner::{Conversation, Profile, UiKind};
use rein_sessions::{SqliteStore, Store};
use rein_testing::{FakeServer, Reply, ScriptedMessage};
use serde_json::json;

/// The allocator the `rein` binary runs on (feature `mimalloc`, on by
/// default), so a figure here is what the binary does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "rein-first-token")]
struct Cli {
    /// Timed requests per path.
    #[arg(long, default_value_t = 300)]
    trials: usize,
    /// Untimed requests first, per path.
    #[arg(long, default_value_t = 20)]
    warmup: usize,
}

const TOKEN: &str = "first-token-bench-token-0123456789abcdef0123";

/// The first piece of text every answer streams.
const FIRST: &str = "Hello";

async fn stand_in() -> Result<FakeServer> {
    let server = FakeServer::start(Vec::new()).await?;
    server.respond_with(Arc::new(|_, _| {
        Reply::sse(
            ScriptedMessage::text(&[FIRST, " there,", " how", " are", " you?"]).openai_chat_sse(),
        )
    }));
    Ok(server)
}

fn provider(base: &str) -> Result<Arc<dyn Provider>> {
    let mut config = ProviderConfig::new(WireApi::OpenAiChat)
        .with_base_url(base)
        .with_api_key(ApiKey::new("sk-bench"));
    config.offline = Some(false);
    config.retry = RetryPolicy::none();
    Ok(Arc::new(HttpProvider::new(config)?))
}

fn profile() -> Profile {
    Profile::new("bench", "gpt-4o-mini").with_system("You are a helpful assistant.")
}

/// Time `trial` `trials` times after `warmup` untimed runs; milliseconds,
/// in the order run.
async fn timed<F, Fut>(warmup: usize, trials: usize, mut trial: F) -> Result<Vec<f64>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Duration>>,
{
    for _ in 0..warmup {
        trial().await?;
    }
    let mut out = Vec::with_capacity(trials);
    for _ in 0..trials {
        out.push(trial().await?.as_secs_f64() * 1e3);
    }
    Ok(out)
}

fn sorted(mut times: Vec<f64>) -> Vec<f64> {
    times.sort_by(f64::total_cmp);
    times
}

/// Read `body` until `marker` has arrived, and on until `end` has (or
/// the body ends); the time from `started` to `marker`.
async fn first_seen<S, B, E>(body: S, marker: &str, end: &str, started: Instant) -> Result<Duration>
where
    S: futures::Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::error::Error + Send + Sync + 'static,
{
    let mut body = std::pin::pin!(body);
    let mut seen = String::new();
    let mut first = None;
    while let Some(chunk) = body.next().await {
        seen.push_str(&String::from_utf8_lossy(chunk?.as_ref()));
        if first.is_none() && seen.contains(marker) {
            first = Some(started.elapsed());
        }
        if first.is_some() && seen.contains(end) {
            break;
        }
    }
    first.with_context(|| format!("the stream ended before `{marker}`"))
}

async fn raw(base: &str, warmup: usize, trials: usize) -> Result<Vec<f64>> {
    let http = reqwest::Client::new();
    let url = format!("{base}/chat/completions");
    let body = json!({
        "model": "gpt-4o-mini",
        "stream": true,
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "hello"},
        ],
    });
    timed(warmup, trials, || async {
        let started = Instant::now();
        let response = http
            .post(&url)
            .bearer_auth("sk-bench")
            .json(&body)
            .send()
            .await?;
        first_seen(response.bytes_stream(), FIRST, "[DONE]", started).await
    })
    .await
}

async fn library(base: &str, warmup: usize, trials: usize) -> Result<Vec<f64>> {
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("rein.db")).await?);
    let backend = Arc::new(rein_tools::Registry::new());
    let mut conv = Conversation::open(store, provider(base)?, backend, profile(), None).await?;
    let mut out = Vec::with_capacity(warmup + trials);
    for _ in 0..warmup + trials {
        let mut ui = conv.subscribe();
        let started = Instant::now();
        let first = async move {
            while let Ok(event) = ui.recv().await {
                if matches!(event.kind, UiKind::TextDelta { .. }) {
                    return Ok(started.elapsed());
                }
            }
            bail!("the turn streamed no text")
        };
        let (turn, first) = tokio::join!(conv.turn("hello"), first);
        turn?;
        out.push(first?.as_secs_f64() * 1e3);
    }
    let mut timed = out.split_off(warmup);
    timed.sort_by(f64::total_cmp);
    Ok(timed)
}

async fn server(base: &str, warmup: usize, trials: usize) -> Result<Vec<f64>> {
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("rein.db")).await?);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let backend = Arc::new(rein_tools::Registry::new());
    let served = rein_server::Server::new(store, provider(base)?, backend, profile(), addr)
        .with_bearer(TOKEN);
    tokio::spawn(served.serve(listener));
    let http = reqwest::Client::new();
    let api = format!("http://{addr}/api/conversations");
    let id = rein_bench::new_conversation(&http, &format!("http://{addr}"), TOKEN).await?;
    timed(warmup, trials, || async {
        wait_idle(&http, &api, &id).await?;
        let watch = http
            // Only what happens from now on: no log read back.
            .get(format!("{api}/{id}/events?after={}", u64::MAX))
            .bearer_auth(TOKEN)
            .send()
            .await?
            .error_for_status()?;
        let started = Instant::now();
        http.post(format!("{api}/{id}/turns"))
            .bearer_auth(TOKEN)
            .json(&json!({"text": "hello"}))
            .send()
            .await?
            .error_for_status()?;
        // Read on to the turn's end: the next starts only after it.
        first_seen(watch.bytes_stream(), "text_delta", "turn.finished", started).await
    })
    .await
}

/// Wait (untimed) until the server has let go of the last turn.
async fn wait_idle(http: &reqwest::Client, api: &str, id: &str) -> Result<()> {
    for _ in 0..5_000 {
        let state: serde_json::Value = http
            .get(format!("{api}/{id}"))
            .bearer_auth(TOKEN)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        if state["state"] != "running" {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    bail!("the last turn never ended")
}

fn summary(sorted: &[f64]) -> serde_json::Value {
    let at = |p: f64| sorted[((sorted.len() as f64 - 1.0) * p).round() as usize];
    json!({"p50_ms": at(0.5), "p99_ms": at(0.99)})
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    if cli.trials == 0 {
        bail!("--trials must be at least 1");
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let model = stand_in().await?;
    let base = format!("{}/v1", model.base_url());
    let raw = sorted(raw(&base, cli.warmup, cli.trials).await?);
    let library = sorted(library(&base, cli.warmup, cli.trials).await?);
    // Every server trial is one more turn of the same conversation: the
    // first and the last tenth show whether a long one starts slower.
    let in_order = server(&base, cli.warmup, cli.trials).await?;
    let tenth = (in_order.len() / 10).max(1);
    let first_tenth = sorted(in_order[..tenth].to_vec());
    let last_tenth = sorted(in_order[in_order.len() - tenth..].to_vec());
    let server = sorted(in_order);
    let added = |path: &[f64]| {
        json!({
            "p50_ms": path[path.len() / 2] - raw[raw.len() / 2],
        })
    };
    let record = json!({
        "bench": "first_token",
        "trials": cli.trials,
        "raw": summary(&raw),
        "library_sqlite": summary(&library),
        "server_sqlite": summary(&server),
        "server_first_tenth": summary(&first_tenth),
        "server_last_tenth": summary(&last_tenth),
        "library_added": added(&library),
        "server_added": added(&server),
    });
    println!("{record}");
    Ok(())
}
