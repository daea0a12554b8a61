//! Where rein keeps its data: `REIN_HOME`.
//!
//! Resolution order: an explicit directory (`--home DIR`), the `REIN_HOME`
//! variable, `$XDG_DATA_HOME/rein`, then `~/.local/share/rein`. The
//! embedded store is the file `rein.db` inside it.

use std::path::PathBuf;

use rein_wire::{AgentError, error::codes};

/// The store's file name inside the home directory.
pub const DB_FILE: &str = "rein.db";

/// The home directory, from `explicit` or the environment.
pub fn resolve(explicit: Option<PathBuf>) -> Result<PathBuf, AgentError> {
    if let Some(dir) = explicit {
        return Ok(dir);
    }
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var("REIN_HOME") {
        return Ok(dir);
    }
    if let Some(dir) = var("XDG_DATA_HOME") {
        return Ok(dir.join("rein"));
    }
    if let Some(home) = var("HOME") {
        return Ok(home.join(".local/share/rein"));
    }
    Err(AgentError::new(
        codes::INVALID_INPUT,
        "cannot tell where rein's data lives: set REIN_HOME or pass --home DIR",
    ))
}
