//! The PostgreSQL store from several processes at once, on a server that
//! syncs every commit (PostgreSQL's defaults, `rein_testing::postgres::
//! durable_server`, or `--url`):
//!
//! - **appends**: for each count of writer processes (`--writers 1,4,16`),
//!   each process holds `--sessions` conversations of its own and appends
//!   one event at a time to each as fast as the store answers, for
//!   `--seconds`. Reports appends per second over all processes and the
//!   latency of one append (p50, p99).
//! - **claims**: for each count of worker processes (`--workers 1,4,16`),
//!   `--tasks` task attempts are offered, then each process fills its
//!   `--places` (1 by default) — in one claim, or with
//!   `--one-claim-a-place` one claim each, as workers did before claims
//!   were batched — completes them at once and asks again until none is
//!   left. Reports the time to fill the places (p50, p99) and tasks
//!   completed per second.
//!
//! Each count gets a database of its own. The processes are this binary
//! again (hidden subcommands); each prints one JSON line of its figures.
//! Prints one JSON line per count. Measured, never asserted — except that
//! every task was completed exactly once.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use rein_sessions::{Event, NewEvent, PgStore, Store};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The allocator the `rein` binary runs on (feature `mimalloc`, on by
/// default), so a figure here is what the binary does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "rein-pg")]
struct Cli {
    /// A database server to use instead of a throwaway one (each count
    /// gets a new database made with `createdb`-like SQL on it).
    #[arg(long, global = true)]
    url: Option<String>,
    #[command(subcommand)]
    command: Job,
}

#[derive(Debug, Subcommand)]
enum Job {
    /// Appends per second with several writer processes.
    Appends {
        /// Writer process counts, one run each.
        #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
        writers: Vec<usize>,
        /// Conversations appended to at once in each process.
        #[arg(long, default_value_t = 8)]
        sessions: usize,
        /// How long each run appends.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
    },
    /// Claim latency with several worker processes.
    Claims {
        /// Worker process counts, one run each.
        #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
        workers: Vec<usize>,
        /// Task attempts offered per run.
        #[arg(long, default_value_t = 2000)]
        tasks: usize,
        /// Tasks each worker process holds at once.
        #[arg(long, default_value_t = 1)]
        places: usize,
        /// Fill the places one claim each (not one claim for all).
        #[arg(long)]
        one_claim_a_place: bool,
    },
    /// One writer process (run by `appends`).
    #[command(hide = true)]
    AppendChild {
        #[arg(long)]
        database: String,
        #[arg(long)]
        sessions: usize,
        #[arg(long)]
        seconds: u64,
    },
    /// One worker process (run by `claims`).
    #[command(hide = true)]
    ClaimChild {
        #[arg(long)]
        database: String,
        #[arg(long)]
        places: usize,
        #[arg(long)]
        one_claim_a_place: bool,
    },
}

/// What one child process measured.
#[derive(Debug, Serialize, Deserialize)]
struct ChildFigures {
    /// Operations done.
    done: u64,
    /// Each operation's latency, in microseconds.
    latencies_us: Vec<u64>,
}

fn event(i: u64) -> NewEvent {
    NewEvent::main(Event::ToolResult {
        call_id: format!("call-{i}"),
        status: rein_sessions::ToolStatus::Ok,
        source: rein_sessions::ResultSource::Live,
        content: json!({"text": "a typical small tool result, about a hundred bytes of JSON text in all."}),
        artifact: None,
        operation_id: None,
        undo: false,
        duration_ms: 3,
        seen: None,
    })
}

async fn append_child(database: &str, sessions: usize, seconds: u64) -> Result<ChildFigures> {
    let store = std::sync::Arc::new(PgStore::open(database).await?);
    let holder = format!("bench-{}", std::process::id());
    let mut leases = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let id = store.create_session(json!({})).await?.id;
        leases.push(
            store
                .acquire(&id, &holder, Duration::from_secs(3600))
                .await?,
        );
    }
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for lease in leases {
        let store = store.clone();
        tasks.spawn(async move {
            let mut latencies = Vec::new();
            let mut i = 0;
            while Instant::now() < deadline {
                let started = Instant::now();
                store.append(&lease, vec![event(i)]).await?;
                latencies.push(started.elapsed().as_micros() as u64);
                i += 1;
            }
            Ok::<_, anyhow::Error>(latencies)
        });
    }
    let mut figures = ChildFigures {
        done: 0,
        latencies_us: Vec::new(),
    };
    while let Some(joined) = tasks.join_next().await {
        let latencies = joined??;
        figures.done += latencies.len() as u64;
        figures.latencies_us.extend(latencies);
    }
    Ok(figures)
}

async fn claim_child(database: &str, places: usize, one_by_one: bool) -> Result<ChildFigures> {
    let store = PgStore::open(database).await?;
    let queue = store.queue();
    let holder = format!("worker-{}", std::process::id());
    let ttl = Duration::from_secs(60);
    let mut figures = ChildFigures {
        done: 0,
        latencies_us: Vec::new(),
    };
    loop {
        let started = Instant::now();
        let tasks = if one_by_one {
            let mut tasks = Vec::new();
            while tasks.len() < places {
                let Some(task) = queue.claim_task(&holder, ttl).await? else {
                    break;
                };
                tasks.push(task);
            }
            tasks
        } else {
            queue.claim_tasks(&holder, ttl, places).await?
        };
        if tasks.is_empty() {
            break;
        }
        figures
            .latencies_us
            .push(started.elapsed().as_micros() as u64);
        let completed = futures::future::try_join_all(
            tasks
                .iter()
                .map(|task| queue.complete(&task.claim, true, "done")),
        )
        .await?;
        if completed.contains(&false) {
            bail!("a claim held by this worker was refused its result");
        }
        figures.done += tasks.len() as u64;
    }
    Ok(figures)
}

