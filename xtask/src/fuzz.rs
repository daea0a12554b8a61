//! `cargo xtask fuzz`: every target in `fuzz/` for a bounded time each,
//! seeded from the wire captures and the repository's own files, with the
//! figures (executions, corpus, crashes) written to `target/fuzz/summary.md`.
//!
//! It installs what it needs when it is missing (`cargo-fuzz`, pinned; the
//! nightly toolchain), builds the targets once (debug assertions on, no
//! sanitizer: rein has no `unsafe`; optimised, or unoptimised with `dev` —
//! CI's smoke run, which builds in about half the time), and fails when any
//! target crashed, hung or broke an invariant — the input is kept under
//! `target/fuzz/artifacts/TARGET/`.
//!
//! Not here: the targets (`fuzz/fuzz_targets/`), or regression tests for
//! what they found (beside the parser that broke).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The cargo-fuzz release this installs when it is missing.
const CARGO_FUZZ: &str = "0.13.2";

/// Where each target's seeds come from: directories of the wire captures
/// (under `../shared/fixtures/wire`) or of the repository, and whether a
/// seed gets a leading chunk-size byte (targets that cut their input).
struct Seeds {
    target: &'static str,
    wire: &'static [&'static str],
    repo: &'static [&'static str],
    prefix: Option<u8>,
}

const TARGETS: &[Seeds] = &[
    Seeds {
        target: "sse_frames",
        wire: &[
            "sse-edge-cases",
            "anthropic-messages",
            "openai-chat",
            "openai-responses",
        ],
        repo: &[],
        prefix: Some(63),
    },
    Seeds {
        target: "decode_anthropic",
        wire: &["anthropic-messages"],
        repo: &[],
        prefix: Some(63),
    },
    Seeds {
        target: "decode_openai_chat",
        wire: &["openai-chat"],
        repo: &[],
        prefix: Some(63),
    },
    Seeds {
        target: "decode_openai_responses",
        wire: &["openai-responses"],
        repo: &[],
        prefix: Some(63),
    },
    Seeds {
        target: "claude_stream_json",
        wire: &["claude-code-stream-json"],
        repo: &[],
        prefix: None,
    },
    Seeds {
        target: "codex_stream",
        wire: &[],
        repo: &[],
        prefix: None,
    },
    Seeds {
        target: "acp_stream",
        wire: &[],
        repo: &[],
        prefix: None,
    },
    Seeds {
        target: "canonical_json",
        wire: &["sse-edge-cases"],
        repo: &[],
        prefix: None,
    },
    Seeds {
        target: "golden_import",
        wire: &[],
        repo: &["tests/golden"],
        prefix: None,
    },
    Seeds {
        target: "store_event",
        wire: &[],
        repo: &[],
        prefix: None,
    },
    Seeds {
        target: "eval_suite",
        wire: &[],
        repo: &["tests/evals"],
        prefix: Some(0),
    },
    Seeds {
        target: "graph_toml",
        wire: &[],
        repo: &["examples"],
        prefix: None,
    },
    Seeds {
        target: "jsonrpc_lines",
        wire: &["mcp/transcripts"],
        repo: &[],
        prefix: None,
    },
    Seeds {
        target: "mcp_config",
        wire: &[],
        repo: &["examples"],
        prefix: None,
    },
    Seeds {
        target: "agents_config",
        wire: &[],
        repo: &["examples"],
        prefix: None,
    },
    Seeds {
        target: "command_policy",
        wire: &[],
        repo: &["examples"],
        prefix: None,
    },
    Seeds {
        target: "server_requests",
        wire: &[],
        repo: &[],
        prefix: None,
    },
];

/// How one target's run went.
struct Ran {
    target: &'static str,
    executions: u64,
    corpus: usize,
    crashed: bool,
}

/// How a run builds and runs the targets.
pub(crate) struct Options<'a> {
    /// Seconds per target.
    pub(crate) secs: u64,
    /// Only this target.
    pub(crate) only: Option<&'a str>,
    /// Build unoptimised (faster to build, slower to run).
    pub(crate) dev: bool,
}

/// Run every target (or the one named) for `secs` seconds each.
pub(crate) fn run(root: &Path, options: &Options<'_>) -> Result<()> {
    let Options { secs, only, dev } = *options;
    let targets: Vec<&Seeds> = TARGETS
        .iter()
        .filter(|s| only.is_none_or(|name| s.target == name))
        .collect();
    if targets.is_empty() {
        bail!("no fuzz target is named {}", only.unwrap_or_default());
    }
    ensure_tools()?;
    let work = root.join("target/fuzz");
    let profile: &[&str] = if dev { &["--dev"] } else { &[] };
    fuzz(root, &[&["build", "-s", "none", "-a"], profile].concat())?;
    let mut ran = Vec::new();
    for seeds in targets {
        let seeded = seed(root, &work, seeds)?;
        let corpus = work.join("corpus").join(seeds.target);
        std::fs::create_dir_all(&corpus)?;
        let artifacts = work.join("artifacts").join(seeds.target);
        std::fs::create_dir_all(&artifacts)?;
        let dirs = Dirs {
            corpus: &corpus,
            seeds: &seeded,
            artifacts: &artifacts,
        };
        ran.push(run_one(root, seeds.target, &dirs, profile, secs)?);
    }
    let table = summary(&ran, secs);
    std::fs::write(work.join("summary.md"), &table)?;
    println!("{table}");
    let crashed: Vec<&str> = ran.iter().filter(|r| r.crashed).map(|r| r.target).collect();
    if !crashed.is_empty() {
        bail!(
            "fuzz targets failed: {} (inputs under target/fuzz/artifacts/)",
            crashed.join(", ")
        );
    }
    Ok(())
}

