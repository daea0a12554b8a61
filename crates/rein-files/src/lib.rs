//! rein's file tools: the working directory's files as tools — the default
//! tool set of `rein chat`, `rein serve`, `rein run` and `rein mcp serve`,
//! and usable alone by a product that wants them.
//!
//! `read_file`, `list_files` and `search` read; `write_file` writes a
//! source file (a person approves first); `delete_file` is destructive (a
//! person approves first). Every path is resolved beneath the root the
//! person named (`--root DIR`, default the current directory) by [`Root`],
//! on the path actually opened: absolute paths, `..`, symbolic links and
//! hard links that lead outside it are refused. A write or delete that
//! could not run is refused before anyone is asked (`Tool::precheck`).
//!
//! Not here: the confinement itself (`root`), or who approves (the runner
//! and `rein-approvals`).

#[cfg(test)]
mod crash_tests;
mod edit;
mod find;
mod loose;
mod near;
mod protected;
mod root;
mod undo;

use std::sync::Arc;

use rein_tools::PermissionClass;
use rein_tools::{Outcome, Registry, Tool, ToolContext};
use rein_wire::{AgentError, Revision, error::codes};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

pub use edit::{Applied, Edit, EditArgs, EditFile, apply};
pub use protected::{Guarded, PROTECTED_NAMES, Protected};
pub use root::{MAX_FILE_BYTES, MAX_LIST, Refused, Root};
pub use undo::{Before, Stash, undo};

/// The most matching lines a search returns.
const MAX_MATCHES: usize = 200;

impl Refused {
    fn outcome(self) -> Outcome {
        Outcome::failed(self.code, self.message)
    }

    fn error(self) -> AgentError {
        AgentError::new(self.code, self.message)
    }
}

/// The file tools over `root`; with a `stash`, their writes, edits and
/// deletes can be undone (what they replaced is kept there).
pub fn file_tools(root: Arc<Root>, stash: Option<Stash>) -> Result<Registry, AgentError> {
    Registry::new()
        .with(ReadFile(root.clone()))?
        .with(ListFiles(root.clone()))?
        .with(Search(root.clone()))?
        .with(EditFile(root.clone(), stash.clone()))?
        .with(WriteFile(root.clone(), stash.clone()))?
        .with(DeleteFile(root, stash))
}

/// The file tools in `root` (default: the current directory), their undo
/// kept in `store`: the folder and the tools, for `rein run` and `rein serve`.
pub fn tools_in(
    root: Option<&std::path::Path>,
    store: &Arc<dyn rein_sessions::Store>,
) -> Result<(std::path::PathBuf, Arc<Registry>), AgentError> {
    let dir = match root {
        Some(root) => root.to_path_buf(),
        None => std::env::current_dir().map_err(|e| {
            AgentError::new(
                rein_wire::error::codes::INVALID_INPUT,
                format!("no working folder: {e}"),
            )
        })?,
    };
    let handle = Arc::new(Root::new(&dir)?);
    let tools = file_tools(handle, Some(Stash(store.clone())))?;
    Ok((dir, Arc::new(tools)))
}

/// Change `path` the one way every file tool does: what it holds is kept
/// for undo first (when there is a stash), then the file is written with
/// `after` (atomically) or removed (`None`), and the outcome `done` says
/// what the change left, which this conversation has now seen. A
/// protected path is changed only when the person was `asked` about this
/// very call (`ToolContext::asked`), decided on the folder opened.
async fn change(
    root: &Root,
    stash: Option<&Stash>,
    path: &str,
    (before, after): (undo::Before, Option<&[u8]>),
    done: serde_json::Value,
    asked: bool,
) -> Outcome {
    // Over the bound, refused before anything is kept for undo.
    if let Some(bytes) = after
        && let Err(refused) = Root::writable_size(path, bytes.len())
    {
        return refused.outcome();
    }
    let operation = match stash {
        Some(stash) => stash.keep(path, &before, after).await,
        None => None,
    };
    let changed = match after {
        Some(bytes) => root.write(path, bytes, None, asked),
        None => root.remove(path, asked),
    };
    match changed {
        Ok(()) => {
            let left = Revision::new(Root::resource(path), after.map(rein_sessions::hash_hex));
            undo::undoable(Outcome::ok(done).seen(left), operation)
        }
        Err(refused) => refused.outcome(),
    }
}

