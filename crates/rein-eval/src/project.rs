//! The project a case's tools work on: the reference backend (in memory,
//! from `rein-testing`), or — with `backend.folder` — a real folder under
//! rein's own file tools (`rein-files`: read before write, atomic writes,
//! edits that must match, undo kept in the case's store), which is what a
//! real model meets in `rein chat` — with `backend.commands`, its
//! `run_command` too, in rein's Linux sandbox (this binary its own helper).
//!
//! Not here: the checks over what a project ends with (`run`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rein_sessions::{Event, Store, StoredEvent, ToolStatus};
use rein_testing::FakeToolBackend;
use rein_tools::ToolBackend;
use rein_wire::{AgentError, error::codes};

/// The tools of a case and the files they work on.
pub(crate) enum Project {
    /// The in-memory reference backend.
    Reference(Arc<FakeToolBackend>),
    /// A real folder, served by rein's file tools.
    Folder {
        /// The folder (removed when the case ends).
        dir: tempfile::TempDir,
        /// The file tools over it.
        tools: Arc<rein_tools::Registry>,
    },
}

impl Project {
    /// The project `files` (path, content), as `folder` asks; with
    /// `commands`, `run_command` over the folder.
    pub(crate) async fn new(
        files: &[(String, String)],
        (folder, commands): (bool, bool),
        store: &Arc<dyn Store>,
    ) -> Result<Self, AgentError> {
        if commands && !folder {
            return Err(AgentError::new(
                codes::INVALID_INPUT,
                "`backend.commands` needs `backend.folder`",
            ));
        }
        if !folder {
            let refs: Vec<(&str, &str)> = files
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            return Ok(Project::Reference(Arc::new(FakeToolBackend::new(&refs)?)));
        }
        let failed = |e: std::io::Error| {
            AgentError::new(codes::INTERNAL, format!("the project folder: {e}"))
        };
        let dir = tempfile::tempdir().map_err(failed)?;
        for (path, content) in files {
            let at = dir.path().join(path);
            if let Some(parent) = at.parent() {
                std::fs::create_dir_all(parent).map_err(failed)?;
            }
            std::fs::write(at, content).map_err(failed)?;
        }
        let root = Arc::new(rein_files::Root::new(dir.path())?);
        let mut tools = rein_files::file_tools(root, Some(rein_files::Stash(store.clone())))?;
        if commands {
            tools = tools.with(command_tool(dir.path()).await?)?;
        }
        Ok(Project::Folder {
            dir,
            tools: Arc::new(tools),
        })
    }

    /// Why `command` (program and arguments) did not exit 0 in the
    /// project's folder, or `None` when it did (or there is none to run);
    /// it is given a minute.
    pub(crate) async fn command_fails(&self, command: &[String]) -> Option<String> {
        let (Project::Folder { dir, .. }, Some((program, args))) = (self, command.split_first())
        else {
            return None;
        };
        let shown = command.join(" ");
        let run = tokio::process::Command::new(program)
            .args(args)
            .current_dir(dir.path())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        match tokio::time::timeout(std::time::Duration::from_secs(60), run).await {
            Err(_) => Some(format!("`{shown}` did not end within a minute")),
            Ok(Err(e)) => Some(format!("`{shown}` could not run: {e}")),
            Ok(Ok(out)) if out.status.success() => None,
            Ok(Ok(out)) => {
                let said = String::from_utf8_lossy(&out.stderr);
                let tail: String = said
                    .chars()
                    .rev()
                    .take(300)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                Some(format!(
                    "`{shown}` failed ({}): {}",
                    out.status,
                    tail.trim()
                ))
            }
        }
    }

    /// The tools, as a conversation takes them.
    pub(crate) fn backend(&self) -> Arc<dyn ToolBackend> {
        match self {
            Project::Reference(backend) => backend.clone(),
            Project::Folder { tools, .. } => tools.clone(),
        }
    }

    /// Every file the project holds now (path, text).
    pub(crate) fn files(&self) -> BTreeMap<String, String> {
        match self {
            Project::Reference(backend) => backend
                .project()
                .lock()
                .map(|p| p.files.clone())
                .unwrap_or_default(),
            Project::Folder { dir, .. } => {
                let Ok(root) = rein_files::Root::new(dir.path()) else {
                    return BTreeMap::new();
                };
                root.walk(None)
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|path| {
                        let bytes = root.read(&path).ok()?;
                        Some((path, String::from_utf8_lossy(&bytes).into_owned()))
                    })
                    .collect()
            }
        }
    }

    /// How many times each tool ran: the reference backend's own count
    /// for its tools, successful results in the log for everything else.
    pub(crate) fn ran(&self, events: &[StoredEvent]) -> HashMap<String, u64> {
        // The reference backend counts its own tools' runs; a product's
        // tools beside it are counted from the log.
        let counted_by_backend = |tool: &str| {
            matches!(self, Project::Reference(backend) if backend.definition(tool).is_some())
                && !matches!(
                    tool,
                    "read_result" | "load_tool" | "call_tool" | "read_skill" | "delegate"
                )
        };
        let mut tools: HashMap<&str, &str> = HashMap::new();
        let mut ran: HashMap<String, u64> = HashMap::new();
        for stored in events {
            match &stored.event {
                Event::ToolCalled { call_id, tool, .. } => {
                    tools.insert(call_id, tool);
                }
                Event::ToolResult {
                    call_id,
                    status: ToolStatus::Ok,
                    ..
                } => {
                    if let Some(tool) = tools.get(call_id.as_str())
                        && !counted_by_backend(tool)
                    {
                        *ran.entry((*tool).to_owned()).or_default() += 1;
                    }
                }
                _ => {}
            }
        }
        if let Project::Reference(backend) = self
            && let Ok(project) = backend.project().lock()
        {
            for (tool, n) in &project.invocations {
                ran.insert(tool.clone(), *n);
            }
        }
        ran
    }
}

/// `run_command` over `dir` in rein's Linux sandbox (landlock; this binary
/// is the helper), writing only in `dir`, every command asked, `PATH` its
/// whole environment; `sandbox_unavailable` where the kernel cannot confine.
async fn command_tool(dir: &std::path::Path) -> Result<rein_sandbox::RunCommand, AgentError> {
    let root = dir
        .canonicalize()
        .map_err(|e| AgentError::new(codes::INTERNAL, format!("the project folder: {e}")))?;
    let helper = std::env::current_exe()
        .map_err(|e| AgentError::new(codes::INTERNAL, format!("this binary: {e}")))?;
    let sandbox = rein_sandbox::LinuxSandbox::binary_helper(helper, vec![root.clone()])
        .reading([root.clone()]);
    sandbox.check().await?;
    let env = [("PATH".to_owned(), "/usr/bin:/bin".to_owned())].into();
    rein_sandbox::RunCommand::new(
        Arc::new(sandbox),
        rein_sandbox::policy::CommandPolicy::default(),
        root,
        env,
    )
}
