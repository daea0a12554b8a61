//! The `rein-chaos` program: the campaign's command line, a trial's child
//! process (`rein-chaos child DIR`), and the sandbox's helper for the
//! scripted command (this binary is its own).
//!
//! Not here: the campaign itself (the library, `rein_chaos`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rein_chaos::{campaign, child};

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
    /// Check a trial's folder (a failed one the campaign kept, say) and say
    /// what broke.
    Check {
        /// The trial's folder.
        dir: PathBuf,
    },
}

fn main() -> ExitCode {
    // The campaign's sandboxed command: this binary is its own helper.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == rein_sandbox::helper::HELPER_ARG)
    {
        rein_sandbox::helper::main();
    }
    // A hosted trial's keeper of Claude Code: this binary too.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == rein_host::keeper::KEEPER_ARG)
    {
        rein_host::keeper::main();
    }
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
        let helper = match std::env::current_exe() {
            Ok(exe) => exe,
            Err(err) => {
                eprintln!("rein-chaos child: this program's path: {err}");
                return ExitCode::FAILURE;
            }
        };
        return match rt.block_on(child::run(&dir, &helper)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("rein-chaos child: {err:#}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(What::Check { dir }) = args.what {
        return match rt.block_on(rein_chaos::check::trial(&dir)) {
            Ok(story) => {
                println!("whole: {} results interrupted", story.interrupted());
                ExitCode::SUCCESS
            }
            Err(broken) => {
                for b in broken {
                    println!("- {b}");
                }
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
