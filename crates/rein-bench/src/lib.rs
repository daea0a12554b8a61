//! rein's end-to-end benchmarks, shared pieces.
//!
//! - `rein-peer-loop` runs the scripted loop of `../shared/bench/peers/`
//!   (the peer SDKs' benchmark) with rein's own client, against that folder's
//!   `mock_server.py`, and prints one JSON line in the same shape as its
//!   `bench.py`, so `cargo xtask bench --peers` can set the two side by side.
//! - `rein-scale` holds many conversations in one process against the same
//!   mock and reports memory per idle conversation, CPU per step and step
//!   overhead percentiles.
//! - `rein-recall` fills a memory file with many items and times `recall`'s
//!   search (p50, p99).
//!
//! These are benchmarks: they measure and print; they assert only that the
//! work was done right (the answer, the number of calls).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use rein_approvals::PermissionClass;
use rein_gateway::{ApiKey, HttpProvider, ProviderConfig, RetryPolicy, WireApi};
use rein_runner::{Profile, ToolLoading};
use rein_tools::{Outcome, Registry, Tool, ToolContext};
use serde::Deserialize;
use serde_json::json;

/// The peers' system prompt.
pub const INSTRUCTIONS: &str = "You are a calculator agent. Use the add tool as instructed.";

/// The first user message: the mock reads N from it.
pub fn prompt(n: usize) -> String {
    format!("steps={n}. Call add repeatedly until told otherwise.")
}

/// The arguments of `add`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct AddInput {
    /// The first integer.
    pub a: i64,
    /// The second integer.
    pub b: i64,
}

/// `add(a, b)`, recording when each call ran.
pub struct Add {
    /// When each call ran.
    pub times: Arc<Mutex<Vec<Instant>>>,
}

impl Tool for Add {
    type Input = AddInput;
    fn name(&self) -> &str {
        "add"
    }
    fn description(&self) -> &str {
        "Add two integers."
    }
    fn permission(&self, _: &AddInput) -> PermissionClass {
        PermissionClass::Read
    }
    async fn invoke(&self, input: AddInput, _: &ToolContext) -> Outcome {
        if let Ok(mut times) = self.times.lock() {
            times.push(Instant::now());
        }
        Outcome::ok(json!(input.a.saturating_add(input.b)))
    }
}

/// A backend with only `add`, and the call times it records.
pub fn add_backend() -> anyhow::Result<(Registry, Arc<Mutex<Vec<Instant>>>)> {
    let times = Arc::new(Mutex::new(Vec::new()));
    let registry = Registry::new().with(Add {
        times: times.clone(),
    })?;
    Ok((registry, times))
}

/// The profile every benchmark conversation uses.
pub fn profile() -> Profile {
    Profile {
        max_output_tokens: 256,
        tools: ToolLoading::Native,
        ..Profile::new("bench", "gpt-4o-mini").with_system(INSTRUCTIONS)
    }
}

/// rein's OpenAI Chat provider pointed at the mock on `port`, streaming,
/// no retries (as the peers are run).
pub fn mock_provider(port: u16) -> anyhow::Result<HttpProvider> {
    let mut config = ProviderConfig::new(WireApi::OpenAiChat)
        .with_base_url(format!("http://127.0.0.1:{port}/v1"))
        .with_api_key(ApiKey::new("sk-mock"));
    config.offline = Some(false);
    config.retry = RetryPolicy::none();
    Ok(HttpProvider::new(config)?)
}

/// Process CPU (user, system) in seconds and peak RSS in MiB.
pub fn usage() -> (f64, f64, f64, i64) {
    use nix::sys::resource::{UsageWho, getrusage};
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => {
            let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
            (
                secs(u.user_time()),
                secs(u.system_time()),
                u.max_rss() as f64 / 1024.0,
                u.voluntary_context_switches(),
            )
        }
        Err(_) => (0.0, 0.0, 0.0, 0),
    }
}

/// Resident memory now, in MiB (from `/proc/self/statm`).
pub fn rss_now_mb() -> f64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map_or(0.0, |pages| pages * 4096.0 / (1024.0 * 1024.0))
}

/// The mock's counters.
#[derive(Debug, Clone, Deserialize)]
pub struct MockStats {
    /// Requests answered.
    pub requests: u64,
    /// Its own time over all requests.
    pub server_s: f64,
    /// Of which JSON parsing.
    pub parse_s: f64,
    /// Request bytes received.
    pub bytes_in: u64,
    /// Per request.
    pub per_request: Vec<MockRequest>,
}

/// One request as the mock saw it.
#[derive(Debug, Clone, Deserialize)]
pub struct MockRequest {
    /// Its body's bytes.
    pub bytes: u64,
    /// The mock's time for it.
    pub server_s: f64,
}

/// GET `/stats` or `/reset` from the mock.
pub async fn mock_get(client: &reqwest::Client, port: u16, path: &str) -> anyhow::Result<String> {
    Ok(client
        .get(format!("http://127.0.0.1:{port}{path}"))
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?)
}

/// The PostgreSQL server a benchmark runs on: `url` when given (a URL
/// naming a database the benchmark may create others beside), else a
/// throwaway server of its own that syncs every commit. Keep the first
/// value alive for the benchmark's length.
pub fn pg_server(
    url: Option<String>,
) -> anyhow::Result<(Option<rein_testing::postgres::Server>, String)> {
    match url {
        Some(url) => Ok((None, url)),
        None => {
            let server = rein_testing::postgres::durable_server().ok_or_else(|| {
                anyhow::anyhow!("no PostgreSQL binaries here; install `postgresql` or pass --url")
            })?;
            let base = server.url("postgres");
            Ok((Some(server), base))
        }
    }
}

/// A new, empty database `name` beside the one `base` names, migrated to
/// rein's schema; its URL.
pub async fn new_pg_database(base: &str, name: &str) -> anyhow::Result<String> {
    use sqlx::Connection;
    let mut admin = sqlx::PgConnection::connect(base).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await?;
    let (prefix, _) = base
        .rsplit_once('/')
        .ok_or_else(|| anyhow::anyhow!("the URL names no database"))?;
    let url = format!("{prefix}/{name}");
    // Migrated once here, before many processes race to.
    drop(rein_sessions::PgStore::open(&url).await?);
    Ok(url)
}

/// A new conversation on the server at `server` (`http://ADDR`) with
/// bearer `token`; its id.
pub async fn new_conversation(
    http: &reqwest::Client,
    server: &str,
    token: &str,
) -> anyhow::Result<String> {
    let created: serde_json::Value = http
        .post(format!("{server}/api/conversations"))
        .bearer_auth(token)
        .json(&json!({}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    created["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("the new conversation has no id: {created}"))
}
