//! rein past one process, on one PostgreSQL database (a throwaway server
//! that syncs every commit, or `--url`), with the `rein` binary built
//! beside this one (`--rein` names another):
//!
//! - **graph**: a graph of `--tasks` independent tasks (at most 10,000)
//!   submitted with `rein run --detach` and run by `--workers` `rein
//!   worker` processes (each running `--tasks-each` attempts at once) on
//!   the offline scripted model, which answers at once; timed from the
//!   submission until `rein run --watch` returns. Checks every task was
//!   completed exactly once.
//! - **servers**: `--conversations` conversations created round-robin on
//!   `--servers` `rein serve` processes, each posted one turn at once
//!   (the peers' mock on `--port` as the model: `--steps` tool calls a
//!   turn, which this server answers as unknown tools); timed until every
//!   turn finished. The step overhead (p50, p99) is read from the log:
//!   from one `model.completed` to the next `model.requested` of the same
//!   conversation, in whole milliseconds.
//!
//! Prints one JSON line per count. Measured, never asserted — except that
//! the work was done (every task once, every turn finished).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use futures::StreamExt;
use rein_sessions::PgStore;
use serde_json::json;
use sqlx::Row;

/// The allocator the `rein` binary runs on (feature `mimalloc`, on by
/// default), so a figure here is what the binary does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "rein-fleet")]
struct Cli {
    /// A database server to use instead of a throwaway one.
    #[arg(long, global = true)]
    url: Option<String>,
    /// The `rein` binary (default: beside this one).
    #[arg(long, global = true)]
    rein: Option<PathBuf>,
    #[command(subcommand)]
    job: Job,
}

#[derive(Debug, Subcommand)]
enum Job {
    /// One graph on several worker processes.
    Graph {
        /// Tasks in the graph.
        #[arg(long, default_value_t = 10_000)]
        tasks: usize,
        /// Worker process counts, one run each.
        #[arg(long, value_delimiter = ',', default_value = "1,4")]
        workers: Vec<usize>,
        /// Attempts each worker runs at once.
        #[arg(long, default_value_t = 16)]
        tasks_each: u16,
        /// The graph's `max_parallel`.
        #[arg(long, default_value_t = 64)]
        max_parallel: usize,
    },
    /// Many conversations on several server processes.
    Servers {
        /// Conversations, each posted one turn.
        #[arg(long, default_value_t = 1000)]
        conversations: usize,
        /// Server process counts, one run each.
        #[arg(long, value_delimiter = ',', default_value = "1,4")]
        servers: Vec<usize>,
        /// Tool calls in each turn.
        #[arg(long, default_value_t = 3)]
        steps: usize,
        /// The mock's port.
        #[arg(long, default_value_t = 18080)]
        port: u16,
    },
}

const TOKEN: &str = "fleet-bench-token-0123456789abcdef0123456789";

/// The processes a run started, killed when it ends however it ends.
struct Fleet(Vec<Child>);

impl Drop for Fleet {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `rein` with its own home and `--store database`.
fn rein(bin: &Path, home: &Path, database: &str) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env("REIN_HOME", home)
        .env_remove("REIN_STORE")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .args(["--store", database]);
    cmd
}

fn graph_toml(tasks: usize, max_parallel: usize) -> String {
    let mut text = format!("[graph]\nmax_parallel = {max_parallel}\n");
    for i in 0..tasks {
        text.push_str(&format!(
            "\n[[task]]\nid = \"t{i}\"\nbrief = \"Say hello {i}.\"\n"
        ));
    }
    text
}

async fn graph(
    bin: &Path,
    base: &str,
    tasks: usize,
    workers: &[usize],
    tasks_each: u16,
    max_parallel: usize,
) -> Result<()> {
    let home = tempfile::tempdir()?;
    let root = tempfile::tempdir()?;
    let file = home.path().join("graph.toml");
    std::fs::write(&file, graph_toml(tasks, max_parallel))?;
    for (run, &count) in workers.iter().enumerate() {
        let database = rein_bench::new_pg_database(base, &format!("graph{run}_{count}")).await?;
        let started = Instant::now();
        let submitted = rein(bin, home.path(), &database)
            .arg("run")
            .arg(&file)
            .arg("--detach")
            .output()?;
        if !submitted.status.success() {
            bail!(
                "rein run --detach: {}",
                String::from_utf8_lossy(&submitted.stderr)
            );
        }
        let id = String::from_utf8_lossy(&submitted.stdout).trim().to_owned();
        let mut fleet = Fleet(Vec::new());
        for _ in 0..count {
            fleet.0.push(
                rein(bin, home.path(), &database)
                    .args(["worker", "--scripted", "--tasks", &tasks_each.to_string()])
                    .arg("--root")
                    .arg(root.path())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()?,
            );
        }
        let watched = rein(bin, home.path(), &database)
            .args(["run", "--watch", &id])
            .stdout(Stdio::null())
            .output()?;
        let elapsed = started.elapsed().as_secs_f64();
        drop(fleet);
        if !watched.status.success() {
            bail!(
                "rein run --watch: {}",
                String::from_utf8_lossy(&watched.stderr)
            );
        }
        let store = PgStore::open(&database).await?;
        let attempts = store.queue().attempts(&id).await?;
        let once = attempts
            .iter()
            .filter(|(_, _, claims, state)| *claims == 1 && state == "done");
        if attempts.len() != tasks || once.count() != tasks {
            bail!(
                "{} attempts for {tasks} tasks; each must be completed once",
                attempts.len()
            );
        }
        let record = json!({
            "bench": "graph_on_workers",
            "tasks": tasks,
            "worker_processes": count,
            "tasks_each": tasks_each,
            "max_parallel": max_parallel,
            "elapsed_s": elapsed,
            "tasks_per_s": tasks as f64 / elapsed,
        });
        println!("{record}");
    }
    Ok(())
}

