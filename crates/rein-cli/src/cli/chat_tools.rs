//! The chat's tools, assembled from its flags: the folder's file tools,
//! skills (`--skills`), `run_command` in the sandbox (`--allow-commands`),
//! and MCP servers' tools (`--mcp`), joined into one backend.
//!
//! Not here: any tool itself.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use rein_sessions::Store;
use rein_tools::ToolBackend;
use rein_wire::AgentError;

use super::chat::{ChatOptions, say};

/// What the chat runs with.
pub struct ChatTools {
    /// The folder's root (for `/undo`).
    pub root: Arc<rein_files::Root>,
    /// Everything the model may call.
    pub backend: Arc<dyn ToolBackend>,
    /// The MCP servers, when any were named (stopped at the chat's end).
    pub mcp: Option<rein_mcp::McpClients>,
    /// How commands run, when they may.
    pub commands_isolation: Option<String>,
}

/// Assemble the chat's tools for `root_dir`.
pub async fn assemble(
    options: &ChatOptions,
    store: &Arc<dyn Store>,
    root_dir: &Path,
    info: &mut impl Write,
) -> Result<ChatTools, AgentError> {
    let root = Arc::new(rein_files::Root::new(root_dir)?);
    let stash = rein_files::Stash(store.clone());
    let mut files = rein_files::file_tools(root.clone(), Some(stash))?;
    if let Some(dir) = &options.skills {
        files = files.with_skills(rein_tools::Skills::load(dir)?);
    }
    let mut commands_isolation = None;
    if options.allow_commands {
        let (tool, isolation) = super::commands_tool::build(
            options.home.clone(),
            options.commands.as_deref(),
            root_dir,
        )
        .await?;
        say(info, &format!("  (run_command: {isolation})"))?;
        files = files.with(tool)?;
        commands_isolation = Some(isolation);
    }
    let mcp = super::mcp::clients(options.home.clone(), &options.mcp)?;
    let backend: Arc<dyn ToolBackend> = match &mcp {
        Some(clients) => Arc::new(rein_tools::Joined::new(vec![
            Arc::new(files),
            Arc::new(clients.tools()),
        ])),
        None => Arc::new(files),
    };
    Ok(ChatTools {
        root,
        backend,
        mcp,
        commands_isolation,
    })
}
