//! What `rein run` shows while a graph runs, and the table at its end.
//!
//! At a terminal: a live line per task (indicatif) — a spinner with the
//! time it has run and the tokens it has used while it runs, then its
//! state — with questions and notes printed above the lines. Elsewhere (a
//! pipe, a log file): a plain line per event, as before. Either way a step
//! is shown only once it is in the graph's record, and model text is made
//! visible (never raw control bytes).
//!
//! Not here: running the graph or asking (`run_graph`).

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use rein::orchestrator::{Progress, TaskState};
use rein::wire::AgentError;
use rein::wire::visible::visible;

/// How often a running task's spinner turns.
const TICK: Duration = Duration::from_millis(120);

/// One task as the view counts it.
#[derive(Debug, Default)]
struct Seen {
    started: Option<Instant>,
    took: Option<Duration>,
    tokens: u64,
}

/// The graph's progress, on a terminal or as plain lines.
pub(super) struct View {
    started: Instant,
    live: Option<MultiProgress>,
    bars: HashMap<String, ProgressBar>,
    tasks: HashMap<String, Seen>,
}

impl View {
    /// Live lines when `live` (stderr is a terminal), plain lines otherwise.
    pub(super) fn new(live: bool) -> View {
        View {
            started: Instant::now(),
            live: live.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr())),
            bars: HashMap::new(),
            tasks: HashMap::new(),
        }
    }

    /// A line above the tasks' lines (or a plain line).
    pub(super) fn say(&self, info: &mut impl Write, text: &str) -> Result<(), AgentError> {
        let text = visible(text);
        match &self.live {
            Some(multi) => multi.println(text).map_err(super::output::output_error),
            None => writeln!(info, "{text}").map_err(super::output::output_error),
        }
    }

    /// A step of the graph, once recorded.
    pub(super) fn progress(
        &mut self,
        info: &mut impl Write,
        progress: &Progress,
    ) -> Result<(), AgentError> {
        match progress {
            Progress::Started { task, .. } => {
                let seen = self.tasks.entry(task.clone()).or_default();
                seen.started = Some(Instant::now());
                seen.took = None;
            }
            Progress::Ended { task, .. } => {
                let seen = self.tasks.entry(task.clone()).or_default();
                seen.took = seen.started.map(|s| s.elapsed());
            }
            Progress::Retrying { .. } => {}
        }
        if self.live.is_none() {
            return self.say(info, &line(progress, self.started));
        }
        let task = task_of(progress).to_owned();
        let bar = self.bar(&task);
        match progress {
            Progress::Started { attempt, .. } if *attempt > 1 => {
                bar.set_message(format!("attempt {attempt}"));
            }
            Progress::Started { .. } => bar.set_message("running"),
            Progress::Retrying { error, wait, .. } => bar.set_message(format!(
                "failed ({}); again in {}",
                error.code,
                humantime::format_duration(*wait)
            )),
            Progress::Ended { state, .. } => {
                let tokens = self.tokens_of(&task);
                bar.set_style(done_style());
                bar.finish_with_message(format!("{} · {tokens} tokens", visible(&describe(state))));
            }
        }
        Ok(())
    }

    /// Tokens a task's model call used.
    pub(super) fn tokens(&mut self, task: &str, tokens: u64) {
        let seen = self.tasks.entry(task.to_owned()).or_default();
        seen.tokens = seen.tokens.saturating_add(tokens);
        let total = seen.tokens;
        if let Some(bar) = self.bars.get(task)
            && !bar.is_finished()
        {
            bar.set_message(format!("running · {total} tokens"));
        }
    }

    fn tokens_of(&self, task: &str) -> u64 {
        self.tasks.get(task).map_or(0, |s| s.tokens)
    }

    fn bar(&mut self, task: &str) -> ProgressBar {
        if let Some(bar) = self.bars.get(task) {
            return bar.clone();
        }
        let bar = ProgressBar::new_spinner()
            .with_style(running_style())
            .with_prefix(visible(task).into_owned());
        let bar = match &self.live {
            Some(multi) => multi.add(bar),
            None => bar,
        };
        bar.enable_steady_tick(TICK);
        self.bars.insert(task.to_owned(), bar.clone());
        bar
    }

    /// The table at the end: each task's state, time and tokens.
    pub(super) fn table(
        &self,
        info: &mut impl Write,
        tasks: &[(String, TaskState)],
    ) -> Result<(), AgentError> {
        self.say(info, "")?;
        self.say(
            info,
            &format!("{:<24} {:>8} {:>8}  {}", "task", "time", "tokens", "state"),
        )?;
        for (task, state) in tasks {
            let seen = self.tasks.get(task);
            let took = seen
                .and_then(|s| s.took)
                .map_or_else(|| "-".to_owned(), |t| format!("{:.1}s", t.as_secs_f64()));
            let tokens = seen.map_or(0, |s| s.tokens);
            self.say(
                info,
                &format!("{task:<24} {took:>8} {tokens:>8}  {}", describe(state)),
            )?;
        }
        Ok(())
    }
}

fn running_style() -> ProgressStyle {
    ProgressStyle::with_template("  {spinner} {prefix:<24} {elapsed:>4} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn done_style() -> ProgressStyle {
    ProgressStyle::with_template("    {prefix:<24} {elapsed:>4} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn task_of(progress: &Progress) -> &str {
    match progress {
        Progress::Started { task, .. }
        | Progress::Retrying { task, .. }
        | Progress::Ended { task, .. } => task,
    }
}

/// One plain progress line.
fn line(progress: &Progress, started: Instant) -> String {
    let at = format!("{:>6.1}s", started.elapsed().as_secs_f64());
    match progress {
        Progress::Started { task, attempt } if *attempt == 1 => format!("{at}  ▶ {task}"),
        Progress::Started { task, attempt } => format!("{at}  ▶ {task} (attempt {attempt})"),
        Progress::Retrying {
            task, error, wait, ..
        } => format!(
            "{at}  ⟳ {task} failed ({}: {}); again in {}",
            error.code,
            error.message,
            humantime::format_duration(*wait)
        ),
        Progress::Ended { task, state } => format!("{at}  {task}: {}", describe(state)),
    }
}

/// A task's state in words.
pub(super) fn describe(state: &TaskState) -> String {
    match state {
        TaskState::Succeeded { attempts, .. } => format!("✓ done ({attempts} attempt(s))"),
        TaskState::Failed { error, attempts } => format!(
            "✗ failed after {attempts} attempt(s): {} {}",
            error.code, error.message
        ),
        TaskState::Skipped { because } => format!("↷ skipped: `{because}` failed"),
        TaskState::Cancelled => "■ cancelled".to_owned(),
        TaskState::Pending | TaskState::Running { .. } => "…".to_owned(),
    }
}
