//! `rein-chaos`: the crash campaign (`cargo xtask chaos`). A scripted
//! conversation over rein's real file tools and a real SQLite store —
//! reads, an approved change, a refused delete, a batch of reads, a new
//! file, a compaction, three turns — is run in a child process killed with
//! SIGKILL at random instants, reopened and resumed until it finishes, and
//! checked against an uninterrupted run: no lost or partial event, every
//! call answered once, no change run twice, every decision the person's.
//!
//! Not here: the scripted parts are one conversation over the library; the
//! surfaces (`rein serve`, `rein mcp serve`), sub-agents, graphs, hosted
//! agents and sandboxed commands are not yet in the campaign
//! (`docs/RELIABILITY.md` says which are).

mod campaign;
mod check;
mod child;
mod counted;
mod model;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The crash campaign.
#[derive(Parser)]
#[command(
    name = "rein-chaos",
    about = "Kill scripted conversations at random points; resume; check"
)]
struct Args {
    #[command(subcommand)]
    what: Option<What>,
    /// How many trials.
    #[arg(long, default_value_t = 1000)]
    trials: u32,
    /// The random seed for the kill points (default: from the clock; printed).
    #[arg(long)]
    seed: Option<u64>,
    /// The most SIGKILLs in one trial (each draws 1 to this many).
    #[arg(long, default_value_t = 3)]
    kills: u32,
    /// Where the summary (`summary.md`) and failed trials' folders go.
    #[arg(long, default_value = "target/chaos")]
    out: PathBuf,
}

#[derive(Subcommand)]
enum What {
    /// One process of a trial (run by the campaign itself).
    #[command(hide = true)]
    Child {
        /// The trial's folder.
        dir: PathBuf,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("rein-chaos: no runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(What::Child { dir }) = args.what {
        return match rt.block_on(child::run(&dir)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("rein-chaos child: {err:#}");
                ExitCode::FAILURE
            }
        };
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let options = campaign::Options {
        trials: args.trials,
        seed,
        kills: args.kills,
        out: args.out,
    };
    eprintln!(
        "rein-chaos: {} trials, seed {seed}, up to {} kills each",
        options.trials, options.kills
    );
    let figures = match campaign::run(&options, &rt) {
        Ok(figures) => figures,
        Err(err) => {
            eprintln!("rein-chaos: {err:#}");
            return ExitCode::FAILURE;
        }
    };
    let summary = campaign::summary(&options, &figures);
    let path = options.out.join("summary.md");
    if let Err(err) = std::fs::write(&path, &summary) {
        eprintln!(
            "rein-chaos: the summary could not be written to {}: {err}",
            path.display()
        );
    }
    println!("{summary}");
    if figures.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
