//! The campaign: one uninterrupted run for reference, then trials, each
//! killed with SIGKILL at random instants (one to `--kills` times) and run
//! again until it finishes, then checked (`check`). The figures go to a
//! summary; a failed trial's folder is kept for a person to read.
//!
//! Not here: what a process does (`child`) or what must hold (`check`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use crate::check::{self, Story};
use crate::child::{Surface, root_path};

/// A run that has not finished in this long is hung: a failure.
const HUNG: Duration = Duration::from_secs(120);

/// What a campaign runs.
pub struct Options {
    /// How many trials.
    pub trials: u32,
    /// The random seed (kill points); the same seed, the same points.
    pub seed: u64,
    /// The most kills in one trial (each trial draws 1 to this many).
    pub kills: u32,
    /// Where the summary and failed trials' folders go.
    pub out: PathBuf,
}

/// What a campaign found.
#[derive(Debug, Default)]
pub struct Figures {
    /// Trials run.
    pub trials: u32,
    /// SIGKILLs that landed on a running process.
    pub kills: u32,
    /// Runs that finished before their kill was due.
    pub outran: u32,
    /// Results recorded as interrupted (a call cut short by a kill).
    pub interrupted: usize,
    /// Of those, sandboxed commands cut short (killed with rein).
    pub commands_interrupted: usize,
    /// Of those, tasks handed to a sub-agent cut short.
    pub delegations_interrupted: usize,
    /// Of the trials, those driven through `rein serve`'s API.
    pub served: u32,
    /// Of the trials, those run as a task graph.
    pub graphs: u32,
    /// Of the trials, those whose calls an MCP client made of `rein mcp
    /// serve`.
    pub mcp: u32,
    /// Of the trials, those hosting Claude Code.
    pub hosted: u32,
    /// Hosted runs closed by the next process after their driver was
    /// killed.
    pub closed_dead: usize,
    /// Questions of those runs stopped with them.
    pub stopped_questions: usize,
    /// Each surface's uninterrupted run's wall time.
    pub references: Vec<(Surface, Duration)>,
    /// The whole campaign's wall time.
    pub wall: Duration,
    /// Each failed trial: its number and what broke.
    pub failures: Vec<(u32, Vec<String>)>,
}

/// A small deterministic generator (SplitMix64): the kill points.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Run the campaign.
pub fn run(options: &Options, rt: &tokio::runtime::Runtime) -> anyhow::Result<Figures> {
    let started = Instant::now();
    std::fs::create_dir_all(&options.out)?;
    let work = tempfile::tempdir()?;
    let mut figures = Figures::default();
    // The hosted trials' Claude Code, installed once (pinned) before any
    // trial's process looks for it.
    rein_testing::clis::claude_code();
    // One uninterrupted run per surface: each trial is held to its own.
    let mut references = Vec::new();
    for surface in Surface::ALL {
        let dir = work.path().join(format!("reference-{}", surface.name()));
        prepare(&dir)?;
        surface.write(&dir)?;
        let t0 = Instant::now();
        let status = spawn(&dir)?.wait()?;
        let took = t0.elapsed();
        if !status.success() {
            bail!(
                "the uninterrupted {} run failed: {}",
                surface.name(),
                tail(&dir)
            );
        }
        let story = rt.block_on(check::trial(&dir)).map_err(|broken| {
            anyhow::anyhow!("the uninterrupted {} run broke: {broken:?}", surface.name())
        })?;
        rt.block_on(check::scenario_ran(&dir))
            .map_err(anyhow::Error::msg)?;
        outlived_by_nothing(&root_path(&dir))?;
        figures.references.push((surface, took));
        references.push((story, took.as_micros().max(1) as u64));
    }
    let mut rng = Rng(options.seed);
    for n in 1..=options.trials {
        // The surfaces take turns.
        let which = (n as usize - 1) % Surface::ALL.len();
        let surface = Surface::ALL[which];
        let (reference, span) = (&references[which].0, references[which].1);
        let dir = work.path().join(format!("trial-{n}"));
        prepare(&dir)?;
        surface.write(&dir)?;
        match surface {
            Surface::Served => figures.served += 1,
            Surface::Graph => figures.graphs += 1,
            Surface::Mcp => figures.mcp += 1,
            Surface::Hosted => figures.hosted += 1,
            Surface::Library => {}
        }
        let outcome = trial(&dir, &mut rng, span, options.kills, &mut figures)
            .and_then(|()| {
                rt.block_on(check::trial(&dir))
                    .map_err(|broken| anyhow::anyhow!(broken.join("\n")))
            })
            .and_then(|story: Story| {
                // An MCP client's step cut short is never sent again, and
                // a hosted run is started again from its start: no story
                // to hold to the reference's (see `mcp`, `hosted`).
                if !matches!(surface, Surface::Mcp | Surface::Hosted) {
                    story.matches(reference).map_err(anyhow::Error::msg)?;
                }
                Ok(story)
            });
        figures.trials += 1;
        match outcome {
            Ok(story) => {
                if surface == Surface::Hosted {
                    let (closed, stopped) = rt.block_on(crate::hosted_check::closed_dead(&dir));
                    figures.closed_dead += closed;
                    figures.stopped_questions += stopped;
                }
                figures.interrupted += story.interrupted();
                figures.commands_interrupted += story.interrupted_calls_of("run_command");
                figures.delegations_interrupted += story.interrupted_calls_of("delegate");
                std::fs::remove_dir_all(&dir)?;
            }
            Err(err) => {
                let kept = options.out.join(format!("failed-trial-{n}"));
                let _ = std::fs::remove_dir_all(&kept);
                copy_dir(&dir, &kept)?;
                let broken = format!("{err:#}").lines().map(str::to_owned).collect();
                figures.failures.push((n, broken));
            }
        }
        if n % 50 == 0 {
            eprintln!(
                "rein-chaos: {n} trials, {} kills, {} failed",
                figures.kills,
                figures.failures.len()
            );
        }
    }
    figures.wall = started.elapsed();
    Ok(figures)
}

