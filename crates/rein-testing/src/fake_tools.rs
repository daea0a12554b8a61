//! [`FakeToolBackend`]: the reference backend — an in-memory project of
//! files and notes with a revision counter: reads (cacheable), a reversible
//! write with undo, a source-file write with a revision guard, a
//! destructive delete, and a read that returns more than fits (to exercise
//! offloading). It counts invocations so tests can prove what ran.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rein_approvals::{PermissionClass, Policy};
use rein_tools::{
    Advanced, Outcome, Registry, RevisionGuard, Tool, ToolBackend, ToolContext, ToolSummary,
};
use rein_wire::{AgentError, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// The project the fake tools work on.
#[derive(Debug, Default)]
pub struct Project {
    /// Files by path.
    pub files: BTreeMap<String, String>,
    /// Notes by key (the reversible writes).
    pub notes: BTreeMap<String, String>,
    /// Bumped by every change.
    pub revision: u64,
    /// Invocations per tool.
    pub invocations: BTreeMap<String, u64>,
    /// Undo records: operation id -> (key, previous value).
    pub undo: BTreeMap<String, (String, Option<String>)>,
}

type Shared = Arc<Mutex<Project>>;

fn lock(p: &Shared) -> std::sync::MutexGuard<'_, Project> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

fn count(p: &Shared, tool: &str) {
    *lock(p).invocations.entry(tool.to_owned()).or_default() += 1;
}

/// The reference [`ToolBackend`].
pub struct FakeToolBackend {
    registry: Registry,
    project: Shared,
}

impl FakeToolBackend {
    /// A backend over these files.
    pub fn new(files: &[(&str, &str)]) -> Result<Self, AgentError> {
        let project: Shared = Arc::new(Mutex::new(Project {
            files: files
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..Project::default()
        }));
        let registry = Registry::new()
            .with(ReadFile(project.clone()))?
            .with(ListFiles(project.clone()))?
            .with(WriteFile(project.clone()))?
            .with(SetNote(project.clone()))?
            .with(DeleteFile(project.clone()))?
            .with(BigRead(project.clone()))?
            .with(Snapshot(project.clone()))?;
        Ok(FakeToolBackend { registry, project })
    }

    /// The project, to inspect in tests.
    pub fn project(&self) -> Arc<Mutex<Project>> {
        self.project.clone()
    }

    /// How many times `tool` ran.
    pub fn invocations(&self, tool: &str) -> u64 {
        lock(&self.project)
            .invocations
            .get(tool)
            .copied()
            .unwrap_or(0)
    }
}

#[async_trait]
impl ToolBackend for FakeToolBackend {
    fn catalog(&self, policy: &Policy) -> Vec<ToolSummary> {
        self.registry.catalog(policy)
    }
    fn definition(&self, name: &str) -> Option<ToolSpec> {
        self.registry.definition(name)
    }
    fn permission(&self, name: &str, args: &Value) -> Result<PermissionClass, AgentError> {
        self.registry.permission(name, args)
    }
    async fn invoke(&self, name: &str, args: Value, ctx: &ToolContext) -> Outcome {
        self.registry.invoke(name, args, ctx).await
    }
    async fn undo(&self, operation_id: &str) -> Option<Result<String, AgentError>> {
        self.registry.undo(operation_id).await
    }
    fn cacheable(&self, name: &str) -> bool {
        self.registry.cacheable(name)
    }
    fn revision(&self) -> String {
        format!("r{}", lock(&self.project).revision)
    }
    fn skills(&self) -> Vec<ToolSummary> {
        vec![ToolSummary {
            name: "style".into(),
            purpose: "How code in this project is written.".into(),
        }]
    }
    fn read_skill(&self, name: &str) -> Option<String> {
        (name == "style").then(|| {
            "Functions are short; every file starts with a comment saying what it is for."
                .to_owned()
        })
    }
    fn revision_guard(&self) -> Option<RevisionGuard> {
        Some(RevisionGuard {
            scope_arg: None,
            expected_arg: "expected_revision".into(),
        })
    }
}

/// A path in the project.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PathInput {
    /// The file's path.
    pub path: String,
}

struct ReadFile(Shared);

impl Tool for ReadFile {
    type Input = PathInput;
    fn name(&self) -> &str {
        "read_file"
    }
    fn description(&self) -> &str {
        "Read a file of the project."
    }
    fn permission(&self, _: &PathInput) -> PermissionClass {
        PermissionClass::Read
    }
    fn cacheable(&self) -> bool {
        true
    }
    async fn invoke(&self, input: PathInput, _: &ToolContext) -> Outcome {
        count(&self.0, "read_file");
        let p = lock(&self.0);
        match p.files.get(&input.path) {
            Some(content) => {
                Outcome::ok(json!({"path": input.path, "content": content, "revision": p.revision}))
            }
            None => Outcome::failed(
                rein_wire::error::codes::FILE_NOT_FOUND,
                format!("there is no file `{}`", input.path),
            ),
        }
    }
}

/// No input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoInput {}

struct ListFiles(Shared);

impl Tool for ListFiles {
    type Input = NoInput;
    fn name(&self) -> &str {
        "list_files"
    }
    fn description(&self) -> &str {
        "List the project's files."
    }
    fn permission(&self, _: &NoInput) -> PermissionClass {
        PermissionClass::Read
    }
    fn cacheable(&self) -> bool {
        true
    }
    async fn invoke(&self, _: NoInput, _: &ToolContext) -> Outcome {
        count(&self.0, "list_files");
        let files: Vec<String> = lock(&self.0).files.keys().cloned().collect();
        Outcome::ok(json!({"files": files}))
    }
}

