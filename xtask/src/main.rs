//! rein's maintainer tasks: `cargo xtask lint | test | eval | ci | golden | bench | fuzz | chaos | sandbox`.
//!
//! Each task is a sequence of cargo commands; the first failure stops it
//! with that command's exit status.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

mod circles;
mod criterion_summary;
mod docs;
mod events;
mod files;
mod fuzz;
mod links;
mod map;
mod peers;
mod readme;
mod recall;
mod sandbox;
mod scale;

#[derive(Debug, Parser)]
#[command(name = "xtask", about = "rein's maintainer tasks")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// rustfmt check, the map (floors, code map, file listing) true to the code, clippy -D warnings on all targets, rustdoc warnings, every crate packaged, no unused dependency (cargo-machete), cargo-deny's bans, licences and sources (both installed when missing).
    Lint,
    /// The test suite (cargo-nextest when installed, else cargo test), doc tests included.
    Test,
    /// Lint, test, the offline evals against their baseline, 50 chaos
    /// trials, the sandbox escape suite every way, a fuzz smoke run: what CI
    /// runs (the golden replay is part of the tests).
    Ci,
    /// Run the eval suites in tests/evals (offline by default); arguments go
    /// to `rein-eval` (`--provider`, `--base-url`, `--model`, `--baseline`, ...).
    Eval {
        /// Arguments for rein-eval.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Write the floors diagram of docs/ARCHITECTURE.md from the crates'
    /// dependencies and docs/reference/files.md from every source file's
    /// doc comment, docs/reference/events.md from the event types (`lint` checks both, and that the code map has each
    /// crate and its invariant).
    Map,
    /// Replay the golden traces in tests/golden through the runner.
    Golden {
        /// Rewrite them from the scenarios' scripted models (after a reviewed change).
        #[arg(long)]
        bless: bool,
    },
    /// Run the criterion benchmarks and write their summary table (and the
    /// scale and recall benchmarks') to docs/BENCHMARKS.md; with `--peers`, run rein
    /// beside the Python agent SDKs instead.
    Bench {
        /// Only benchmarks whose names contain this (the tables are then not
        /// rewritten); `scale` runs only the scale benchmark, `recall` only
        /// the memory search's.
        filter: Option<String>,
        /// Run the side-by-side with the peer SDKs (../shared/bench/peers).
        #[arg(long)]
        peers: bool,
        /// Steps per peer run.
        #[arg(long, value_delimiter = ',', default_value = "50,200,500")]
        ns: Vec<usize>,
        /// Repetitions of each peer configuration.
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// Frameworks of the peer run.
        #[arg(long, value_delimiter = ',', default_value = peers::DEFAULT_FRAMEWORKS)]
        frameworks: Vec<String>,
        /// The mock's port for the peer run.
        #[arg(long, default_value_t = 18093)]
        port: u16,
        /// Also run rein as built at this git revision, beside each rein
        /// framework (`rein@REV`): before and after in one run.
        #[arg(long)]
        before: Option<String>,
    },
    /// Run every fuzz target in fuzz/ (cargo fuzz, nightly; installed when
    /// missing) for a bounded time each, seeded from the wire captures and
    /// the repository's files; fails on any crash.
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 60)]
        secs: u64,
        /// Only this target.
        #[arg(long)]
        target: Option<String>,
        /// Build unoptimised: about half the build time, slower runs.
        #[arg(long)]
        dev: bool,
    },
    /// The sandbox escape suite as one run: every escape test of
    /// rein-sandbox without and inside bubblewrap, as root and as nobody
    /// (when run as root), each in a process of its own; fails on any failure.
    Sandbox,
    /// The crash campaign (crates/rein-chaos): scripted conversations killed
    /// with SIGKILL at random points, resumed and checked; fails on any
    /// broken promise. Arguments go to `rein-chaos` (`--trials`, `--seed`,
    /// `--kills`, `--out`).
    Chaos {
        /// Arguments for rein-chaos.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let root = workspace_root()?;
    std::env::set_current_dir(&root).context("cannot enter the workspace root")?;
    match cli.task {
        Task::Lint => lint(),
        Task::Map => {
            map::write()?;
            events::write()?;
            files::write(&map::crates()?)
        }
        Task::Test => test(),
        Task::Ci => {
            ONE_PASS.store(true, Ordering::Relaxed);
            check_fixtures(&root)?;
            ensure_postgres()?;
            lint()?;
            test()?;
            eval(&["--baseline".to_owned(), EVAL_BASELINE.to_owned()])?;
            chaos(&["--trials".to_owned(), CI_CHAOS_TRIALS.to_owned()])?;
            sandbox::run(&root)?;
            fuzz::run(
                &root,
                &fuzz::Options {
                    secs: CI_FUZZ_SECS,
                    only: None,
                    dev: true,
                },
            )
        }
        Task::Fuzz { secs, target, dev } => fuzz::run(
            &root,
            &fuzz::Options {
                secs,
                only: target.as_deref(),
                dev,
            },
        ),
        Task::Eval { args } => eval(&args),
        Task::Chaos { args } => chaos(&args),
        Task::Sandbox => sandbox::run(&root),
        Task::Golden { bless } => {
            let env: &[(&str, &str)] = if bless {
                &[("REIN_GOLDEN_BLESS", "1")]
            } else {
                &[]
            };
            cargo(
                &["test", "--locked", "-p", "rein-runner", "--test", "golden"],
                env,
            )
        }
        Task::Bench {
            peers: true,
            ns,
            reps,
            frameworks,
            port,
            before,
            ..
        } => peers::bench(
            &root,
            &peers::Options {
                ns,
                reps,
                frameworks,
                port,
                before,
            },
        ),
        Task::Bench { filter, .. } => bench(&root, filter.as_deref()),
    }
}