/// cargo-fuzz and the nightly toolchain, installed when missing.
fn ensure_tools() -> Result<()> {
    let nightly = Command::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !nightly {
        eprintln!("xtask: installing the nightly toolchain for cargo fuzz");
        let status = Command::new("rustup")
            .args(["toolchain", "install", "nightly", "--profile", "minimal"])
            .status()?;
        if !status.success() {
            bail!("cannot install the nightly toolchain ({status})");
        }
    }
    crate::ensure_cargo_tool("fuzz", CARGO_FUZZ)
}

/// `cargo +nightly fuzz ARGS` in the repository.
fn fuzz(root: &Path, args: &[&str]) -> Result<()> {
    eprintln!("xtask: cargo +nightly fuzz {}", args.join(" "));
    let status = crate::cargo_command()
        .arg("+nightly")
        .arg("fuzz")
        .args(args)
        .current_dir(root)
        .env_remove("RUSTUP_TOOLCHAIN")
        .status()
        .context("cannot run cargo fuzz")?;
    if !status.success() {
        bail!("cargo fuzz {} failed ({status})", args.join(" "));
    }
    Ok(())
}

/// Write the target's seeds afresh: its own under `fuzz/seeds/TARGET`, and
/// the files of its wire and repository directories.
fn seed(root: &Path, work: &Path, seeds: &Seeds) -> Result<PathBuf> {
    let dir = work.join("seeds").join(seeds.target);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let wire = crate::wire_fixtures(root);
    let mut sources: Vec<PathBuf> = vec![root.join("fuzz/seeds").join(seeds.target)];
    sources.extend(seeds.wire.iter().map(|d| wire.join(d)));
    sources.extend(seeds.repo.iter().map(|d| root.join(d)));
    let mut n = 0usize;
    for source in sources {
        let Ok(entries) = std::fs::read_dir(&source) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for file in files.into_iter().filter(|f| f.is_file()) {
            let mut bytes = Vec::new();
            bytes.extend(seeds.prefix);
            bytes.extend(std::fs::read(&file)?);
            std::fs::write(dir.join(format!("seed-{n:04}")), bytes)?;
            n += 1;
        }
    }
    if n == 0 {
        // libFuzzer starts from nothing then; say so (the wire captures
        // are missing, most likely).
        eprintln!(
            "xtask: the fuzz target {} has no seeds (are the wire captures at {}?)",
            seeds.target,
            wire.display()
        );
    }
    Ok(dir)
}

/// A target's folders: its growing corpus (written), its seeds (read) and
/// where a failing input is kept.
struct Dirs<'a> {
    corpus: &'a Path,
    seeds: &'a Path,
    artifacts: &'a Path,
}

/// Run one target for `secs` seconds; what libFuzzer reported.
fn run_one(
    root: &Path,
    target: &'static str,
    dirs: &Dirs<'_>,
    profile: &[&str],
    secs: u64,
) -> Result<Ran> {
    eprintln!("xtask: fuzzing {target} for {secs} s");
    let output = crate::cargo_command()
        .args(["+nightly", "fuzz", "run", "-s", "none", "-a"])
        .args(profile)
        .arg(target)
        .arg(dirs.corpus)
        .arg(dirs.seeds)
        .arg("--")
        .arg(format!("-max_total_time={secs}"))
        .arg(format!("-artifact_prefix={}/", dirs.artifacts.display()))
        .args([
            "-timeout=20",
            "-rss_limit_mb=2048",
            "-max_len=65536",
            "-print_final_stats=1",
        ])
        .current_dir(root)
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .with_context(|| format!("cannot run the fuzz target {target}"))?;
    let log = String::from_utf8_lossy(&output.stderr);
    let crashed = !output.status.success();
    if crashed {
        let tail: Vec<&str> = log.lines().rev().take(60).collect();
        eprintln!(
            "xtask: {target} failed:\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    Ok(Ran {
        target,
        executions: stat(&log, "stat::number_of_executed_units:").unwrap_or(0),
        corpus: std::fs::read_dir(dirs.corpus).map_or(0, |d| d.count()),
        crashed,
    })
}

/// A number libFuzzer printed after `key`.
fn stat(log: &str, key: &str) -> Option<u64> {
    log.lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.trim().parse().ok())
}

fn summary(ran: &[Ran], secs: u64) -> String {
    let mut table =
        format!("| target ({secs} s each) | executions | corpus | result |\n|---|---:|---:|---|\n");
    for r in ran {
        table.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            r.target,
            r.executions,
            r.corpus,
            if r.crashed { "**failed**" } else { "ok" }
        ));
    }
    let total: u64 = ran.iter().map(|r| r.executions).sum();
    table.push_str(&format!("| all | {total} | | |\n"));
    table
}