/// What `path` holds before a change, when the change is to be undoable
/// (a stash is kept): refused when it could not be kept.
fn undoable_now(
    stash: Option<&Stash>,
    root: &Root,
    path: &str,
) -> Result<undo::Before, AgentError> {
    match stash {
        Some(_) => undo::Before::keepable(root, path),
        None => Ok(undo::Before::of(root, path)),
    }
}

/// A change's class: `ordinary`, or `protected` when the path — by its
/// name or where it leads — is one that runs later on the person's machine.
fn class_of(root: &Root, path: &str, ordinary: PermissionClass) -> PermissionClass {
    if root.guarded(path).is_some() {
        PermissionClass::Protected
    } else {
        ordinary
    }
}

/// A preview as the person must see it: the path with where it leads
/// (`notes.md → .git/config`), and for a protected path first of all what
/// the file does.
fn guarded_preview(root: &Root, path: &str, preview: rein_wire::Preview) -> rein_wire::Preview {
    let shown = root.shown(path);
    let guarded = root.guarded(path);
    if shown == path && guarded.is_none() {
        return preview;
    }
    let mut text = String::new();
    if let Some(guarded) = guarded {
        text.push_str(&format!(
            "PROTECTED {}: {}. Asked each time; \"always\" does not cover it.\n",
            guarded.target, guarded.what
        ));
    }
    if shown != path {
        text.push_str(&format!(
            "{shown}: a link; the change lands in what it leads to\n"
        ));
    }
    text.push_str(&preview.text);
    let mut shown_preview = rein_wire::Preview::new(preview.kind, shown, text);
    shown_preview.truncated |= preview.truncated;
    shown_preview
}

/// A file path, relative to the project root.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PathArg {
    /// The path, relative to the project root.
    pub path: String,
}

struct ReadFile(Arc<Root>);

impl Tool for ReadFile {
    type Input = PathArg;
    fn name(&self) -> &str {
        "read_file"
    }
    fn description(&self) -> &str {
        "Read a text file of the project. Read a file before you change it: edits and writes to a file this conversation has not read (or that changed since) are refused."
    }
    fn permission(&self, _: &PathArg) -> PermissionClass {
        PermissionClass::Read
    }
    async fn invoke(&self, input: PathArg, _: &ToolContext) -> Outcome {
        match self.0.read(&input.path) {
            Ok(bytes) => {
                let seen = Revision::new(
                    Root::resource(&input.path),
                    Some(rein_sessions::hash_hex(&bytes)),
                );
                Outcome::ok(json!({"path": input.path, "content": String::from_utf8_lossy(&bytes)}))
                    .seen(seen)
            }
            Err(mut refused) => {
                if refused.code == codes::FILE_NOT_FOUND {
                    refused.message.push_str(&near::near(&self.0, &input.path));
                }
                refused.outcome()
            }
        }
    }
}

/// Which folder to list.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListArgs {
    /// A folder relative to the project root; the whole project when left out.
    #[serde(default)]
    pub path: Option<String>,
}

struct ListFiles(Arc<Root>);

impl Tool for ListFiles {
    type Input = ListArgs;
    fn name(&self) -> &str {
        "list_files"
    }
    fn description(&self) -> &str {
        "List the project's files, or those under one folder (hidden files and target/ left out)."
    }
    fn permission(&self, _: &ListArgs) -> PermissionClass {
        PermissionClass::Read
    }
    async fn invoke(&self, input: ListArgs, _: &ToolContext) -> Outcome {
        let folder = input.path.as_deref().filter(|p| !p.is_empty() && *p != ".");
        match self.0.walk(folder) {
            Ok(files) => {
                let truncated = files.len() >= MAX_LIST;
                Outcome::ok(json!({"files": files, "truncated": truncated}))
            }
            Err(refused) => refused.outcome(),
        }
    }
}

/// What to look for.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// Text to find (case-sensitive).
    pub query: String,
}

