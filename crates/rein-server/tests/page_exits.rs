//! A command that ran and failed, on the page (in Chromium): its call
//! succeeded, its command did not — the page shows its exit status and
//! never marks it ok.

use std::sync::Arc;

use crate::browser::Browser;
use crate::page::serve_beside;
use rein_tools::{Outcome, PermissionClass, Registry, Tool, ToolContext};
use serde_json::json;

/// No input.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// A product's test runner whose tests fail: it runs, and exits 1.
struct RunTests;

impl Tool for RunTests {
    type Input = Nothing;
    fn name(&self) -> &str {
        "run_tests"
    }
    fn description(&self) -> &str {
        "Run the project's tests."
    }
    fn permission(&self, _: &Nothing) -> PermissionClass {
        PermissionClass::Read
    }
    async fn invoke(&self, _: Nothing, _: &ToolContext) -> Outcome {
        Outcome::ok(json!({"exit_code": 1, "stdout": "1 passed, 1 failed"}))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_ran_and_failed_is_shown_by_its_exit_status_not_as_ok() {
    let tests = Registry::new().with(RunTests).unwrap();
    let (addr, login, _backend, _dir) = serve_beside(Some(Arc::new(tests)), |s| s).await;
    let browser = Browser::start().await;
    browser.new_conversation(addr, &login).await;
    browser.type_in("#say", "run the tests").await;
    browser.click("#send").await;
    browser
        .until(
            "document.querySelector('details.tool.exited')",
            "the failed command's result",
        )
        .await;
    let summary = browser
        .script("return document.querySelector('details.tool.exited summary').innerText;")
        .await;
    assert!(summary.as_str().unwrap().ends_with("· exit 1"), "{summary}");
    let marked_ok = browser
        .script("return document.querySelectorAll('details.tool.ok').length;")
        .await;
    assert_eq!(marked_ok, json!(0));
}
