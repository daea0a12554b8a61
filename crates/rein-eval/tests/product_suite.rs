//! A product's own suite of its own agent: the product's tools in place
//! of the reference backend's (`run_case_with`), the same checks, and a
//! check that fails when the agent does otherwise.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::path::Path;
use std::sync::Arc;

use rein_eval::{ModelChoice, parse, run_case_with};
use rein_tools::{Outcome, PermissionClass, Registry, ToolBackend, tool_fn};
use serde_json::{Value, json};

const SUITE: &str = r#"
about = "A helpdesk's agent."

[[case]]
name = "looks_the_order_up"
turns = ["where is order 7?"]
model.rules = [{ phrase = "where", reply = "Looking.", calls = [{ tool = "lookup_order", arguments = { id = 7 } }] }]
[case.expect]
outcome = "finished"
calls = { lookup_order = 1 }
not_called = ["refund", "read_file"]

[[case]]
name = "a_refund_waits_for_the_person_who_says_no"
turns = ["refund order 7"]
approvals = ["no"]
model.rules = [{ phrase = "refund", reply = "Refunding.", calls = [{ tool = "refund", arguments = { id = 7 } }] }]
[case.expect]
outcome = "finished"
approvals_requested = 1
not_called = ["refund"]
"#;

fn helpdesk() -> Arc<dyn ToolBackend> {
    let lookup =
        |order: Value| async move { Outcome::ok(json!({"id": order["id"], "status": "shipped"})) };
    let refund = |order: Value| async move { Outcome::ok(json!({"refunded": order["id"]})) };
    let tools = Registry::new()
        .with(tool_fn(
            "lookup_order",
            "An order's status.",
            PermissionClass::Read,
            lookup,
        ))
        .unwrap()
        .with(tool_fn(
            "refund",
            "Refund an order.",
            PermissionClass::Write,
            refund,
        ))
        .unwrap();
    Arc::new(tools)
}

#[tokio::test]
async fn a_products_suite_runs_on_its_own_tools() {
    let cases = parse(SUITE, Path::new("helpdesk.toml")).unwrap();
    for case in &cases {
        let result = run_case_with(case, &ModelChoice::Scripted, Some(helpdesk())).await;
        assert!(result.passed, "{}: {:?}", case.case.name, result.failures);
    }
}

#[tokio::test]
async fn a_check_the_products_agent_breaks_fails() {
    let broken = SUITE.replace(
        "not_called = [\"refund\", \"read_file\"]",
        "not_called = [\"lookup_order\"]",
    );
    let cases = parse(&broken, Path::new("helpdesk.toml")).unwrap();
    let result = run_case_with(&cases[0], &ModelChoice::Scripted, Some(helpdesk())).await;
    assert!(!result.passed, "the lookup was called: the check must fail");
    // Without the product's tools the agent cannot look anything up.
    let result = run_case_with(&cases[0], &ModelChoice::Scripted, None).await;
    assert!(!result.passed, "the reference backend has no lookup_order");
}
