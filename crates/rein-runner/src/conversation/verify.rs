//! The verification gate: a command run directly (no shell) with a
//! timeout — in its place (a sandbox) when the product gave one — its receipt
//! recorded (`check.ran`: the exit, the revisions of the files the
//! conversation had changed, how long), and its failure reported back to
//! the model.
//!
//! Not here: when it runs (the loop, at a final answer).

use rein_sessions::Event;
use rein_wire::{AgentError, error::codes};

use super::journal::Journal;
use crate::settings::{Verification, Wording};

/// What the gate says of an answer that made no calls.
pub(super) enum Checked {
    /// The command passed: the turn ends.
    Passed,
    /// It failed: the model is told this and goes on.
    Retry(String),
    /// It failed every run the turn allows.
    GaveUp(AgentError),
}

/// Run the check, record its receipt and judge it, counting failures in
/// `failed`; what it printed reaches the model and the log only with the
/// agent's `secrets` (and secret-shaped words) masked, as a tool's result.
pub(super) async fn verdict(
    check: &Verification,
    failed: &mut u32,
    (wording, secrets): (&Wording, &[String]),
    journal: &mut Journal,
) -> Result<Checked, AgentError> {
    let started = std::time::Instant::now();
    let ran = run_check(check).await;
    let events = journal.log().await?;
    let path = events.path();
    let record = rein_context::claims::Record::of(&rein_context::window::on_path(&events, path));
    let exit = ran.as_ref().map_or_else(|f| f.exit, |code| Some(*code));
    let passed = exit == Some(check.expected);
    let revisions = record.revisions();
    // The checks that failed before this one in the turn, and whether any
    // file changed between them and now.
    let before: Vec<&Vec<rein_wire::Revision>> = events
        .iter()
        .rev()
        .filter_map(|e| match &e.event {
            Event::CheckRan { revisions, .. } => Some(revisions),
            _ => None,
        })
        .take(*failed as usize)
        .collect();
    let unchanged = !before.is_empty() && before.iter().all(|r| **r == revisions);
    journal
        .append(vec![Event::CheckRan {
            command: check.command.clone(),
            expected: check.expected,
            exit,
            passed,
            revisions,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }])
        .await?;
    if passed {
        return Ok(Checked::Passed);
    }
    let report = match ran {
        Ok(code) => failed_report(Some(code), check.expected, "", ""),
        Err(f) => f.report,
    };
    let report = rein_wire::secrets::mask(&report, secrets);
    *failed += 1;
    let command = check.command.join(" ");
    if *failed > check.attempts {
        // Counted as it happened: how many runs failed, and whether the
        // model changed anything between them (no "fixes" that were none).
        let between = match (*failed, unchanged) {
            (1, _) => "",
            (_, true) => "; no file changed between its runs",
            (_, false) => ", with files changed between its runs",
        };
        return Ok(Checked::GaveUp(
            AgentError::new(
                codes::VERIFICATION_FAILED,
                format!(
                    "`{command}` failed all {} of its runs in this turn{between}",
                    *failed
                ),
            )
            .with_field("output", report)
            .with_field("runs", *failed)
            .with_field("files_changed_between", !unchanged),
        ));
    }
    Ok(Checked::Retry(
        wording
            .check_failed
            .replace("{command}", &command)
            .replace("{report}", &report),
    ))
}

/// A check that did not give its expected exit: the exit it gave (`None`:
/// killed, over its time, not started) and what the model is told.
pub(super) struct Failed {
    exit: Option<i32>,
    report: String,
}

impl Failed {
    fn without_exit(report: String) -> Failed {
        Failed { exit: None, report }
    }
}

/// Run a verification command: `Ok` with the expected exit code, else
/// what it gave and the tail of its output.
pub(super) async fn run_check(check: &Verification) -> Result<i32, Failed> {
    let Some((program, args)) = check.command.split_first() else {
        return Err(Failed::without_exit("no command was given".into()));
    };
    if let Some(place) = &check.place {
        return in_place(check, place.as_ref()).await;
    }
    let mut command = tokio::process::Command::new(program);
    // rein's own keys never reach a check (its output reaches the log).
    for key in rein_wire::env::SECRET_VARS {
        command.env_remove(key);
    }
    // A group of its own: a Ctrl-C at rein's terminal is rein's.
    command
        .args(args)
        .process_group(0)
        .kill_on_drop(true)
        .stdin(std::process::Stdio::null());
    if let Some(dir) = &check.cwd {
        command.current_dir(dir);
    }
    let output = match tokio::time::timeout(check.timeout, command.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => {
            return Err(Failed::without_exit(format!(
                "it could not be started: {e}"
            )));
        }
        Err(_) => {
            return Err(Failed::without_exit(format!(
                "it ran longer than {:?} and was stopped",
                check.timeout
            )));
        }
    };
    judged(
        check.expected,
        output.status.code(),
        &String::from_utf8_lossy(&output.stdout),
        &String::from_utf8_lossy(&output.stderr),
    )
}

/// `Ok` when `code` is the expected exit, else the failure.
fn judged(expected: i32, code: Option<i32>, stdout: &str, stderr: &str) -> Result<i32, Failed> {
    match code {
        Some(code) if code == expected => Ok(code),
        exit => Err(Failed {
            exit,
            report: failed_report(exit, expected, stdout, stderr),
        }),
    }
}

async fn in_place(check: &Verification, place: &dyn crate::CheckPlace) -> Result<i32, Failed> {
    let cwd = match &check.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|e| Failed::without_exit(format!("no working folder: {e}")))?,
    };
    let command = crate::CheckCommand {
        argv: check.command.clone(),
        cwd,
        timeout: check.timeout,
    };
    let ran = place.run(&command).await.map_err(|e| {
        Failed::without_exit(format!("it could not be run ({}): {}", e.code, e.message))
    })?;
    if ran.timed_out {
        return Err(Failed::without_exit(format!(
            "it ran longer than {:?} and was stopped",
            check.timeout
        )));
    }
    judged(check.expected, ran.code, &ran.stdout, &ran.stderr)
}

/// A failed check as the model is told: its exit status (and the one
/// expected, when not 0) and the last 2000 characters of what it printed.
fn failed_report(code: Option<i32>, expected: i32, stdout: &str, stderr: &str) -> String {
    let text = format!("{stdout}{stderr}");
    let tail: String = text
        .chars()
        .rev()
        .take(2000)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let wanted = if expected == 0 {
        String::new()
    } else {
        format!(" (expected {expected})")
    };
    format!(
        "exit status {}{wanted}; output (last 2000 characters):\n{tail}",
        code.map_or("signal".to_owned(), |c| c.to_string())
    )
}
