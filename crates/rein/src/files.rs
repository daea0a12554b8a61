//! The working directory's files as tools: the default tool set of
//! `rein chat`.
//!
//! `read_file`, `list_files` and `search` read; `write_file` writes a
//! source file (a person approves first); `delete_file` is destructive (a
//! person approves first). Every path is resolved inside the root the
//! person named (`--root DIR`, default the current directory): absolute
//! paths, `..` and symbolic links that lead outside it are refused.

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use rein_approvals::PermissionClass;
use rein_tools::{Outcome, Registry, Tool, ToolContext};
use rein_wire::AgentError;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Bounds on what the file tools read.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
const MAX_LIST: usize = 2_000;
const MAX_MATCHES: usize = 200;

/// The root the tools may touch.
#[derive(Debug)]
pub struct Root {
    dir: PathBuf,
    /// Bumped by every write, for the result cache.
    revision: AtomicU64,
}

impl Root {
    /// A root at `dir` (which must exist).
    pub fn new(dir: &Path) -> Result<Self, AgentError> {
        let dir = dir.canonicalize().map_err(|e| {
            AgentError::new(
                rein_wire::error::codes::INVALID_INPUT,
                format!("cannot use {} as the root: {e}", dir.display()),
            )
        })?;
        Ok(Root {
            dir,
            revision: AtomicU64::new(0),
        })
    }

    /// Resolve a relative path inside the root, or say why not.
    fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        let rel = Path::new(path);
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
        {
            return Err(format!("`{path}` is not a path inside the project root"));
        }
        let full = self.dir.join(rel);
        // Follow symbolic links of what exists and check it stays inside.
        let mut probe = full.clone();
        while !probe.exists() {
            if !probe.pop() {
                break;
            }
        }
        match probe.canonicalize() {
            Ok(real) if real.starts_with(&self.dir) => Ok(full),
            _ => Err(format!("`{path}` leads outside the project root")),
        }
    }

    fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.dir)
            .unwrap_or(path)
            .display()
            .to_string()
    }
}

/// The file tools over `root`.
pub fn file_tools(root: std::sync::Arc<Root>) -> Result<Registry, AgentError> {
    Registry::new()
        .with(ReadFile(root.clone()))?
        .with(ListFiles(root.clone()))?
        .with(Search(root.clone()))?
        .with(WriteFile(root.clone()))?
        .with(DeleteFile(root))
}

/// A file path, relative to the project root.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PathArg {
    /// The path, relative to the project root.
    pub path: String,
}

struct ReadFile(std::sync::Arc<Root>);

#[async_trait]
impl Tool for ReadFile {
    type Input = PathArg;
    fn name(&self) -> &str {
        "read_file"
    }
    fn description(&self) -> &str {
        "Read a text file of the project."
    }
    fn permission(&self, _: &PathArg) -> PermissionClass {
        PermissionClass::Read
    }
    async fn invoke(&self, input: PathArg, _: &ToolContext) -> Outcome {
        let path = match self.0.resolve(&input.path) {
            Ok(p) => p,
            Err(why) => return Outcome::failed("outside_root", why),
        };
        match std::fs::metadata(&path) {
            Ok(m) if m.len() > MAX_FILE_BYTES => {
                return Outcome::failed(
                    "too_large",
                    format!(
                        "`{}` is {} bytes; the limit is {MAX_FILE_BYTES}",
                        input.path,
                        m.len()
                    ),
                );
            }
            Ok(m) if !m.is_file() => {
                return Outcome::failed("not_a_file", format!("`{}` is not a file", input.path));
            }
            Err(e) => {
                return Outcome::failed("not_found", format!("cannot read `{}`: {e}", input.path));
            }
            Ok(_) => {}
        }
        match std::fs::read(&path) {
            Ok(bytes) => {
                Outcome::ok(json!({"path": input.path, "content": String::from_utf8_lossy(&bytes)}))
            }
            Err(e) => Outcome::failed("read_failed", format!("cannot read `{}`: {e}", input.path)),
        }
    }
}

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoArgs {}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if out.len() >= MAX_LIST {
            return;
        }
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') || name == "target" {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(&entry.path(), out);
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
}

struct ListFiles(std::sync::Arc<Root>);