/// One trial: killed one to `most` times at random instants within the
/// uninterrupted run's span, then run until it finishes.
fn trial(
    dir: &Path,
    rng: &mut Rng,
    span: u64,
    most: u32,
    figures: &mut Figures,
) -> anyhow::Result<()> {
    let kills = 1 + rng.below(u64::from(most.max(1)));
    for _ in 0..kills {
        let mut child = spawn(dir)?;
        std::thread::sleep(Duration::from_micros(rng.below(span)));
        if child.try_wait()?.is_some() {
            figures.outran += 1;
            continue;
        }
        // `Child::kill` is SIGKILL on Unix.
        child.kill()?;
        child.wait()?;
        figures.kills += 1;
        outlived_by_nothing(&root_path(dir))?;
    }
    let mut child = spawn(dir)?;
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            if status.success() {
                // A finished run, too, leaves nothing running.
                return outlived_by_nothing(&root_path(dir));
            }
            bail!("the last run failed ({status}): {}", tail(dir));
        }
        if started.elapsed() > HUNG {
            child.kill()?;
            child.wait()?;
            bail!("the last run hung for {HUNG:?}: {}", tail(dir));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Nothing a killed run started in its sandbox lives on: within two
/// seconds of the kill, no process is left working in the trial's root —
/// the command's 30 s sleeper included (the command and what it started
/// die with the rein that started them).
fn outlived_by_nothing(root: &Path) -> anyhow::Result<()> {
    let root = root.canonicalize()?;
    let mut left = Vec::new();
    for _ in 0..200 {
        left = working_in(&root);
        if left.is_empty() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    bail!("processes outlived the rein that started them: {left:?}")
}

/// The processes whose working directory is under `root`: (pid, command
/// line).
fn working_in(root: &Path) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(root))
        })
        .map(|pid| {
            let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            (pid, String::from_utf8_lossy(&line).replace('\0', " "))
        })
        .collect()
}

/// A fresh trial folder: a project with a file to tidy and one the person
/// keeps.
pub fn prepare(dir: &Path) -> anyhow::Result<()> {
    let root = root_path(dir);
    std::fs::create_dir_all(&root)?;
    std::fs::write(root.join("notes.txt"), "messy notes\n")?;
    std::fs::write(root.join("old.txt"), "old, kept\n")?;
    Ok(())
}

/// This program again, as a trial's process; its output appended to the
/// trial's `runs.log`.
fn spawn(dir: &Path) -> anyhow::Result<Child> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("runs.log"))?;
    Command::new(std::env::current_exe()?)
        .arg("child")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("starting a trial's process")
}

/// The end of a trial's `runs.log`, for a failure's message.
fn tail(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("runs.log")).unwrap_or_default();
    let start = text.len().saturating_sub(2000);
    let start = (start..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    text[start..].to_owned()
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// The figures as markdown, with the command that reproduces them.
pub fn summary(options: &Options, figures: &Figures) -> String {
    let mut out = format!(
        "# rein-chaos\n\n`cargo xtask chaos --trials {} --seed {} --kills {}`\n\n\
         | figure | value |\n|---|---:|\n\
         | trials | {} |\n| of which through `rein serve`'s API | {} |\n\
         | of which as a task graph | {} |\n\
         | of which as calls to `rein mcp serve` | {} |\n\
         | of which hosting Claude Code | {} |\n\
         | SIGKILLs landed | {} |\n| runs finished before their kill | {} |\n\
         | results recorded as interrupted | {} |\n| of which sandboxed commands | {} |\n\
         | of which tasks handed to a sub-agent | {} |\n\
         | hosted runs closed after their driver was killed | {} |\n\
         | their waiting questions stopped | {} |\n\
         {}\
         | campaign wall time | {} s |\n| failed trials | {} |\n",
        options.trials,
        options.seed,
        options.kills,
        figures.trials,
        figures.served,
        figures.graphs,
        figures.mcp,
        figures.hosted,
        figures.kills,
        figures.outran,
        figures.interrupted,
        figures.commands_interrupted,
        figures.delegations_interrupted,
        figures.closed_dead,
        figures.stopped_questions,
        figures
            .references
            .iter()
            .map(|(surface, took)| format!(
                "| uninterrupted run, {} | {} ms |\n",
                surface.name(),
                took.as_millis()
            ))
            .collect::<String>(),
        figures.wall.as_secs(),
        figures.failures.len(),
    );
    for (n, broken) in &figures.failures {
        out.push_str(&format!("\n## trial {n} failed\n\n"));
        for b in broken {
            out.push_str(&format!("- {b}\n"));
        }
    }
    out
}
