//! `rein memory`: a person sees and edits long-term memory — list, show,
//! search, add, forget, export — in `REIN_HOME/memory.db`, one scope at a
//! time (`--scope`, by default this project's: `project:` and the current
//! folder).
//!
//! Not here: the store and its bounds (`rein::memory`).

use std::io::Write;
use std::path::Path;

use rein::memory::{MemoryBank, MemoryItem, NewMemory, Scope, Source, SqliteMemory};
use rein::wire::AgentError;
use rein::wire::visible::visible;

use super::output::output_error;

/// `rein memory`'s commands.
#[derive(Debug, clap::Subcommand)]
pub enum MemoryCommand {
    /// The scope's items, newest first.
    List {
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// One item, whole, with its source.
    Show {
        /// The item's id.
        id: String,
    },
    /// The scope's items matching these words, best first.
    Search {
        /// The words.
        query: String,
        /// At most this many.
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Remember something by hand.
    Add {
        /// The text.
        text: String,
        /// A tag (repeatable).
        #[arg(long = "tag")]
        tags: Vec<String>,
        /// Shown in every prompt, not only found by search.
        #[arg(long)]
        pinned: bool,
    },
    /// Forget an item for good: gone from the store and every later prompt.
    Forget {
        /// The item's id.
        id: String,
    },
    /// Every item of the scope as JSON lines, oldest first.
    Export,
    /// What was remembered and forgotten, newest first, and who asked
    /// (never a forgotten item's text).
    History {
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
}

/// `rein memory [--scope S] COMMAND`.
#[derive(Debug, clap::Args)]
pub struct MemoryArgs {
    /// Whose memory (`person:NAME`, `project:PATH`, `agent:NAME`, …);
    /// by default this project's.
    #[arg(long, global = true)]
    pub scope: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: MemoryCommand,
}

/// The scope a command names, or this project's.
fn scope_of(named: Option<&str>) -> Result<Scope, AgentError> {
    match named {
        Some(name) => Scope::new(name),
        None => {
            let here = super::session_root::absolute(None)?;
            Scope::project(&here)
        }
    }
}

/// One line about an item: its id, pinned or not, tags, text (visible,
/// one line, cut).
fn line(item: &MemoryItem) -> String {
    let text: String = item.text.replace('\n', " ").chars().take(120).collect();
    let tags = if item.tags.is_empty() {
        String::new()
    } else {
        format!(" [{}]", item.tags.join(", "))
    };
    let pin = if item.pinned { " (pinned)" } else { "" };
    visible(&format!("{}{pin}{tags} {text}", item.id)).into_owned()
}

/// Run `args` on the memory file under `home`.
pub async fn run(args: MemoryArgs, home: &Path, out: &mut impl Write) -> Result<(), AgentError> {
    let scope = scope_of(args.scope.as_deref())?;
    let memory = SqliteMemory::open(home.join(rein::memory::MEMORY_FILE)).await?;
    let mut say = |text: String| writeln!(out, "{text}").map_err(output_error);
    match args.command {
        MemoryCommand::List { limit, json } => {
            let items = memory.list(&scope, limit).await?;
            if items.is_empty() && !json {
                say(format!(
                    "nothing remembered in {scope} yet (add: rein memory add TEXT)"
                ))?;
            }
            for item in items {
                say(if json { json_of(&item) } else { line(&item) })?;
            }
        }
        MemoryCommand::Show { id } => {
            let item = memory.get(&scope, &id).await?;
            say(visible(&serde_json::to_string_pretty(&item).unwrap_or_default()).into_owned())?;
        }
        MemoryCommand::Search { query, limit } => {
            let found = memory.search(&scope, &query, limit).await?;
            if found.is_empty() {
                say(format!("nothing in {scope} matches"))?;
            }
            for found in found {
                say(line(&found.item))?;
            }
        }
        MemoryCommand::Add { text, tags, pinned } => {
            let new = NewMemory {
                text,
                tags,
                pinned,
                ..NewMemory::default()
            };
            let item = memory.remember(&scope, new).await?;
            say(format!("remembered {} in {scope}", item.id))?;
        }
        MemoryCommand::Forget { id } => {
            memory.forget(&scope, &id, &Source::default()).await?;
            say(format!("forgot {} in {scope}", visible(&id)))?;
        }
        MemoryCommand::Export => {
            for item in memory.all(&scope).await? {
                say(json_of(&item))?;
            }
        }
        MemoryCommand::History { limit } => {
            let changes = memory.history(&scope, limit).await?;
            if changes.is_empty() {
                say(format!("nothing remembered or forgotten in {scope} yet"))?;
            }
            for change in changes {
                say(visible(&serde_json::to_string(&change).unwrap_or_default()).into_owned())?;
            }
        }
    }
    Ok(())
}

/// An item as one JSON line (control characters escaped by JSON itself).
fn json_of(item: &MemoryItem) -> String {
    serde_json::to_string(item).unwrap_or_default()
}
