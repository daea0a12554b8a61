//! `cargo xtask bench --peers`: rein beside the most-used Python agent SDKs
//! on the same scripted work, in one run on one machine.
//!
//! The peers' harness (`bench.py`, `mock_server.py`, `requirements.txt`) is
//! read in place from `../shared/bench/peers/` (or `REIN_PEERS_DIR`). The
//! SDKs are installed into a virtualenv under `target/`. rein's side is
//! `rein-peer-loop` (crate `rein-bench`), which prints the same JSON line.
//! Frameworks are interleaved within each repetition to spread drift.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::docs;

/// What to run.
pub struct Options {
    /// Steps per run.
    pub ns: Vec<usize>,
    /// Repetitions of each (framework, N).
    pub reps: usize,
    /// Frameworks: `rein`, `rein+sqlite`, and bench.py's names.
    pub frameworks: Vec<String>,
    /// The mock's port.
    pub port: u16,
    /// A git revision whose rein also runs, as `rein@REV` beside each rein
    /// framework.
    pub before: Option<String>,
}

/// The frameworks run by default.
pub const DEFAULT_FRAMEWORKS: &str =
    "rein,rein+sqlite,raw_httpx,raw,oai_agents,pydantic_ai,langchain";

pub(crate) fn peers_dir() -> PathBuf {
    std::env::var_os("REIN_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/bench/peers"))
}

/// The virtualenv with the peer SDKs, made (or refreshed when the
/// requirements changed) on demand.
fn venv(root: &Path, peers: &Path) -> Result<PathBuf> {
    let venv = root.join("target/peers-venv");
    let python = venv.join("bin/python");
    let requirements = peers.join("requirements.txt");
    let wanted = std::fs::read_to_string(&requirements)
        .with_context(|| format!("cannot read {}", requirements.display()))?;
    let stamp = venv.join(".rein-installed");
    if python.is_file() && std::fs::read_to_string(&stamp).is_ok_and(|s| s == wanted) {
        return Ok(python);
    }
    eprintln!("xtask: installing the peer SDKs into {}", venv.display());
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    run(Command::new(&python)
        .args(["-m", "pip", "install", "-q", "-r"])
        .arg(&requirements))?;
    std::fs::write(&stamp, wanted)?;
    Ok(python)
}

fn run(command: &mut Command) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot run {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed ({status})");
    }
    Ok(())
}