/// Seconds each fuzz target runs in CI: a smoke run, seeded.
const CI_FUZZ_SECS: u64 = 10;

/// The eval report CI compares against (`cargo xtask eval --write-baseline`
/// refreshes it after a reviewed change).
const EVAL_BASELINE: &str = "tests/eval_baseline.json";

/// SIGKILL trials in CI: the short form of `cargo xtask chaos` (1,000).
const CI_CHAOS_TRIALS: &str = "50";

fn chaos(args: &[String]) -> Result<()> {
    let mut all = vec!["run", "--locked", "-q", "-p", "rein-chaos", "--"];
    all.extend(args.iter().map(String::as_str));
    cargo(&all, &[])
}

fn eval(args: &[String]) -> Result<()> {
    let mut all = vec!["run", "--locked", "-q", "-p", "rein-eval", "--"];
    all.extend(args.iter().map(String::as_str));
    cargo(&all, &[])
}

fn bench(root: &Path, filter: Option<&str>) -> Result<()> {
    if filter == Some("scale") {
        return scale::bench(root, 18094);
    }
    if filter == Some("recall") {
        return recall::bench(root);
    }
    let machine = docs::machine_line();
    let mut args = vec!["bench", "--workspace", "--locked"];
    if let Some(filter) = filter {
        args.extend(["--", filter]);
    }
    cargo(&args, &[])?;
    if filter.is_some() {
        return Ok(());
    }
    let table = criterion_summary::table(root)?;
    println!("{table}");
    let body = format!(
        "Measured {machine}, with `cargo xtask bench` (criterion, release profile with debug info; means).\n\n{table}"
    );
    docs::replace_section(&root.join(docs::BENCHMARKS), "criterion", &body)?;
    scale::bench(root, 18094)?;
    recall::bench(root)?;
    eprintln!("xtask: wrote the tables to {}", docs::BENCHMARKS);
    Ok(())
}

fn workspace_root() -> Result<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map(Path::to_path_buf)
        .context("xtask has no parent directory")
}