struct Search(Arc<Root>);

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
            return Outcome::failed(
                codes::TOOL_ARGUMENTS_INVALID,
                "give some text to search for",
            );
        }
        let files = match self.0.walk(None) {
            Ok(files) => files,
            Err(refused) => return refused.outcome(),
        };
        let mut matches = Vec::new();
        let mut skipped: Vec<String> = Vec::new();
        'files: for file in files {
            // The same guarded read as read_file: a hard link to an
            // outside file is skipped and named, never searched.
            let bytes = match self.0.read(&file) {
                Ok(bytes) => bytes,
                Err(refused) => {
                    if refused.code == codes::HARD_LINK {
                        skipped.push(file);
                    }
                    continue;
                }
            };
            let Ok(text) = String::from_utf8(bytes) else {
                continue;
            };
            for (n, line) in text.lines().enumerate() {
                if line.contains(&input.query) {
                    matches.push(json!({"path": file, "line": n + 1, "text": line.chars().take(300).collect::<String>()}));
                    if matches.len() >= MAX_MATCHES {
                        break 'files;
                    }
                }
            }
        }
        let mut result = json!({"matches": matches});
        if !skipped.is_empty() {
            result["skipped_hard_links"] = json!(skipped);
        }
        Outcome::ok(result)
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

struct WriteFile(Arc<Root>, Option<Stash>);

impl Tool for WriteFile {
    type Input = WriteArgs;
    fn name(&self) -> &str {
        "write_file"
    }
    fn description(&self) -> &str {
        "Create a new file of the project with `content`. To change a file that exists, use edit_file: \
         write_file replaces the whole file, so everything not in `content` is lost, and it is \
         refused unless this conversation has read the file as it is now. The person approves it first."
    }
    fn permission(&self, input: &WriteArgs) -> PermissionClass {
        class_of(&self.0, &input.path, PermissionClass::SourceFileWrite)
    }
    fn precheck(&self, input: &WriteArgs) -> Result<(), AgentError> {
        Root::writable_size(&input.path, input.content.len()).map_err(Refused::error)?;
        self.0.precheck_write(&input.path).map_err(Refused::error)?;
        undoable_now(self.1.as_ref(), &self.0, &input.path).map(drop)
    }
    fn preview(&self, input: &WriteArgs) -> Option<rein_wire::Preview> {
        Some(guarded_preview(
            &self.0,
            &input.path,
            edit::write_preview(&self.0, &input.path, &input.content),
        ))
    }
    fn changes(&self, input: &WriteArgs) -> Option<Revision> {
        Some(self.0.revision(&input.path))
    }
    fn read_first(&self, input: &WriteArgs) -> Option<(String, Value)> {
        Some(read_of(&input.path))
    }
    async fn invoke(&self, input: WriteArgs, ctx: &ToolContext) -> Outcome {
        let before = match undoable_now(self.1.as_ref(), &self.0, &input.path) {
            Ok(before) => before,
            Err(refused) => return Outcome::from_error(&refused),
        };
        let done = json!({"written": input.path, "bytes": input.content.len()});
        let after = Some(input.content.as_bytes());
        let (root, stash) = (&self.0, self.1.as_ref());
        change(root, stash, &input.path, (before, after), done, ctx.asked).await
    }

    async fn undo(&self, operation_id: &str) -> Option<Result<String, AgentError>> {
        self.1.as_ref()?.undo_in(&self.0, operation_id).await
    }
}

/// The `read_file` call that shows `path` as it is now: what a change of
/// it refused as not read is answered with (`Tool::read_first`).
fn read_of(path: &str) -> (String, Value) {
    ("read_file".to_owned(), json!({ "path": path }))
}

struct DeleteFile(Arc<Root>, Option<Stash>);