#[async_trait]
impl Tool for ListFiles {
    type Input = NoArgs;
    fn name(&self) -> &str {
        "list_files"
    }
    fn description(&self) -> &str {
        "List the project's files (hidden files and target/ left out)."
    }
    fn permission(&self, _: &NoArgs) -> PermissionClass {
        PermissionClass::Read
    }
    async fn invoke(&self, _: NoArgs, _: &ToolContext) -> Outcome {
        let mut files = Vec::new();
        walk(&self.0.dir, &mut files);
        let names: Vec<String> = files.iter().map(|p| self.0.shown(p)).collect();
        Outcome::ok(json!({"files": names, "truncated": names.len() >= MAX_LIST}))
    }
}

/// What to look for.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// Text to find (case-sensitive).
    pub query: String,
}

struct Search(std::sync::Arc<Root>);

#[async_trait]
impl Tool for Search {
    type Input = SearchArgs;
    fn name(&self) -> &str {
        "search"
    }
    fn description(&self) -> &str {
        "Find lines containing some text in the project's files."
    }
    fn permission(&self, _: &SearchArgs) -> PermissionClass {
        PermissionClass::Read
    }
    async fn invoke(&self, input: SearchArgs, _: &ToolContext) -> Outcome {
        if input.query.is_empty() {
            return Outcome::failed("empty_query", "give some text to search for");
        }
        let mut files = Vec::new();
        walk(&self.0.dir, &mut files);
        let mut matches = Vec::new();
        'files: for file in files {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            for (n, line) in text.lines().enumerate() {
                if line.contains(&input.query) {
                    matches.push(json!({"path": self.0.shown(&file), "line": n + 1, "text": line.chars().take(300).collect::<String>()}));
                    if matches.len() >= MAX_MATCHES {
                        break 'files;
                    }
                }
            }
        }
        Outcome::ok(json!({"matches": matches}))
    }
}

/// A file to write.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// The path, relative to the project root.
    pub path: String,
    /// The file's new content.
    pub content: String,
}

struct WriteFile(std::sync::Arc<Root>);

#[async_trait]
impl Tool for WriteFile {
    type Input = WriteArgs;
    fn name(&self) -> &str {
        "write_file"
    }
    fn description(&self) -> &str {
        "Write (create or replace) a file of the project. The person approves it first."
    }
    fn permission(&self, _: &WriteArgs) -> PermissionClass {
        PermissionClass::SourceFileWrite
    }
    async fn invoke(&self, input: WriteArgs, _: &ToolContext) -> Outcome {
        let path = match self.0.resolve(&input.path) {
            Ok(p) => p,
            Err(why) => return Outcome::failed("outside_root", why),
        };
        if let Some(parent) = path.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            return Outcome::failed(
                "write_failed",
                format!("cannot create the folder for `{}`: {e}", input.path),
            );
        }
        match std::fs::write(&path, input.content.as_bytes()) {
            Ok(()) => {
                self.0.revision.fetch_add(1, Ordering::SeqCst);
                Outcome::Ok {
                    result: json!({"written": input.path, "bytes": input.content.len()}),
                    operation_id: None,
                    undo: false,
                    advanced: None,
                }
            }
            Err(e) => Outcome::failed(
                "write_failed",
                format!("cannot write `{}`: {e}", input.path),
            ),
        }
    }
}

struct DeleteFile(std::sync::Arc<Root>);

#[async_trait]
impl Tool for DeleteFile {
    type Input = PathArg;
    fn name(&self) -> &str {
        "delete_file"
    }
    fn description(&self) -> &str {
        "Delete a file of the project (cannot be undone). The person approves it first."
    }
    fn permission(&self, _: &PathArg) -> PermissionClass {
        PermissionClass::Destructive
    }
    async fn invoke(&self, input: PathArg, _: &ToolContext) -> Outcome {
        let path = match self.0.resolve(&input.path) {
            Ok(p) => p,
            Err(why) => return Outcome::failed("outside_root", why),
        };
        match std::fs::remove_file(&path) {
            Ok(()) => {
                self.0.revision.fetch_add(1, Ordering::SeqCst);
                Outcome::Ok {
                    result: json!({"deleted": input.path}),
                    operation_id: None,
                    undo: false,
                    advanced: None,
                }
            }
            Err(e) => Outcome::failed(
                "delete_failed",
                format!("cannot delete `{}`: {e}", input.path),
            ),
        }
    }
}