/// A file to write.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteInput {
    /// The file's path.
    pub path: String,
    /// Its new content.
    pub content: String,
    /// Refuse unless the project is at this revision.
    pub expected_revision: Option<u64>,
}

struct WriteFile(Shared);

impl Tool for WriteFile {
    type Input = WriteInput;
    fn name(&self) -> &str {
        "write_file"
    }
    fn description(&self) -> &str {
        "Write a file of the project (asks the person first)."
    }
    fn permission(&self, _: &WriteInput) -> PermissionClass {
        PermissionClass::SourceFileWrite
    }
    async fn invoke(&self, input: WriteInput, _: &ToolContext) -> Outcome {
        count(&self.0, "write_file");
        let mut p = lock(&self.0);
        if let Some(expected) = input.expected_revision
            && expected != p.revision
        {
            return Outcome::failed(
                "revision_conflict",
                format!("the project is at revision {}, not {expected}", p.revision),
            );
        }
        p.files.insert(input.path.clone(), input.content);
        let before = p.revision;
        p.revision += 1;
        Outcome::Ok {
            result: json!({"written": input.path, "revision": p.revision}),
            operation_id: None,
            undo: false,
            seen: None,
            advanced: Some(Advanced {
                scope: "default".into(),
                before: before.to_string(),
                after: p.revision.to_string(),
            }),
        }
    }
}

/// A note to set.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoteInput {
    /// The note's key.
    pub key: String,
    /// Its value.
    pub value: String,
}

struct SetNote(Shared);

impl Tool for SetNote {
    type Input = NoteInput;
    fn name(&self) -> &str {
        "set_note"
    }
    fn description(&self) -> &str {
        "Set a note (can be undone)."
    }
    fn permission(&self, _: &NoteInput) -> PermissionClass {
        PermissionClass::ReversibleWrite
    }
    async fn invoke(&self, input: NoteInput, _: &ToolContext) -> Outcome {
        count(&self.0, "set_note");
        let mut p = lock(&self.0);
        let previous = p.notes.insert(input.key.clone(), input.value);
        p.revision += 1;
        let op = format!("op-{}", p.revision);
        p.undo.insert(op.clone(), (input.key.clone(), previous));
        Outcome::Ok {
            result: json!({"set": input.key}),
            operation_id: Some(op),
            undo: true,
            seen: None,
            advanced: None,
        }
    }

    /// A product's own undo, through the operation id its result gave.
    async fn undo(&self, operation_id: &str) -> Option<Result<String, AgentError>> {
        let mut p = lock(&self.0);
        let (key, previous) = p.undo.remove(operation_id)?;
        match previous {
            Some(value) => p.notes.insert(key.clone(), value),
            None => p.notes.remove(&key),
        };
        p.revision += 1;
        Some(Ok(format!("note {key}")))
    }
}

struct DeleteFile(Shared);

impl Tool for DeleteFile {
    type Input = PathInput;
    fn name(&self) -> &str {
        "delete_file"
    }
    fn description(&self) -> &str {
        "Delete a file (cannot be undone; asks the person first)."
    }
    fn permission(&self, _: &PathInput) -> PermissionClass {
        PermissionClass::Destructive
    }
    async fn invoke(&self, input: PathInput, _: &ToolContext) -> Outcome {
        count(&self.0, "delete_file");
        let mut p = lock(&self.0);
        match p.files.remove(&input.path) {
            Some(_) => {
                p.revision += 1;
                Outcome::Ok {
                    result: json!({"deleted": input.path}),
                    operation_id: None,
                    undo: false,
                    seen: None,
                    advanced: None,
                }
            }
            None => Outcome::failed(
                rein_wire::error::codes::FILE_NOT_FOUND,
                format!("there is no file `{}`", input.path),
            ),
        }
    }
}

/// How much to read.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SizeInput {
    /// Lines of output.
    pub lines: u32,
}

struct BigRead(Shared);

impl Tool for BigRead {
    type Input = SizeInput;
    fn name(&self) -> &str {
        "read_log"
    }
    fn description(&self) -> &str {
        "Read the project's build log (it can be long)."
    }
    fn permission(&self, _: &SizeInput) -> PermissionClass {
        PermissionClass::Read
    }
    async fn invoke(&self, input: SizeInput, _: &ToolContext) -> Outcome {
        count(&self.0, "read_log");
        let log: String = (0..input.lines.min(100_000))
            .map(|i| format!("line {i}: compiling module_{i}\n"))
            .collect();
        Outcome::ok(json!({"log": log}))
    }
}

struct Snapshot(Shared);

impl Tool for Snapshot {
    type Input = NoInput;
    fn name(&self) -> &str {
        "snapshot"
    }
    fn description(&self) -> &str {
        "Take a picture of the project's window."
    }
    fn permission(&self, _: &NoInput) -> PermissionClass {
        PermissionClass::Read
    }
    async fn invoke(&self, _: NoInput, _: &ToolContext) -> Outcome {
        count(&self.0, "snapshot");
        // A 1x1 PNG.
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        Outcome::ok(
            json!({"window": "main", "_images": [{"media_type": "image/png", "data": png}]}),
        )
    }
}
