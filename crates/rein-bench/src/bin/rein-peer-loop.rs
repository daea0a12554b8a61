//! One measured rein run of the peer benchmark's scripted loop: a fresh
//! process, a warm-up run of 2 steps, the mock's counters reset, then the
//! measured run of N steps; one JSON line in the shape of the peers'
//! `bench.py`.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Parser;
use rein_bench::{
    MockStats, add_backend, mock_get, mock_provider, profile, prompt, rss_now_mb, usage,
};
use rein_gateway::Provider;
use rein_runner::{Conversation, TurnOutcome};
use rein_sessions::{MemoryStore, SqliteStore, Store};
use serde_json::json;

/// The allocator the `rein` binary runs on (feature `mimalloc`, on by
/// default), so a figure here is what the binary does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "rein-peer-loop")]
struct Cli {
    /// Tool-loop steps (N + 1 model requests).
    #[arg(long, default_value_t = 50)]
    n: usize,
    /// The mock's port.
    #[arg(long, default_value_t = 18080)]
    port: u16,
    /// `sqlite` (a durable file, full sync) or `memory` (no persistence).
    #[arg(long, default_value = "memory")]
    store: String,
    /// Steps of the warm-up run.
    #[arg(long, default_value_t = 2)]
    warmup: usize,
}

/// One agent run of `n` steps: the answer and when each `add` ran.
async fn run_once(
    store: Arc<dyn Store>,
    provider: Arc<dyn Provider>,
    n: usize,
) -> Result<(String, Vec<Instant>)> {
    let (backend, times) = add_backend()?;
    let mut conv = Conversation::open(store, provider, Arc::new(backend), profile(), None).await?;
    conv.agent.budgets.max_steps = u32::try_from(n + 10).unwrap_or(u32::MAX);
    let outcome = conv.turn(&prompt(n)).await?;
    conv.close().await?;
    let TurnOutcome::Finished { reply } = outcome else {
        bail!("the run ended {outcome:?}");
    };
    if !reply.contains(&format!("done: {n} steps")) {
        bail!("the answer was {reply:?}");
    }
    let times = times.lock().map(|t| t.clone()).unwrap_or_default();
    Ok((reply, times))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let rss_start = rss_now_mb();
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn Store> = match cli.store.as_str() {
        "sqlite" => Arc::new(SqliteStore::open(dir.path().join("rein.db")).await?),
        "memory" => Arc::new(MemoryStore::new()),
        other => bail!("unknown store `{other}` (sqlite or memory)"),
    };

    // Built once, as the peers build their client and agent once.
    let provider: Arc<dyn Provider> = Arc::new(mock_provider(cli.port)?);
    // After the provider: it installs the TLS crypto provider reqwest needs.
    let http = reqwest::Client::new();

    let (u0, s0, _, _) = usage();
    let t0 = Instant::now();
    run_once(store.clone(), provider.clone(), cli.warmup).await?;
    let warm_wall = t0.elapsed().as_secs_f64();
    let (u1, s1, peak_before, _) = usage();
    let rss_warm = rss_now_mb();

    mock_get(&http, cli.port, "/reset").await?;
    let (u_a, s_a, _, ctx_a) = usage();
    let t = Instant::now();
    let (_, backend_times) = run_once(store.clone(), provider, cli.n).await?;
    let wall = t.elapsed().as_secs_f64();
    let (u_b, s_b, peak, ctx_b) = usage();
    let (user, sys, ctx) = (u_b - u_a, s_b - s_a, ctx_b - ctx_a);
    let stats: MockStats = serde_json::from_str(&mock_get(&http, cli.port, "/stats").await?)
        .context("the mock's /stats is not what was expected")?;
    if backend_times.len() != cli.n {
        bail!("add ran {} times, not {}", backend_times.len(), cli.n);
    }
    if stats.requests != cli.n as u64 + 1 {
        bail!(
            "the mock saw {} requests, not {}",
            stats.requests,
            cli.n + 1
        );
    }
    let requests = stats.requests as f64;
    let gaps: Vec<f64> = (1..backend_times.len())
        .map(|i| {
            (backend_times[i] - backend_times[i - 1]).as_secs_f64()
                - stats.per_request.get(i).map_or(0.0, |r| r.server_s)
        })
        .collect();
    let (slope, intercept) = least_squares(&gaps);
    let q = (gaps.len() / 10).max(1);
    let mean = |xs: &[f64]| {
        if xs.is_empty() {
            f64::NAN
        } else {
            xs.iter().sum::<f64>() / xs.len() as f64
        }
    };
    let cpu = user + sys;
    let record = json!({
        "fw": if cli.store == "sqlite" { "rein+sqlite" } else { "rein" },
        "mode": "stream",
        "n": cli.n,
        "requests": stats.requests,
        "import_s": 0.0,
        "warmup_wall_s": warm_wall,
        "warmup_cpu_s": (u1 - u0) + (s1 - s0),
        "wall_s": wall,
        "cpu_s": cpu,
        "cpu_user_s": user,
        "cpu_sys_s": sys,
        "mock_s": stats.server_s,
        "mock_parse_s": stats.parse_s,
        "bytes_sent": stats.bytes_in,
        "last_req_bytes": stats.per_request.last().map_or(0, |r| r.bytes),
        "overhead_per_step_ms": (wall - stats.server_s) / requests * 1e3,
        "cpu_per_step_ms": cpu / requests * 1e3,
        "gap_first10pct_ms": mean(&gaps[..q.min(gaps.len())]) * 1e3,
        "gap_last10pct_ms": mean(&gaps[gaps.len().saturating_sub(q)..]) * 1e3,
        "gap_slope_us_per_step": slope * 1e6,
        "gap_intercept_ms": intercept * 1e3,
        "rss_after_import_mb": rss_start,
        "rss_after_warmup_mb": rss_warm,
        "rss_end_mb": rss_now_mb(),
        "peak_rss_mb": peak,
        "peak_rss_growth_mb": peak - peak_before,
        "vol_ctx_switches": ctx,
    });
    println!("{record}");
    Ok(())
}

/// Slope and intercept of `ys` against their index.
fn least_squares(ys: &[f64]) -> (f64, f64) {
    if ys.len() < 3 {
        return (f64::NAN, f64::NAN);
    }
    let n = ys.len() as f64;
    let mx = (n - 1.0) / 2.0;
    let my = ys.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in ys.iter().enumerate() {
        let dx = i as f64 - mx;
        sxy += dx * (y - my);
        sxx += dx * dx;
    }
    let slope = sxy / sxx;
    (slope, my - slope * mx)
}
