//! The scale benchmark: 1,000 and 10,000 conversations in one process
//! against the peer benchmark's mock (`rein-scale`, crate `rein-bench`).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::{docs, peers};

/// Conversation counts measured.
const COUNTS: [usize; 2] = [1_000, 10_000];

/// Run it and write its table.
pub fn bench(root: &Path, port: u16) -> Result<()> {
    let dir = peers::peers_dir();
    if !dir.join("mock_server.py").is_file() {
        bail!(
            "the peer benchmark's mock is not at {} (set REIN_PEERS_DIR)",
            dir.display()
        );
    }
    crate::cargo(&["build", "--release", "--locked", "-p", "rein-bench"], &[])?;
    let machine = docs::machine_line();
    let _mock = peers::start_mock(Path::new("python3"), &dir, port)?;
    let mut rows = Vec::new();
    for store in ["sqlite", "memory"] {
        for count in COUNTS {
            eprintln!("xtask: rein-scale --conversations {count} --store {store}");
            let mut command = Command::new(root.join("target/release/rein-scale"));
            command.args(["--conversations", &count.to_string()]).args([
                "--port",
                &port.to_string(),
                "--store",
                store,
            ]);
            rows.push(record_of(command, "rein-scale")?);
        }
    }
    let table = table(&rows);
    println!("{table}");
    let body = format!(
        "Measured {machine}, with `cargo xtask bench scale`: each conversation runs one turn of 3 tool steps against `mock_server.py` (at most 64 model calls in flight), then all stay open and idle in one process.\n\n{table}"
    );
    docs::replace_section(&root.join(docs::BENCHMARKS), "scale", &body)
}

fn table(rows: &[Value]) -> String {
    let mut out = String::from(
        "| conversations | store | KiB per idle conversation | idle RSS MB | CPU ms/step | step overhead p50 / p99 ms | events appended/s | active phase s |\n|---:|---|---:|---:|---:|---:|---:|---:|\n",
    );
    let f = |r: &Value, k: &str| r[k].as_f64().unwrap_or(f64::NAN);
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {:.1} | {:.0} | {:.3} | {:.2} / {:.2} | {:.0} | {:.1} |\n",
            r["conversations"],
            r["store"].as_str().unwrap_or(""),
            f(r, "kib_per_idle_conversation"),
            f(r, "rss_idle_mb"),
            f(r, "cpu_per_step_ms"),
            f(r, "step_overhead_p50_ms"),
            f(r, "step_overhead_p99_ms"),
            f(r, "events_per_s"),
            f(r, "active_s"),
        ));
    }
    out
}

/// Run a benchmark binary (`name`, for errors) and take its record: the
/// last line of its output that is a JSON object.
pub(crate) fn record_of(mut command: Command, name: &str) -> Result<Value> {
    let output = command
        .output()
        .with_context(|| format!("cannot run {name}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let Some(line) = stdout.lines().rev().find(|l| l.starts_with('{')) else {
        bail!("{name} failed: {}", String::from_utf8_lossy(&output.stderr));
    };
    let record: Value = serde_json::from_str(line)?;
    eprintln!("{record}");
    Ok(record)
}