/// Start `rein serve` on the mock; its address.
fn serve(
    bin: &Path,
    home: &Path,
    root: &Path,
    database: &str,
    port: u16,
) -> Result<(Child, String)> {
    let mut child = rein(bin, home, database)
        .args(["serve", "--model", "gpt-4o-mini", "--base-url"])
        .arg(format!("http://127.0.0.1:{port}/v1"))
        .arg("--root")
        .arg(root)
        .env("REIN_SERVE_TOKEN", TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let err = child.stderr.take().context("the server's output")?;
    let mut lines = BufReader::new(err).lines();
    while let Some(line) = lines.next().transpose()? {
        if let Some(at) = line.find("http://") {
            let addr = line[at..]
                .split("/api/")
                .next()
                .unwrap_or_default()
                .to_owned();
            // Keep reading so the server never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            return Ok((child, addr));
        }
    }
    bail!("rein serve ended before it said its address")
}

/// Post one turn to a new conversation on `server`; its id.
async fn start_one(http: &reqwest::Client, server: &str, steps: usize) -> Result<String> {
    let id = rein_bench::new_conversation(http, server, TOKEN).await?;
    http.post(format!("{server}/api/conversations/{id}/turns"))
        .bearer_auth(TOKEN)
        .json(&json!({"text": format!("steps={steps}. Call add repeatedly until told otherwise.")}))
        .send()
        .await?
        .error_for_status()?;
    Ok(id)
}

/// The gaps from each `model.completed` to its conversation's next
/// `model.requested`, in milliseconds, sorted.
async fn step_overheads(pool: &sqlx::PgPool) -> Result<Vec<i64>> {
    let rows = sqlx::query(
        "SELECT session_id, kind, at_ms FROM events \
         WHERE kind IN ('model.requested', 'model.completed') ORDER BY session_id, seq",
    )
    .fetch_all(pool)
    .await?;
    let mut gaps = Vec::new();
    let mut last: Option<(String, i64)> = None;
    for row in rows {
        let session: String = row.try_get("session_id")?;
        let kind: String = row.try_get("kind")?;
        let at: i64 = row.try_get("at_ms")?;
        match kind.as_str() {
            "model.completed" => last = Some((session, at)),
            _ => {
                if let Some((before, end)) = last.take()
                    && before == session
                {
                    gaps.push(at - end);
                }
            }
        }
    }
    gaps.sort_unstable();
    Ok(gaps)
}

async fn servers(
    bin: &Path,
    base: &str,
    conversations: usize,
    counts: &[usize],
    steps: usize,
    port: u16,
) -> Result<()> {
    let home = tempfile::tempdir()?;
    let root = tempfile::tempdir()?;
    for (run, &count) in counts.iter().enumerate() {
        let database = rein_bench::new_pg_database(base, &format!("servers{run}_{count}")).await?;
        let mut fleet = Fleet(Vec::new());
        let mut addrs = Vec::new();
        for _ in 0..count {
            let (child, addr) = serve(bin, home.path(), root.path(), &database, port)?;
            fleet.0.push(child);
            addrs.push(addr);
        }
        let http = reqwest::Client::new();
        let started = Instant::now();
        // Posted 64 at a time: a server answers `503` past its bound on
        // requests at once, as it should.
        let posts = futures::stream::iter(0..conversations)
            .map(|i| {
                let (http, server) = (http.clone(), addrs[i % count].clone());
                async move { start_one(&http, &server, steps).await }
            })
            .buffer_unordered(64);
        let posted: Vec<Result<String>> = posts.collect().await;
        for result in posted {
            result?;
        }
        let pool = sqlx::PgPool::connect(&database).await?;
        let deadline = Instant::now() + Duration::from_secs(1800);
        loop {
            let finished: i64 =
                sqlx::query_scalar("SELECT count(*) FROM turns WHERE finished_seq IS NOT NULL")
                    .fetch_one(&pool)
                    .await?;
            if finished as usize >= conversations {
                break;
            }
            if Instant::now() > deadline {
                bail!("{finished} of {conversations} turns finished in 30 minutes");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let elapsed = started.elapsed().as_secs_f64();
        drop(fleet);
        let gaps = step_overheads(&pool).await?;
        let at = |p: f64| gaps.get(((gaps.len().max(1) - 1) as f64 * p).round() as usize);
        let record = json!({
            "bench": "conversations_on_servers",
            "conversations": conversations,
            "server_processes": count,
            "steps_each": steps,
            "elapsed_s": elapsed,
            "turns_per_s": conversations as f64 / elapsed,
            "step_overhead_p50_ms": at(0.5),
            "step_overhead_p99_ms": at(0.99),
            "steps_measured": gaps.len(),
        });
        println!("{record}");
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let bin = match cli.rein {
        Some(bin) => bin,
        None => std::env::current_exe()?.with_file_name("rein"),
    };
    if !bin.is_file() {
        bail!(
            "no rein binary at {} (build it: cargo build --release -p rein-cli)",
            bin.display()
        );
    }
    let (_server, base) = rein_bench::pg_server(cli.url.clone())?;
    match cli.job {
        Job::Graph {
            tasks,
            workers,
            tasks_each,
            max_parallel,
        } => graph(&bin, &base, tasks, &workers, tasks_each, max_parallel).await,
        Job::Servers {
            conversations,
            servers: counts,
            steps,
            port,
        } => servers(&bin, &base, conversations, &counts, steps, port).await,
    }
}