fn lint() -> Result<()> {
    cargo(&["fmt", "--all", "--", "--check"], &[])?;
    map::check()?;
    files::check(&map::crates()?)?;
    events::check()?;
    circles::check()?;
    readme::check()?;
    links::check()?;
    cargo(
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    cargo(
        &["doc", "--workspace", "--no-deps", "--locked"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    // Every crate packages as it stands (path dependencies carry their
    // versions; a test-only dependency on a crate that depends back is a
    // path alone, left out of the package). The fuzz targets are never
    // published.
    cargo(
        &[
            "package",
            "--workspace",
            "--exclude",
            "rein-fuzz",
            "--no-verify",
            "--locked",
            "--allow-dirty",
        ],
        &[],
    )?;
    // No crate declares a dependency it never uses (cargo-shear needs a
    // newer rustc than the pinned one; machete reads the sources).
    ensure_cargo_tool("machete", CARGO_MACHETE)?;
    machete()?;
    // The advisory database needs the network; the rest of deny.toml is
    // checked on every run.
    ensure_cargo_tool("deny", CARGO_DENY)?;
    cargo(
        &[
            "deny",
            "check",
            "--hide-inclusion-graph",
            "bans",
            "licenses",
            "sources",
        ],
        &[],
    )
}

/// The cargo-deny release `lint` installs when it is missing.
const CARGO_DENY: &str = "0.20.2";

/// `cargo machete` over the workspace. Run under `cargo run` (as xtask
/// is), machete takes the package variables cargo set for xtask as a sign
/// it was called by its own name and reads its arguments as paths: they
/// are taken out.
fn machete() -> Result<()> {
    eprintln!("xtask: cargo machete --skip-target-dir");
    let status = cargo_command()
        .args(["machete", "--skip-target-dir"])
        .env_remove("CARGO_PKG_NAME")
        .env_remove("CARGO_MANIFEST_DIR")
        .status()
        .context("cannot run cargo machete")?;
    if !status.success() {
        bail!("cargo machete found a dependency no crate uses ({status})");
    }
    Ok(())
}

/// The cargo-machete release `lint` installs when it is missing.
const CARGO_MACHETE: &str = "0.9.2";

/// `cargo NAME` (the crate `cargo-NAME`), installed at `version` when it
/// is missing: CI never skips a check for want of its tool.
pub(crate) fn ensure_cargo_tool(name: &str, version: &str) -> Result<()> {
    if has_cargo_subcommand(name) {
        return Ok(());
    }
    let krate = format!("cargo-{name}");
    eprintln!("xtask: installing {krate} {version}");
    cargo(&["install", "--locked", &krate, "--version", version], &[])
}

fn test() -> Result<()> {
    if has_cargo_subcommand("nextest") {
        cargo(
            &[
                "nextest",
                "run",
                "--workspace",
                "--locked",
                "--no-fail-fast",
            ],
            &[],
        )?;
    } else {
        cargo(&["test", "--workspace", "--locked", "--no-fail-fast"], &[])?;
    }
    // nextest does not run doc tests.
    cargo(&["test", "--workspace", "--locked", "--doc"], &[])?;
    examples()
}

/// Run every example of the facade: they are the programs a product copies,
/// so each must work, offline (without `REIN_BASE_URL` they use the
/// scripted model, or the `testing` feature's fake server; each asserts
/// what it shows).
fn examples() -> Result<()> {
    let mut names: Vec<String> = std::fs::read_dir("crates/rein/examples")
        .context("cannot list crates/rein/examples")?
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            (path.extension()? == "rs").then(|| path.file_stem()?.to_str().map(str::to_owned))?
        })
        .collect();
    names.sort();
    for name in &names {
        let status = cargo_command()
            .args([
                "run",
                "--locked",
                "-q",
                "-p",
                "rein-harness",
                "--features",
                "testing,compose",
            ])
            .args(["--example", name])
            .env_remove("REIN_BASE_URL")
            .env_remove("REIN_MODEL")
            .status()
            .with_context(|| format!("cannot run the example {name}"))?;
        if !status.success() {
            bail!("the example {name} failed ({status})");
        }
    }
    eprintln!("xtask: {} examples ran: {}", names.len(), names.join(", "));
    Ok(())
}

/// Where the wire captures are: `REIN_WIRE_FIXTURES`, else beside the
/// project.
pub(crate) fn wire_fixtures(root: &Path) -> PathBuf {
    std::env::var_os("REIN_WIRE_FIXTURES")
        .map_or_else(|| root.join("../shared/fixtures/wire"), PathBuf::from)
}

/// CI must never skip the wire-capture tests for want of their folder.
fn check_fixtures(root: &Path) -> Result<()> {
    let dir = wire_fixtures(root);
    if !dir.join("README.md").is_file() {
        bail!(
            "the wire captures are not at {} (set REIN_WIRE_FIXTURES); CI must not skip them",
            dir.display()
        );
    }
    Ok(())
}

/// The PostgreSQL tests start a throwaway server from the machine's
/// binaries: install Debian's `postgresql` when they are missing (CI sets
/// `REIN_REQUIRE_POSTGRES`, so its tests never skip).
fn ensure_postgres() -> Result<()> {
    let found = || {
        std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|versions| {
            versions
                .flatten()
                .any(|v| v.path().join("bin/postgres").is_file())
        })
    };
    if found() {
        return Ok(());
    }
    eprintln!("xtask: no PostgreSQL binaries; installing Debian's postgresql");
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let mut install = if root {
        Command::new("apt-get")
    } else {
        let mut sudo = Command::new("sudo");
        sudo.arg("apt-get");
        sudo
    };
    let updated = Command::new(if root { "apt-get" } else { "sudo" })
        .args(if root {
            &["update", "-q"][..]
        } else {
            &["apt-get", "update", "-q"][..]
        })
        .status();
    let installed = install
        .args([
            "install",
            "-y",
            "-q",
            "--no-install-recommends",
            "postgresql",
        ])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status();
    if found() {
        return Ok(());
    }
    if std::env::var_os("REIN_REQUIRE_POSTGRES").is_some() {
        bail!(
            "PostgreSQL is needed by the tests and could not be installed \
             (apt-get update: {updated:?}, install: {installed:?})"
        );
    }
    eprintln!("xtask: PostgreSQL could not be installed; its tests will say they skipped");
    Ok(())
}

fn has_cargo_subcommand(name: &str) -> bool {
    cargo_command()
        .args([name, "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Set by `ci`: the build is made once from scratch, so cargo keeps no
/// incremental caches. They were the difference between a clean clone's
/// run fitting CI's disk and not (the fuzz build, last, found it full).
static ONE_PASS: AtomicBool = AtomicBool::new(false);

/// `cargo`, as every task runs it: in `ci`, without incremental caches
/// unless the caller chose otherwise.
pub(crate) fn cargo_command() -> Command {
    let mut command = Command::new("cargo");
    if ONE_PASS.load(Ordering::Relaxed) && std::env::var_os("CARGO_INCREMENTAL").is_none() {
        command.env("CARGO_INCREMENTAL", "0");
    }
    command
}

pub(crate) fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    eprintln!("xtask: cargo {}", args.join(" "));
    let status = cargo_command()
        .args(args)
        .envs(env.iter().copied())
        .status()
        .with_context(|| format!("cannot run cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}