impl Tool for DeleteFile {
    type Input = PathArg;
    fn name(&self) -> &str {
        "delete_file"
    }
    fn description(&self) -> &str {
        "Delete a file of the project (a symbolic link is removed itself); read it first. The person approves it first, and can undo it."
    }
    fn permission(&self, input: &PathArg) -> PermissionClass {
        class_of(&self.0, &input.path, PermissionClass::Destructive)
    }
    fn precheck(&self, input: &PathArg) -> Result<(), AgentError> {
        self.0
            .precheck_delete(&input.path)
            .map_err(Refused::error)?;
        if self.0.link_target(&input.path).is_some() {
            return Ok(());
        }
        undoable_now(self.1.as_ref(), &self.0, &input.path).map(drop)
    }
    fn preview(&self, input: &PathArg) -> Option<rein_wire::Preview> {
        Some(guarded_preview(
            &self.0,
            &input.path,
            edit::delete_preview(&self.0, &input.path),
        ))
    }
    fn read_first(&self, input: &PathArg) -> Option<(String, Value)> {
        Some(read_of(&input.path))
    }
    fn changes(&self, input: &PathArg) -> Option<Revision> {
        // Removing a link loses no content (undo makes it again).
        self.0
            .link_target(&input.path)
            .is_none()
            .then(|| self.0.revision(&input.path))
    }
    async fn invoke(&self, input: PathArg, ctx: &ToolContext) -> Outcome {
        // A link is deleted as a link: undo makes the link again.
        let before = match self.0.link_target(&input.path) {
            Some(target) => undo::Before::Link(target),
            None => match undoable_now(self.1.as_ref(), &self.0, &input.path) {
                Ok(before) => before,
                Err(refused) => return Outcome::from_error(&refused),
            },
        };
        let done = json!({"deleted": input.path});
        let (root, stash) = (&self.0, self.1.as_ref());
        change(root, stash, &input.path, (before, None), done, ctx.asked).await
    }

    async fn undo(&self, operation_id: &str) -> Option<Result<String, AgentError>> {
        self.1.as_ref()?.undo_in(&self.0, operation_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
        std::fs::write(dir.path().join("b.txt"), "beta\n").unwrap();
        dir
    }

    #[tokio::test]
    async fn the_file_tools_meet_the_backend_contract_and_stay_inside_the_root() {
        use rein_testing::contract::{ContractCase, check_backend};
        use rein_tools::PermissionClass;
        let root = project();
        let backend =
            file_tools(std::sync::Arc::new(Root::new(root.path()).unwrap()), None).unwrap();
        let cases = [
            ContractCase::new("read_file", json!({"path": "a.txt"}), PermissionClass::Read),
            ContractCase::new("list_files", json!({}), PermissionClass::Read),
            ContractCase::new("search", json!({"query": "alpha"}), PermissionClass::Read),
            ContractCase::new(
                "write_file",
                json!({"path": "sub/c.txt", "content": "gamma"}),
                PermissionClass::SourceFileWrite,
            ),
            ContractCase::new(
                "delete_file",
                json!({"path": "b.txt"}),
                PermissionClass::Destructive,
            ),
        ];
        check_backend(&backend, &cases).await.unwrap();
        assert_eq!(
            std::fs::read_to_string(root.path().join("sub/c.txt")).unwrap(),
            "gamma"
        );
        // Nothing outside the root, by .., absolute path or symbolic link.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
        let ctx = rein_tools::ToolContext {
            call_id: "c".into(),
            session: String::new(),
            elevated: true,
            asked: true,
            policy: rein_tools::Policy::default(),
            progress: rein_tools::Progress::none(),
            app: rein_tools::AppContext::default(),
        };
        use rein_tools::ToolBackend;
        for path in ["../x", "/etc/passwd", "link/secret", "sub/../../x"] {
            let read = backend
                .invoke("read_file", json!({"path": path}), &ctx)
                .await;
            assert!(!read.is_ok(), "{path}");
            let write = backend
                .invoke("write_file", json!({"path": path, "content": "no"}), &ctx)
                .await;
            assert!(!write.is_ok(), "{path}");
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "s"
        );
        // list_files takes a folder, inside the root only.
        let listed = backend
            .invoke("list_files", json!({"path": "sub"}), &ctx)
            .await;
        let rein_tools::Outcome::Ok { result, .. } = listed else {
            panic!("{listed:?}")
        };
        assert_eq!(result["files"], json!(["sub/c.txt"]));
        for path in ["..", "/", "link"] {
            let listed = backend
                .invoke("list_files", json!({"path": path}), &ctx)
                .await;
            assert!(!listed.is_ok(), "{path}");
        }
    }
}

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
