//! The `ToolBackend` contract: checks any backend can run against itself.
//!
//! [`check_backend`] exercises the rules rein relies on — a sorted catalog
//! whose every tool has a definition with a compiling object schema,
//! coded errors for unknown tools and malformed arguments, outcomes (never
//! panics) from `invoke`, permission classes per arguments, a revision
//! token that only moves when something changes, cacheable tools that only
//! read, undo ids on undoable writes — and returns every violation found.

use rein_approvals::{PermissionClass, Policy};
use rein_tools::{Outcome, ToolBackend, ToolContext};
use serde_json::{Value, json};

/// One call to try, with the permission class it must get.
#[derive(Debug, Clone)]
pub struct ContractCase {
    /// The tool.
    pub tool: String,
    /// The arguments.
    pub args: Value,
    /// The class the backend must give these arguments.
    pub class: PermissionClass,
}

impl ContractCase {
    /// A case.
    pub fn new(tool: &str, args: Value, class: PermissionClass) -> Self {
        ContractCase {
            tool: tool.into(),
            args,
            class,
        }
    }
}

fn ctx() -> ToolContext {
    ToolContext {
        call_id: "contract".into(),
        session: String::new(),
        elevated: true,
        asked: true,
        policy: Policy::default(),
        progress: rein_tools::Progress::none(),
        app: rein_tools::AppContext::default(),
    }
}

/// Check `backend` against the contract, running `cases` (reads first is
/// wise: writes change the backend). Returns the violations, if any.
#[expect(clippy::too_many_lines, reason = "the contract's checks, in order")]
pub async fn check_backend(
    backend: &dyn ToolBackend,
    cases: &[ContractCase],
) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let catalog = backend.catalog(&Policy::default());
    let names: Vec<&str> = catalog.iter().map(|t| t.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted != names {
        problems.push(format!(
            "the catalog must be sorted by name without duplicates: {names:?}"
        ));
    }
    for tool in &catalog {
        match backend.definition(&tool.name) {
            None => problems.push(format!(
                "`{}` is in the catalog but has no definition",
                tool.name
            )),
            Some(spec) => {
                if spec.name != tool.name {
                    problems.push(format!(
                        "`{}`'s definition is named `{}`",
                        tool.name, spec.name
                    ));
                }
                if spec.input_schema.get("type").and_then(Value::as_str) != Some("object") {
                    problems.push(format!("`{}`'s schema must describe an object", tool.name));
                }
                if jsonschema::validator_for(&spec.input_schema).is_err() {
                    problems.push(format!("`{}`'s schema does not compile", tool.name));
                }
                if tool.purpose.trim().is_empty() {
                    problems.push(format!("`{}` has no purpose line", tool.name));
                }
            }
        }
        match backend.permission(&tool.name, &json!("not an object")) {
            Ok(_) => problems.push(format!(
                "`{}` accepted arguments that are not an object",
                tool.name
            )),
            Err(err) if err.code != rein_wire::error::codes::TOOL_ARGUMENTS_INVALID => {
                problems.push(format!(
                    "`{}` refused bad arguments with `{}`, not tool_arguments_invalid",
                    tool.name, err.code
                ));
            }
            Err(_) => {}
        }
    }
    match backend.permission("no_such_tool_anywhere", &json!({})) {
        Err(err) if err.code == rein_wire::error::codes::TOOL_NOT_FOUND => {}
        other => problems.push(format!(
            "an unknown tool must be tool_not_found, got {other:?}"
        )),
    }
    if backend
        .invoke("no_such_tool_anywhere", json!({}), &ctx())
        .await
        .is_ok()
    {
        problems.push("invoking an unknown tool must fail".into());
    }
    let before = backend.revision();
    if backend.revision() != before {
        problems.push("the revision token moved with nothing done".into());
    }
    for case in cases {
        match backend.permission(&case.tool, &case.args) {
            Ok(class) if class == case.class => {}
            Ok(class) => problems.push(format!(
                "`{}` {} got {class:?}, expected {:?}",
                case.tool, case.args, case.class
            )),
            Err(err) => {
                problems.push(format!("`{}` {} was refused: {err}", case.tool, case.args));
                continue;
            }
        }
        if backend.cacheable(&case.tool) && !case.class.is_read() {
            problems.push(format!(
                "`{}` is cacheable but {} is not a read",
                case.tool, case.args
            ));
        }
        let revision = backend.revision();
        let outcome = backend.invoke(&case.tool, case.args.clone(), &ctx()).await;
        match &outcome {
            Outcome::Ok {
                undo: true,
                operation_id: None,
                ..
            } => {
                problems.push(format!(
                    "`{}` says it can be undone but gives no operation id",
                    case.tool
                ));
            }
            Outcome::Failed { code, message, .. }
                if code.as_str().is_empty() || message.is_empty() =>
            {
                problems.push(format!("`{}` failed without a code and message", case.tool));
            }
            _ => {}
        }
        if case.class.is_read() && backend.revision() != revision {
            problems.push(format!("reading with `{}` moved the revision", case.tool));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}
