//! The verification gate: a command run directly (no shell) with a
//! timeout — in the product's sandbox when it gave one — and its failure
//! reported back to the model.
//!
//! Not here: when it runs (the loop, at a final answer).

use rein_wire::{AgentError, error::codes};

use crate::settings::{Verification, Wording};

/// What the gate says of an answer that made no calls.
pub(super) enum Checked {
    /// The command passed: the turn ends.
    Passed,
    /// It failed: the model is told this and goes on.
    Retry(String),
    /// It still fails after every fix allowed.
    GaveUp(AgentError),
}

/// Run the check and judge it, counting failures in `failed`.
pub(super) async fn verdict(check: &Verification, failed: &mut u32, wording: &Wording) -> Checked {
    let Err(report) = run_check(check).await else {
        return Checked::Passed;
    };
    *failed += 1;
    let command = check.command.join(" ");
    if *failed > check.attempts {
        return Checked::GaveUp(
            AgentError::new(
                codes::VERIFICATION_FAILED,
                format!("`{command}` still fails after {} fixes", check.attempts),
            )
            .with_field("output", report),
        );
    }
    Checked::Retry(
        wording
            .check_failed
            .replace("{command}", &command)
            .replace("{report}", &report),
    )
}

/// Run a verification command; `Err` carries the exit status and the tail
/// of its output.
pub(super) async fn run_check(check: &Verification) -> Result<(), String> {
    let Some((program, args)) = check.command.split_first() else {
        return Err("no command was given".into());
    };
    if let Some(sandbox) = &check.sandbox {
        return in_sandbox(check, sandbox.as_ref()).await;
    }
    let mut command = tokio::process::Command::new(program);
    // rein's own keys never reach a check (its output reaches the log).
    for key in rein_wire::env::PROVIDER_KEYS {
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
        Ok(Err(e)) => return Err(format!("it could not be started: {e}")),
        Err(_) => {
            return Err(format!(
                "it ran longer than {:?} and was stopped",
                check.timeout
            ));
        }
    };
    if output.status.success() {
        return Ok(());
    }
    Err(failed(
        output.status.code(),
        &String::from_utf8_lossy(&output.stdout),
        &String::from_utf8_lossy(&output.stderr),
    ))
}

async fn in_sandbox(
    check: &Verification,
    sandbox: &dyn rein_sandbox::Sandbox,
) -> Result<(), String> {
    let cwd = match &check.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| format!("no working folder: {e}"))?,
    };
    let request = rein_sandbox::Request {
        argv: check.command.clone(),
        cwd,
        env: check.env.clone(),
        timeout: check.timeout,
    };
    let ran = sandbox
        .run(&request)
        .await
        .map_err(|e| format!("it could not be run ({}): {}", e.code, e.message))?;
    if ran.timed_out {
        return Err(format!(
            "it ran longer than {:?} and was stopped",
            check.timeout
        ));
    }
    if ran.code == Some(0) {
        return Ok(());
    }
    Err(failed(ran.code, &ran.stdout.text, &ran.stderr.text))
}

/// A failed check as the model is told: its exit status and the last 2000
/// characters of what it printed.
fn failed(code: Option<i32>, stdout: &str, stderr: &str) -> String {
    let text = format!("{stdout}{stderr}");
    let tail: String = text
        .chars()
        .rev()
        .take(2000)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!(
        "exit status {}; output (last 2000 characters):\n{tail}",
        code.map_or("signal".to_owned(), |c| c.to_string())
    )
}
