//! The HTTP surface under watchers: one conversation's event stream
//! watched by many clients, and many idle streams held open.
//!
//! - **Fan-out**: a server on loopback, `--watchers` SSE clients on one
//!   conversation (each its own connection), then `--events` events
//!   appended to its log one at a time; each client notes when each event
//!   arrives. Delivery latency is from the append's return to a client's
//!   receipt (same process, one clock): p50, p99 and max over every
//!   (client, event).
//! - **Idle memory**: the server runs in a child process (this binary
//!   again, `--serve-only`); `--idle` streams are opened on it and left
//!   idle, and the child's resident memory is read from `/proc` before and
//!   after: memory per idle connection.
//!
//! Prints one JSON line. Measured, never asserted.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use futures::StreamExt;
use rein_runner::Profile;
use rein_sessions::{Event, MemoryStore, NewEvent, Store};
use serde_json::json;

/// The allocator the `rein` binary runs on (feature `mimalloc`, on by
/// default), so a figure here is what the binary does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "rein-fanout")]
struct Cli {
    /// Clients watching one conversation.
    #[arg(long, default_value_t = 500)]
    watchers: usize,
    /// Events appended while they watch.
    #[arg(long, default_value_t = 50)]
    events: u64,
    /// Idle streams held open for the memory measure.
    #[arg(long, default_value_t = 1000)]
    idle: usize,
    /// Run only the server (the child of the memory measure).
    #[arg(long, hide = true)]
    serve_only: bool,
}

const TOKEN: &str = "fanout-bench-token-0123456789abcdef0123456789";

/// A server for `store` on a free loopback port, every bound raised to
/// fit the benchmark.
async fn server(store: Arc<dyn Store>) -> Result<(std::net::SocketAddr, String)> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let session = store.create_session(json!({"title": "fan-out"})).await?.id;
    let server = rein_server::Server::new(
        store,
        Arc::new(rein_gateway::scripted::ScriptedBrain::new(Vec::new())),
        Arc::new(rein_tools::Registry::new()),
        Profile::new("bench", "rein-scripted"),
        addr,
    )
    .with_bearer(TOKEN)
    .with_limits(rein_server::Limits {
        watchers_per_conversation: 100_000,
        requests: 100_000,
        ..rein_server::Limits::default()
    });
    tokio::spawn(server.serve(listener));
    Ok((addr, session))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

/// Open one stream; `Ok` once its headers are in.
async fn watch(
    http: &reqwest::Client,
    addr: std::net::SocketAddr,
    session: &str,
) -> Result<reqwest::Response> {
    let response = http
        .get(format!("http://{addr}/api/conversations/{session}/events"))
        .bearer_auth(TOKEN)
        .send()
        .await?;
    if !response.status().is_success() {
        bail!("a watcher was refused: {}", response.status());
    }
    Ok(response)
}

async fn fan_out(watchers: usize, events: u64) -> Result<serde_json::Value> {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let (addr, session) = server(store.clone()).await?;
    let mut appended: HashMap<u64, Instant> = HashMap::new();
    let mut clients = Vec::with_capacity(watchers);
    for _ in 0..watchers {
        // One connection per watcher, as browsers would hold them.
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()?;
        let response = watch(&http, addr, &session).await?;
        clients.push(tokio::spawn(async move {
            // (seq, when it arrived) of the appended events (seq 1 is the
            // session's creation, sent before any was appended).
            let mut got: Vec<(u64, Instant)> = Vec::new();
            let mut body = response.bytes_stream();
            let mut buffer = String::new();
            while let Some(Ok(chunk)) = body.next().await {
                let now = Instant::now();
                buffer.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buffer.find("\n\n") {
                    let block: String = buffer.drain(..end + 2).collect();
                    let Some(seq) = block
                        .lines()
                        .find_map(|l| l.strip_prefix("id: "))
                        .and_then(|s| s.trim().parse::<u64>().ok())
                    else {
                        continue;
                    };
                    if seq > 1 {
                        got.push((seq, now));
                    }
                    if got.len() as u64 == events {
                        return got;
                    }
                }
            }
            got
        }));
    }
    // Every watcher is connected; the log so far (session.created) is out.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let lease = store
        .acquire(&session, "fan-out bench", Duration::from_secs(600))
        .await?;
    let started = Instant::now();
    for n in 0..events {
        let written = store
            .append(
                &lease,
                vec![NewEvent::main(Event::SteerSaid {
                    text: format!("event {n}"),
                })],
            )
            .await?;
        let done = Instant::now();
        if let Some(last) = written.last() {
            appended.insert(last.seq, done);
        }
        // Spaced out: each event's delivery is measured on its own.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut all = Vec::with_capacity(watchers * events as usize);
    for client in clients {
        let got = tokio::time::timeout(Duration::from_secs(60), client)
            .await
            .context("a watcher did not get every event within a minute")??;
        if got.len() as u64 != events {
            bail!("a watcher got {} of {events} events", got.len());
        }
        for (seq, at) in got {
            let sent = appended.get(&seq).context("an event nobody appended")?;
            // An event may arrive before its append's call returns.
            all.push(at.saturating_duration_since(*sent).as_secs_f64() * 1e3);
        }
    }
    let total = started.elapsed();
    all.sort_by(f64::total_cmp);
    Ok(json!({
        "watchers": watchers,
        "events": events,
        "deliveries": all.len(),
        "latency_ms_p50": percentile(&all, 0.50),
        "latency_ms_p99": percentile(&all, 0.99),
        "latency_ms_max": all.last().copied().unwrap_or(0.0),
        "wall_s": total.as_secs_f64(),
    }))
}

/// Resident memory of process `pid` in MiB.
fn rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/statm"))
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map_or(0.0, |pages| pages * 4096.0 / (1024.0 * 1024.0))
}

async fn idle_memory(idle: usize) -> Result<serde_json::Value> {
    let mut child = Command::new(std::env::current_exe()?)
        .arg("--serve-only")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("no stdout")?).read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let addr: std::net::SocketAddr = words.next().context("no address")?.parse()?;
    let session = words.next().context("no session")?.to_owned();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = rss_mb(child.id());
    let mut held = Vec::with_capacity(idle);
    for _ in 0..idle {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()?;
        held.push((watch(&http, addr, &session).await?, http));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_mb(child.id());
    drop(held);
    let _ = child.kill();
    let _ = child.wait();
    Ok(json!({
        "idle_streams": idle,
        "server_rss_mb_before": before,
        "server_rss_mb_after": after,
        "kib_per_idle_stream": (after - before) * 1024.0 / idle as f64,
    }))
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    if cli.serve_only {
        let (addr, session) = server(Arc::new(MemoryStore::new())).await?;
        println!("{addr} {session}");
        // Serves until the parent kills it.
        std::future::pending::<()>().await;
        return Ok(());
    }
    let fan = fan_out(cli.watchers, cli.events).await?;
    let idle = idle_memory(cli.idle).await?;
    println!("{}", json!({"fan_out": fan, "idle": idle}));
    Ok(())
}
