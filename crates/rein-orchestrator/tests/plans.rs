//! A worked plan host: a product's release checklist (its plan packet)
//! becomes a graph — one task per step, the checks in parallel, the
//! announcement after all of them — and the run becomes the product's
//! release report (its result packet). A packet that makes no sense is
//! refused with the field named, and a plan whose steps depend on each
//! other in a circle never runs.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_orchestrator::{
    Attempt, GraphSpec, Outputs, PlanHost, Report, TaskRunner, TaskSpec, TaskState, run_plan,
};
use rein_wire::{AgentError, error::codes};
use serde_json::{Value, json};

/// The product's plans: release checklists.
struct Releases;

fn field<'a>(plan: &'a Value, name: &str) -> Result<&'a Value, AgentError> {
    plan.get(name).ok_or_else(|| {
        AgentError::new(
            codes::INVALID_INPUT,
            format!("the release plan has no `{name}`"),
        )
    })
}

impl PlanHost for Releases {
    fn compose(&self, plan: &Value) -> Result<GraphSpec, AgentError> {
        let version = field(plan, "version")?.as_str().unwrap_or_default();
        let checks = field(plan, "checks")?.as_array().ok_or_else(|| {
            AgentError::new(codes::INVALID_INPUT, "`checks` is a list of check names")
        })?;
        let mut tasks = Vec::new();
        let mut ids = Vec::new();
        for check in checks {
            let name = check.as_str().unwrap_or_default();
            let id = format!("check-{name}");
            tasks.push(
                TaskSpec::new(&id, format!("Run the {name} check for release {version}."))
                    .after(
                        &plan["after"]
                            .as_array()
                            .map_or(Vec::new(), |a| a.iter().filter_map(Value::as_str).collect()),
                    )
                    .yields(&["verdict"]),
            );
            ids.push(id);
        }
        let verdicts: String = ids
            .iter()
            .map(|id| format!("{id}: {{{{{id}.verdict}}}}\n"))
            .collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        tasks.push(
            TaskSpec::new(
                "announce",
                format!("Write the release note for {version} from:\n{verdicts}"),
            )
            .after(&refs)
            .yields(&["note"]),
        );
        Ok(GraphSpec {
            tasks,
            ..GraphSpec::default()
        })
    }

    fn summarise(&self, plan: &Value, report: &Report) -> Result<Value, AgentError> {
        let mut passed = Vec::new();
        let mut failed = Vec::new();
        let mut note = Value::Null;
        for (task, state) in &report.tasks {
            match (task.as_str(), state) {
                ("announce", TaskState::Succeeded { outputs, .. }) => {
                    note = json!(outputs["note"]);
                }
                (check, TaskState::Succeeded { outputs, .. }) => {
                    passed.push(json!({"check": check, "verdict": outputs["verdict"]}));
                }
                (check, _) => failed.push(json!(check)),
            }
        }
        Ok(json!({
            "version": plan["version"],
            "ready": failed.is_empty(),
            "passed": passed,
            "failed": failed,
            "note": note,
        }))
    }
}

/// Checks pass except `flaky-e2e`; the note lists the brief it was given.
struct Checks;

impl TaskRunner for Checks {
    fn run(&self, attempt: Attempt) -> BoxFuture<'static, Result<Outputs, AgentError>> {
        async move {
            match attempt.task.id.as_str() {
                "check-flaky-e2e" => Err(AgentError::new(codes::AGENT_UNFINISHED, "timed out")),
                "announce" => Ok([("note".to_owned(), attempt.brief)].into()),
                _ => Ok([("verdict".to_owned(), "ok".to_owned())].into()),
            }
        }
        .boxed()
    }
}

#[tokio::test(start_paused = true)]
async fn a_release_plan_runs_as_a_graph_and_comes_back_as_a_release_report() {
    let plan = json!({"version": "1.4.0", "checks": ["unit", "lint"]});
    let run = run_plan(&Releases, &plan, Arc::new(Checks)).await.unwrap();
    assert_eq!(run.result["ready"], true);
    assert_eq!(run.result["passed"].as_array().unwrap().len(), 2);
    let note = run.result["note"].as_str().unwrap();
    assert!(
        note.contains("check-unit: ok") && note.contains("check-lint: ok"),
        "{note}"
    );

    // A failing check: the announcement is skipped and the report says so.
    let plan = json!({"version": "1.4.1", "checks": ["unit", "flaky-e2e"]});
    let run = run_plan(&Releases, &plan, Arc::new(Checks)).await.unwrap();
    assert_eq!(run.result["ready"], false);
    assert_eq!(run.result["failed"], json!(["check-flaky-e2e", "announce"]));
    assert_eq!(run.result["note"], Value::Null);
}

#[tokio::test]
async fn a_plan_that_makes_no_sense_or_cannot_run_is_refused_before_anything_runs() {
    let err = run_plan(&Releases, &json!({"checks": []}), Arc::new(Checks))
        .await
        .unwrap_err();
    assert_eq!(err.code, codes::INVALID_INPUT);
    assert!(err.message.contains("`version`"), "{}", err.message);
    // Checks that wait for the announcement, which waits for them.
    let circular = json!({"version": "2", "checks": ["unit"], "after": ["announce"]});
    let err = run_plan(&Releases, &circular, Arc::new(Checks))
        .await
        .unwrap_err();
    assert_eq!(err.code, codes::GRAPH_INVALID);
    assert!(err.message.contains("→"), "{}", err.message);
}
