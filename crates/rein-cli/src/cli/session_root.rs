//! Which folder a chat's file tools work in: a new session's `--root` (or
//! the current directory); a resumed session's recorded root, so resuming
//! from another directory does not point the tools at other files. A
//! different `--root` for a resumed session is used only when the person
//! confirms it.
//!
//! Not here: the confinement to that folder (`rein::files::Root`).

use std::io::Write;

use rein::sessions::Store;
use rein::wire::{AgentError, error::codes};

use super::chat_options::ChatOptions;
use super::input::Asker;
use super::output::say;

/// The folder the file tools work in. A new session: `--root`, else the
/// current directory. A resumed one: the root it recorded — another
/// `--root` only when the person confirms it (the tools would otherwise
/// point at other files than the conversation spoke of).
pub async fn root_of(
    options: &ChatOptions,
    store: &dyn Store,
    input: &mut Asker,
    info: &mut impl Write,
) -> Result<std::path::PathBuf, AgentError> {
    let metadata = match &options.session {
        Some(id) => store.session(id).await?.metadata,
        None => serde_json::Value::Null,
    };
    let recorded = metadata["root"].as_str().map(std::path::PathBuf::from);
    // An imported session's root is what its trace says: evidence, never
    // where the tools work unless the person says so here.
    if rein::sessions::recovery::imported_through(&metadata) > 0
        && options.root.is_none()
        && let Some(recorded) = recorded
    {
        say(
            info,
            &format!(
                "This session was imported: its trace names the folder {}, which is not a permission.",
                recorded.display()
            ),
        )?;
        let answer = input.line("Work in that folder? [y/N] ").await?;
        if answer.is_some_and(|a| rein::approvals::Answer::is_yes(&a)) {
            return Ok(recorded);
        }
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            "an imported session works only where the person says: resume it with --root DIR",
        ));
    }
    let here = || {
        std::env::current_dir().map_err(|e| {
            AgentError::new(codes::INVALID_INPUT, format!("no current directory: {e}"))
        })
    };
    let (given, recorded) = match (&options.root, recorded) {
        (None, Some(recorded)) => return Ok(recorded),
        (None, None) => return here(),
        (Some(given), None) => return Ok(given.clone()),
        (Some(given), Some(recorded)) => (given.clone(), recorded),
    };
    let same = |a: &std::path::Path, b: &std::path::Path| {
        a.canonicalize()
            .ok()
            .zip(b.canonicalize().ok())
            .is_some_and(|(a, b)| a == b)
    };
    if same(&given, &recorded) {
        return Ok(given);
    }
    say(
        info,
        &format!(
            "This session worked in {}; --root names {}.",
            recorded.display(),
            given.display()
        ),
    )?;
    let answer = input.line("Use the new root for it? [y/N] ").await?;
    if answer.is_some_and(|a| rein::approvals::Answer::is_yes(&a)) {
        return Ok(given);
    }
    Err(AgentError::new(
        codes::INVALID_INPUT,
        format!(
            "the session's root is {}; resume without --root to use it, or confirm the new one",
            recorded.display()
        ),
    ))
}

/// `dir` (or the current directory) as one absolute path, for a surface
/// that takes its root from a flag alone.
pub fn absolute(dir: Option<&std::path::Path>) -> Result<std::path::PathBuf, AgentError> {
    let dir = match dir {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().map_err(|e| {
            AgentError::new(codes::INVALID_INPUT, format!("no working folder: {e}"))
        })?,
    };
    dir.canonicalize().map_err(|e| {
        AgentError::new(
            codes::INVALID_INPUT,
            format!("the root {}: {e}", dir.display()),
        )
    })
}
