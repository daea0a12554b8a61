//! `recall` over a large memory: fills a fresh `SqliteMemory` file with
//! `--items` items spread over `--scopes` scopes (12 words each from a
//! 5,000-word vocabulary, deterministic), then times `--queries` searches
//! of two words in one scope, as the `recall` tool makes them (at most 5
//! results). Prints one JSON line: the fill's time, the file's size, and
//! the search latency's p50, p99 and max.

use std::time::Instant;

use anyhow::Result;
use clap::Parser;
use rein_memory::{Limits, MemoryBank, NewMemory, Scope, SqliteMemory};
use serde_json::json;

/// The allocator the `rein` binary runs on (feature `mimalloc`, on by
/// default), so a figure here is what the binary does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "rein-recall")]
struct Cli {
    /// Items in the file.
    #[arg(long, default_value_t = 100_000)]
    items: usize,
    /// Scopes they are spread over (searches go to the first).
    #[arg(long, default_value_t = 1)]
    scopes: usize,
    /// Searches timed.
    #[arg(long, default_value_t = 2_000)]
    queries: usize,
}

/// A small deterministic generator (xorshift), so every run searches the
/// same file.
struct Words(u64);

impl Words {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// One of 5,000 words, the low ones far more common (as in text).
    fn word(&mut self) -> String {
        let a = self.next() % 5_000;
        let b = self.next() % 5_000;
        format!("w{}", a.min(b))
    }

    fn sentence(&mut self, words: usize) -> String {
        (0..words)
            .map(|_| self.word())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(at).copied().unwrap_or(f64::NAN)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("memory.db");
    let per_scope = cli.items.div_ceil(cli.scopes.max(1));
    let limits = Limits {
        max_items: per_scope.max(1),
        ..Limits::default()
    };
    let store = SqliteMemory::open_with(&path, limits).await?;
    let mut words = Words(0x9E37_79B9_7F4A_7C15);
    let scopes: Vec<Scope> = (0..cli.scopes.max(1))
        .map(|n| Scope::new(&format!("person:user{n}")))
        .collect::<Result<_, _>>()?;
    let filled = Instant::now();
    let mut left = cli.items;
    // Scope by scope, a thousand items a transaction.
    for scope in &scopes {
        let mut mine = per_scope.min(left);
        left -= mine;
        while mine > 0 {
            let batch = mine.min(1_000);
            mine -= batch;
            let items = (0..batch)
                .map(|_| NewMemory::text(&words.sentence(12)))
                .collect();
            store.remember_many(scope, items).await?;
        }
    }
    let fill_s = filled.elapsed().as_secs_f64();
    let mut times = Vec::with_capacity(cli.queries);
    let mut results = 0usize;
    for _ in 0..cli.queries {
        let query = words.sentence(2);
        let started = Instant::now();
        let found = store.search(&scopes[0], &query, 5).await?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        results += found.len();
    }
    times.sort_by(f64::total_cmp);
    let file_mb = std::fs::metadata(&path)?.len() as f64 / 1e6;
    println!(
        "{}",
        json!({
            "items": cli.items,
            "scopes": scopes.len(),
            "queries": cli.queries,
            "fill_s": fill_s,
            "file_mb": file_mb,
            "mean_results": results as f64 / cli.queries.max(1) as f64,
            "p50_ms": percentile(&times, 0.5),
            "p99_ms": percentile(&times, 0.99),
            "max_ms": times.last().copied().unwrap_or(f64::NAN),
        })
    );
    Ok(())
}