/// Run `count` children with `args`, wait for all, and gather their figures.
fn run_children(count: usize, args: &[String]) -> Result<(Vec<ChildFigures>, f64)> {
    let me = std::env::current_exe()?;
    let started = Instant::now();
    let mut children = Vec::with_capacity(count);
    for _ in 0..count {
        children.push(
            Command::new(&me)
                .args(args)
                .stdout(Stdio::piped())
                .spawn()?,
        );
    }
    let mut figures = Vec::with_capacity(count);
    for mut child in children {
        let out = child.stdout.take().context("a child's output")?;
        let mut line = String::new();
        BufReader::new(out).read_line(&mut line)?;
        if !child.wait()?.success() {
            bail!("a child process failed");
        }
        figures.push(serde_json::from_str(&line)?);
    }
    Ok((figures, started.elapsed().as_secs_f64()))
}

fn percentile_ms(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)] as f64 / 1e3
}

/// Every child's latencies, sorted, and the operations done in all.
fn merged(figures: Vec<ChildFigures>) -> (Vec<u64>, u64) {
    let done = figures.iter().map(|f| f.done).sum();
    let mut all: Vec<u64> = figures.into_iter().flat_map(|f| f.latencies_us).collect();
    all.sort_unstable();
    (all, done)
}

async fn appends(base: &str, writers: &[usize], sessions: usize, seconds: u64) -> Result<()> {
    for (run, &count) in writers.iter().enumerate() {
        let database = rein_bench::new_pg_database(base, &format!("appends{run}_{count}")).await?;
        let args = [
            "append-child",
            "--database",
            &database,
            "--sessions",
            &sessions.to_string(),
            "--seconds",
            &seconds.to_string(),
        ]
        .map(String::from);
        let (figures, _) = run_children(count, &args)?;
        let (sorted, done) = merged(figures);
        let record = json!({
            "bench": "pg_appends",
            "writer_processes": count,
            "sessions_each": sessions,
            "seconds": seconds,
            "appends": done,
            "appends_per_s": done as f64 / seconds as f64,
            "append_p50_ms": percentile_ms(&sorted, 0.50),
            "append_p99_ms": percentile_ms(&sorted, 0.99),
        });
        println!("{record}");
    }
    Ok(())
}

async fn claims(
    base: &str,
    workers: &[usize],
    tasks: usize,
    places: usize,
    one_by_one: bool,
) -> Result<()> {
    for (run, &count) in workers.iter().enumerate() {
        let database = rein_bench::new_pg_database(base, &format!("claims{run}_{count}")).await?;
        let store = PgStore::open(&database).await?;
        let graph = store.create_session(json!({"bench": "claims"})).await?.id;
        let queue = store.queue();
        for task in 0..tasks {
            queue.enqueue(&graph, &format!("t{task}"), 0, "{}").await?;
        }
        let mut args = vec![
            "claim-child".to_owned(),
            "--database".to_owned(),
            database.clone(),
            "--places".to_owned(),
            places.max(1).to_string(),
        ];
        if one_by_one {
            args.push("--one-claim-a-place".to_owned());
        }
        let (figures, elapsed) = run_children(count, &args)?;
        let (sorted, done) = merged(figures);
        let attempts = queue.attempts(&graph).await?;
        let once = attempts
            .iter()
            .all(|(_, _, claims, state)| *claims == 1 && state == "done");
        if done != tasks as u64 || attempts.len() != tasks || !once {
            bail!("{done} of {tasks} tasks completed; each must be completed once");
        }
        let record = json!({
            "bench": "pg_claims",
            "worker_processes": count,
            "tasks": tasks,
            "places": places.max(1),
            "one_claim_a_place": one_by_one,
            "elapsed_s": elapsed,
            "tasks_per_s": done as f64 / elapsed,
            "fill_p50_ms": percentile_ms(&sorted, 0.50),
            "fill_p99_ms": percentile_ms(&sorted, 0.99),
        });
        println!("{record}");
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let child = |figures: ChildFigures| -> Result<()> {
        println!("{}", serde_json::to_string(&figures)?);
        Ok(())
    };
    match &cli.command {
        Job::AppendChild {
            database,
            sessions,
            seconds,
        } => return child(append_child(database, *sessions, *seconds).await?),
        Job::ClaimChild {
            database,
            places,
            one_claim_a_place,
        } => return child(claim_child(database, *places, *one_claim_a_place).await?),
        _ => {}
    }
    let (_server, base) = rein_bench::pg_server(cli.url.clone())?;
    match cli.command {
        Job::Appends {
            writers,
            sessions,
            seconds,
        } => appends(&base, &writers, sessions, seconds).await,
        Job::Claims {
            workers,
            tasks,
            places,
            one_claim_a_place,
        } => claims(&base, &workers, tasks, places, one_claim_a_place).await,
        Job::AppendChild { .. } | Job::ClaimChild { .. } => Ok(()),
    }
}
