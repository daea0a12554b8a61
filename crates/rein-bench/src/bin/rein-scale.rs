//! Many conversations in one process against the peer benchmark's mock:
//! each runs one turn of a few tool steps (at most `--in-flight` model calls
//! at once), then all stay open and idle. Prints one JSON line: memory per
//! idle conversation, CPU per step, rein's own step overhead (p50, p99: from
//! the end of one model stream to the start of the next call of the same
//! conversation — tool, appends and request assembly), and the durable event
//! appends per second of the active phase.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Parser;
use futures::StreamExt;
use rein_bench::{add_backend, mock_provider, profile, prompt, rss_now_mb, usage};
use rein_gateway::{Capabilities, EventStream, Provider};
use rein_runner::{Conversation, TurnOutcome};
use rein_sessions::{Durability, MemoryStore, SqliteStore, Store};
use rein_wire::Request;
use serde_json::json;
use tokio::sync::Semaphore;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "rein-scale")]
struct Cli {
    /// Conversations held at once.
    #[arg(long, default_value_t = 1000)]
    conversations: usize,
    /// Tool steps in each conversation's turn.
    #[arg(long, default_value_t = 3)]
    steps: usize,
    /// Model calls in flight at once.
    #[arg(long, default_value_t = 64)]
    in_flight: usize,
    /// The mock's port.
    #[arg(long, default_value_t = 18080)]
    port: u16,
    /// `sqlite` (one durable file, full sync), `sqlite-process` (synced at
    /// checkpoints) or `memory`.
    #[arg(long, default_value = "sqlite")]
    store: String,
    /// How long the model takes to answer each call, in milliseconds, on
    /// top of the mock (0: at once). With an instant model every
    /// conversation is always ready for rein, so the step overhead is the
    /// queue for rein's CPU; a model that takes time, as real ones do,
    /// leaves rein idle between calls.
    #[arg(long, default_value_t = 0)]
    model_ms: u64,
}

/// A provider that bounds the calls in flight and records, for one
/// conversation, the gap between one call's end and the next call's start.
struct Timed {
    inner: Arc<dyn Provider>,
    gate: Arc<Semaphore>,
    last_end: Arc<Mutex<Option<Instant>>>,
    gaps: Arc<Mutex<Vec<Duration>>>,
    think: Duration,
}

impl Provider for Timed {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    fn stream(&self, request: Request) -> EventStream {
        let now = Instant::now();
        if let Some(end) = self.last_end.lock().ok().and_then(|mut l| l.take())
            && let Ok(mut gaps) = self.gaps.lock()
        {
            gaps.push(now - end);
        }
        let inner = self.inner.clone();
        let gate = self.gate.clone();
        let last_end = self.last_end.clone();
        let think = self.think;
        Box::pin(async_stream::stream! {
            // The wait for a place is inside the call, not in the gap.
            let permit = gate.acquire_owned().await.ok();
            if !think.is_zero() {
                tokio::time::sleep(think).await;
            }
            let mut events = inner.stream(request);
            while let Some(item) = events.next().await {
                yield item;
            }
            drop(permit);
            if let Ok(mut end) = last_end.lock() {
                *end = Some(Instant::now());
            }
        })
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)].as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn Store> = match cli.store.as_str() {
        "sqlite" | "sqlite-process" => {
            let durability = if cli.store == "sqlite" {
                Durability::Full
            } else {
                Durability::Process
            };
            Arc::new(SqliteStore::open_with(dir.path().join("rein.db"), durability).await?)
        }
        "memory" => Arc::new(MemoryStore::new()),
        other => bail!("unknown store `{other}`"),
    };
    let http: Arc<dyn Provider> = Arc::new(mock_provider(cli.port)?);
    let gate = Arc::new(Semaphore::new(cli.in_flight.max(1)));
    let gaps = Arc::new(Mutex::new(Vec::new()));

    // Warm up the connection pool and the code paths (not measured).
    {
        let (backend, _) = add_backend()?;
        let mut conv = Conversation::open(
            store.clone(),
            http.clone(),
            Arc::new(backend),
            profile(),
            None,
        )
        .await?;
        conv.turn(&prompt(1)).await?;
        conv.close().await?;
    }
    let rss_before = rss_now_mb();
    let (u0, s0, _, _) = usage();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..cli.conversations {
        let store = store.clone();
        let provider = Arc::new(Timed {
            inner: http.clone(),
            gate: gate.clone(),
            last_end: Arc::new(Mutex::new(None)),
            gaps: gaps.clone(),
            think: Duration::from_millis(cli.model_ms),
        });
        let steps = cli.steps;
        tasks.spawn(async move {
            let (backend, _) = add_backend()?;
            let mut conv =
                Conversation::open(store, provider, Arc::new(backend), profile(), None).await?;
            let outcome = conv.turn(&prompt(steps)).await?;
            match outcome {
                TurnOutcome::Finished { reply }
                    if reply.contains(&format!("done: {steps} steps")) =>
                {
                    Ok::<_, anyhow::Error>(conv)
                }
                other => bail!("a conversation ended {other:?}"),
            }
        });
    }
    // Every conversation stays open (holding its session) once its turn is done.
    let mut open = Vec::with_capacity(cli.conversations);
    while let Some(joined) = tasks.join_next().await {
        open.push(joined??);
    }
    let active = started.elapsed().as_secs_f64();
    let (u1, s1, _, _) = usage();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss_idle = rss_now_mb();
    let (_, _, peak, _) = usage();
    let total_steps = (cli.conversations * (cli.steps + 1)) as f64;
    // Per conversation: turn.started, run.started, per call model.requested
    // and model.completed, per step tool.called and tool.result,
    // turn.finished, run.finished, session creation aside.
    let mut events = 0u64;
    for conv in &mut open {
        events += conv.log_events().await?.len() as u64;
    }
    let mut sorted = gaps.lock().map(|g| g.clone()).unwrap_or_default();
    sorted.sort();
    let cpu = (u1 - u0) + (s1 - s0);
    let record = json!({
        "conversations": cli.conversations,
        "steps_each": cli.steps,
        "in_flight": cli.in_flight,
        "store": cli.store,
        "model_ms": cli.model_ms,
        "active_s": active,
        "cpu_s": cpu,
        "cpu_per_step_ms": cpu / total_steps * 1e3,
        "step_overhead_p50_ms": percentile(&sorted, 0.50),
        "step_overhead_p99_ms": percentile(&sorted, 0.99),
        "events": events,
        "events_per_s": events as f64 / active,
        "rss_before_mb": rss_before,
        "rss_idle_mb": rss_idle,
        "peak_rss_mb": peak,
        "kib_per_idle_conversation": (rss_idle - rss_before) * 1024.0 / cli.conversations as f64,
    });
    println!("{record}");
    for conv in open {
        conv.close().await?;
    }
    Ok(())
}
