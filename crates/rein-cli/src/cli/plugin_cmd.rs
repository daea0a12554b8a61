//! `rein plugin`: bundles of MCP servers, named agents, hooks and
//! instructions added to rein's home as a unit (`add` a folder or a git
//! repository), shown with what each brings and whether it applies
//! (`list`), trusted as it is now (`trust`), and removed (`remove`).
//!
//! A plugin added is shown, not run: it applies only once trusted, and only
//! while every file in it is as it was then.
//!
//! Not here: what a plugin is and how it layers (`rein-config`'s `plugins`).

use std::io::Write;
use std::path::{Path, PathBuf};

use rein::config::plugins::{self, Plugin, Trust};
use rein::wire::visible::visible;
use rein::wire::{AgentError, error::codes};

/// `rein plugin`'s subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum PluginCommand {
    /// Add a plugin from a folder or a git repository's URL (it applies
    /// once trusted).
    Add {
        /// The folder holding `rein-plugin.toml`, or a git URL.
        source: String,
    },
    /// The installed plugins: what each brings and whether it applies.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Trust a plugin as it is now: its servers, hooks and agents apply
    /// while every file in it stays as it is.
    Trust {
        /// Its name.
        name: String,
    },
    /// Remove a plugin and the trust in it.
    Remove {
        /// Its name.
        name: String,
    },
}

fn io(err: std::io::Error) -> AgentError {
    super::output::output_error(err)
}

fn standing(trust: Trust) -> &'static str {
    match trust {
        Trust::Trusted => "trusted",
        Trust::Untrusted => "not trusted: not applied",
        Trust::Changed => "changed since trusted: not applied",
        Trust::Unreadable => "cannot be used: not applied",
    }
}

/// One plugin, as text anyone may have written: made visible.
fn describe(plugin: &Plugin, out: &mut impl Write) -> Result<(), AgentError> {
    writeln!(
        out,
        "{} — {} ({})",
        visible(&plugin.name),
        visible(&plugin.description),
        standing(plugin.trust)
    )
    .map_err(io)?;
    if !plugin.brings.is_empty() {
        writeln!(out, "  brings: {}", visible(&plugin.brings.join(", "))).map_err(io)?;
    }
    if let Some(problem) = &plugin.problem {
        writeln!(out, "  {}", visible(problem)).map_err(io)?;
    }
    Ok(())
}

/// Add the plugin in `source`: a folder, or a git repository cloned first
/// (`git clone --depth 1`, never asking for a password, at most
/// [`CLONE_WAIT`]).
fn add(home: &Path, source: &str) -> Result<Plugin, AgentError> {
    let local = Path::new(source);
    if local.is_dir() {
        return plugins::add(home, local);
    }
    let url = source.contains("://") || source.ends_with(".git") || source.contains('@');
    if !url {
        return Err(AgentError::new(
            codes::INVALID_INPUT,
            format!(
                "{} is no folder and no git URL (give the folder holding {}, or the repository's URL)",
                visible(source),
                plugins::MANIFEST
            ),
        ));
    }
    let cloned = tempfile::tempdir().map_err(|e| {
        AgentError::new(
            codes::INVALID_INPUT,
            format!("no folder to clone into: {e}"),
        )
    })?;
    let into = cloned.path().join("plugin");
    clone(source, &into)?;
    plugins::add(home, &into)
}

/// How long a clone may take.
const CLONE_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

fn clone(url: &str, into: &Path) -> Result<(), AgentError> {
    let fail = |why: String| AgentError::new(codes::INVALID_INPUT, why);
    let mut child = std::process::Command::new("git")
        .args(["clone", "--depth", "1", "--quiet", "--", url])
        .arg(into)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .spawn()
        .map_err(|e| {
            fail(format!(
                "git could not be run to fetch {}: {e}",
                visible(url)
            ))
        })?;
    let until = std::time::Instant::now() + CLONE_WAIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(_)) => return Err(fail(format!("git could not clone {}", visible(url)))),
            Ok(None) if std::time::Instant::now() < until => {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(fail(format!(
                    "git did not clone {} within {} s",
                    visible(url),
                    CLONE_WAIT.as_secs()
                )));
            }
            Err(e) => return Err(fail(format!("git clone of {}: {e}", visible(url)))),
        }
    }
}

/// Run `rein plugin …`.
pub fn run(
    command: PluginCommand,
    home: Option<PathBuf>,
    out: &mut impl Write,
) -> Result<(), AgentError> {
    let home = rein::sessions::home::resolve(home)?;
    match command {
        PluginCommand::Add { source } => {
            let plugin = add(&home, &source)?;
            describe(&plugin, out)?;
            writeln!(
                out,
                "added {}; it applies once you trust it: rein plugin trust {}",
                visible(&plugin.name),
                visible(&plugin.name)
            )
            .map_err(io)
        }
        PluginCommand::List { json } => {
            let installed = plugins::installed(&home)?;
            if json {
                let text = serde_json::to_string_pretty(&installed)
                    .map_err(|e| AgentError::new(codes::INTERNAL, e.to_string()))?;
                return writeln!(out, "{text}").map_err(io);
            }
            if installed.is_empty() {
                return writeln!(
                    out,
                    "no plugin is installed (add one: rein plugin add PATH|GIT-URL)"
                )
                .map_err(io);
            }
            for plugin in &installed {
                describe(plugin, out)?;
            }
            Ok(())
        }
        PluginCommand::Trust { name } => {
            let plugin = plugins::trust(&home, &name)?;
            describe(&plugin, out)?;
            writeln!(
                out,
                "trusted {}: it applies from now on, while every file in it stays as it is",
                visible(&plugin.name)
            )
            .map_err(io)
        }
        PluginCommand::Remove { name } => {
            plugins::remove(&home, &name)?;
            writeln!(out, "removed {}", visible(&name)).map_err(io)
        }
    }
}