/// The mock, stopped when dropped.
pub(crate) struct Mock(Child);

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn start_mock(python: &Path, peers: &Path, port: u16) -> Result<Mock> {
    let mut child = Command::new(python)
        .arg(peers.join("mock_server.py"))
        .args(["--port", &port.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot start mock_server.py")?;
    let stdout = child.stdout.take().context("the mock has no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    if !line.contains("listening") {
        bail!("the mock did not start: {line:?}");
    }
    Ok(Mock(child))
}

/// rein's loop as built at `rev`, in a worktree of its own under
/// `target/peers-before/` (built once per revision).
fn build_before(root: &Path, rev: &str) -> Result<PathBuf> {
    let dir = root.join("target/peers-before");
    let src = dir.join("src");
    if src.exists() {
        run(Command::new("git")
            .arg("-C")
            .arg(&src)
            .args(["checkout", "-q", "--detach", rev]))?;
    } else {
        run(Command::new("git")
            .args(["worktree", "add", "-f", "--detach"])
            .arg(&src)
            .arg(rev))?;
    }
    run(crate::cargo_command()
        .current_dir(&src)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .args(["build", "--release", "--locked", "-p", "rein-bench"])
        .args(["--bin", "rein-peer-loop"]))?;
    Ok(dir.join("target/release/rein-peer-loop"))
}

/// The frameworks to run: `frameworks`, each rein one followed by its
/// `@rev` twin when a revision is compared.
fn with_before(frameworks: &[String], rev: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    for fw in frameworks {
        out.push(fw.clone());
        if let Some(rev) = rev
            && fw.starts_with("rein")
        {
            out.push(format!("{fw}@{rev}"));
        }
    }
    out
}

fn one_run(
    root: &Path,
    python: &Path,
    peers: &Path,
    framework: &str,
    n: usize,
    port: u16,
) -> Result<Value> {
    let output = if let Some(store) = framework.strip_prefix("rein") {
        let (store, binary) = match store.split_once('@') {
            Some((store, _)) => (
                store,
                root.join("target/peers-before/target/release/rein-peer-loop"),
            ),
            None => (store, root.join("target/release/rein-peer-loop")),
        };
        let store = if store == "+sqlite" {
            "sqlite"
        } else {
            "memory"
        };
        Command::new(binary)
            .args(["--n", &n.to_string(), "--port", &port.to_string()])
            .args(["--store", store])
            .output()
    } else {
        Command::new(python)
            .arg(peers.join("bench.py"))
            .args(["--fw", framework, "--n", &n.to_string()])
            .args(["--port", &port.to_string()])
            .output()
    }
    .with_context(|| format!("cannot run {framework}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{'));
    match (output.status.success(), line) {
        (true, Some(line)) => {
            let mut record: Value = serde_json::from_str(line)?;
            record["fw"] = Value::from(framework);
            Ok(record)
        }
        _ => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let cut = stderr.len().saturating_sub(800);
            let start = (cut..=stderr.len())
                .find(|&i| stderr.is_char_boundary(i))
                .unwrap_or(stderr.len());
            bail!("{framework} n={n} failed: {}", &stderr[start..])
        }
    }
}

/// Run the side-by-side and write its table.
pub fn bench(root: &Path, options: &Options) -> Result<()> {
    let peers = peers_dir();
    if !peers.join("bench.py").is_file() || !peers.join("mock_server.py").is_file() {
        bail!(
            "the peer benchmark is not at {} (set REIN_PEERS_DIR)",
            peers.display()
        );
    }
    let python = venv(root, &peers)?;
    crate::cargo(&["build", "--release", "--locked", "-p", "rein-bench"], &[])?;
    if let Some(rev) = &options.before {
        build_before(root, rev)?;
    }
    let frameworks = with_before(&options.frameworks, options.before.as_deref());
    let machine = docs::machine_line();
    let _mock = start_mock(&python, &peers, options.port)?;
    let out_dir = root.join("target/peers");
    std::fs::create_dir_all(&out_dir)?;
    let mut records: Vec<Value> = Vec::new();
    let mut failures = Vec::new();
    for &n in &options.ns {
        for rep in 0..options.reps {
            for framework in &frameworks {
                match one_run(root, &python, &peers, framework, n, options.port) {
                    Ok(record) => {
                        eprintln!(
                            "{framework:<14} n={n:<4} rep={rep} cpu/step={:.3} ms wall-mock/step={:.3} ms peak={:.0} MB",
                            record["cpu_per_step_ms"].as_f64().unwrap_or(f64::NAN),
                            record["overhead_per_step_ms"].as_f64().unwrap_or(f64::NAN),
                            record["peak_rss_mb"].as_f64().unwrap_or(f64::NAN),
                        );
                        records.push(record);
                    }
                    Err(err) => {
                        eprintln!("FAIL {err:#}");
                        failures.push(format!("{err:#}"));
                    }
                }
            }
        }
    }
    let lines: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(out_dir.join("results.jsonl"), lines)?;
    let table = summarize(&records, &frameworks, &options.ns);
    println!("{table}");
    let body = format!(
        "Measured {machine}, with `cargo xtask bench --peers{}`{} (N = {}, {} repetitions, frameworks interleaved; raw records in `target/peers/results.jsonl`). Medians; client CPU per step is the main metric.\n\n{table}",
        options
            .before
            .as_ref()
            .map(|rev| format!(" --before {rev}"))
            .unwrap_or_default(),
        options
            .before
            .as_ref()
            .map(|rev| format!(
                "; `rein@{rev}` is rein as built at that commit, run beside this one"
            ))
            .unwrap_or_default(),
        options
            .ns
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        options.reps
    );
    docs::replace_section(&root.join(docs::BENCHMARKS), "peers", &body)?;
    eprintln!("xtask: wrote the table to {}", docs::BENCHMARKS);
    if !failures.is_empty() {
        bail!("{} run(s) failed", failures.len());
    }
    Ok(())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

fn med(records: &[&Value], key: &str) -> f64 {
    median(records.iter().filter_map(|r| r[key].as_f64()).collect())
}

/// The side-by-side table: medians per framework and N, and each one's
/// client CPU per step as a multiple of rein's.
pub fn summarize(records: &[Value], frameworks: &[String], ns: &[usize]) -> String {
    let pick = |fw: &str, n: usize| -> Vec<&Value> {
        records
            .iter()
            .filter(|r| r["fw"].as_str() == Some(fw) && r["n"].as_u64() == Some(n as u64))
            .collect()
    };
    let mut out = String::from(
        "| framework | N | runs | CPU ms/step | wall−mock ms/step | step gap first→last 10% (ms) | slope µs/step | peak RSS MB | request KB (last) | CPU/step ÷ rein | ÷ rein+sqlite |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for &n in ns {
        let base = med(&pick("rein", n), "cpu_per_step_ms");
        let durable = med(&pick("rein+sqlite", n), "cpu_per_step_ms");
        for fw in frameworks {
            let rs = pick(fw, n);
            if rs.is_empty() {
                continue;
            }
            let cpu = med(&rs, "cpu_per_step_ms");
            out.push_str(&format!(
                "| {fw} | {n} | {} | {cpu:.2} | {:.2} | {:.2} → {:.2} | {:.0} | {:.0} | {:.0} ({:.1}) | {:.1}× | {:.1}× |\n",
                rs.len(),
                med(&rs, "overhead_per_step_ms"),
                med(&rs, "gap_first10pct_ms"),
                med(&rs, "gap_last10pct_ms"),
                med(&rs, "gap_slope_us_per_step"),
                med(&rs, "peak_rss_mb"),
                med(&rs, "bytes_sent") / 1024.0,
                med(&rs, "last_req_bytes") / 1024.0,
                cpu / base,
                cpu / durable,
            ));
        }
    }
    // How each framework's per-step cost grows with history.
    if let (Some(first), Some(last)) = (ns.first(), ns.last())
        && first != last
    {
        out.push_str(&format!(
            "\nGrowth of CPU per step from N = {first} to N = {last}: "
        ));
        let parts: Vec<String> = frameworks
            .iter()
            .filter_map(|fw| {
                let a = med(&pick(fw, *first), "cpu_per_step_ms");
                let b = med(&pick(fw, *last), "cpu_per_step_ms");
                (a.is_finite() && b.is_finite()).then(|| format!("{fw} {:.1}×", b / a))
            })
            .collect();
        out.push_str(&parts.join(", "));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn the_table_has_medians_and_ratios() {
        let rec = |fw: &str, n: usize, cpu: f64| {
            serde_json::json!({"fw": fw, "n": n, "cpu_per_step_ms": cpu, "overhead_per_step_ms": cpu,
                "gap_first10pct_ms": 1.0, "gap_last10pct_ms": 2.0, "gap_slope_us_per_step": 3.0,
                "peak_rss_mb": 10.0, "bytes_sent": 2048.0, "last_req_bytes": 1024.0})
        };
        let records = vec![
            rec("rein", 50, 0.5),
            rec("rein", 50, 0.7),
            rec("rein", 50, 0.6),
            rec("rein+sqlite", 50, 1.2),
            rec("raw", 50, 12.0),
        ];
        let fws: Vec<String> = ["rein", "rein+sqlite", "raw"].map(String::from).to_vec();
        let table = summarize(&records, &fws, &[50]);
        assert!(table.contains("| rein | 50 | 3 | 0.60 |"), "{table}");
        assert!(table.contains("| raw | 50 | 1 | 12.00 |"), "{table}");
        assert!(table.contains("| 20.0× | 10.0× |"), "{table}");
    }
}
