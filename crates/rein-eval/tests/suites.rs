//! The suites in `tests/evals` load, cover what they must, and their checks
//! can fail.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::path::PathBuf;

use rein_eval::{ModelChoice, load, run_case};

fn suites() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/evals")
}

#[test]
fn the_suites_have_twenty_cases_over_every_area() {
    let cases = load(&suites()).unwrap();
    assert!(cases.len() >= 20, "{} cases", cases.len());
    for area in [
        "loop",
        "approvals",
        "offload",
        "cache",
        "compaction",
        "structured",
    ] {
        assert!(
            cases.iter().any(|c| c.case.covers == area),
            "no case covers {area}"
        );
    }
}

fn one(text: &str) -> rein_eval::LoadedCase {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.toml");
    std::fs::write(&path, text).unwrap();
    load(&path).unwrap().remove(0)
}

#[tokio::test]
async fn a_wrong_expectation_fails_with_its_reason() {
    let case = one(r#"
[[case]]
name = "wrong"
turns = ["read a.rs"]
backend.files = { "a.rs" = "fn alpha() {}" }
model.rules = [{ phrase = "read ", reply = "Reading.", calls = [{ tool = "read_file", word_into = "path" }] }]
[case.expect]
outcome = "loop_detected"
answer_contains = ["beta"]
not_called = ["read_file"]
approvals_requested = 1
steps_at_most = 1
files = { "b.rs" = "x" }
"#);
    let result = run_case(&case, &ModelChoice::Scripted).await;
    assert!(!result.passed);
    assert_eq!(result.outcome, "finished");
    assert_eq!(result.steps, 2);
    let failures = result.failures.join("\n");
    for expected in [
        "outcome is `finished`, not `loop_detected`",
        "the answer does not contain `beta`",
        "`read_file` ran 1 time(s)",
        "0 approval(s) requested, not 1",
        "steps 2 > 1",
        "`b.rs` does not exist",
    ] {
        assert!(
            failures.contains(expected),
            "missing {expected:?} in\n{failures}"
        );
    }
}

#[tokio::test]
async fn an_approval_script_left_over_is_a_failure() {
    let case = one(r#"
[[case]]
name = "leftover"
turns = ["hello"]
approvals = ["yes"]
model.rules = [{ phrase = "hello", reply = "Hi." }]
"#);
    let result = run_case(&case, &ModelChoice::Scripted).await;
    assert!(!result.passed);
    assert!(
        result.failures[0].contains("never asked for"),
        "{:?}",
        result.failures
    );
}

#[tokio::test]
async fn a_case_sets_its_turns_wall_time() {
    let case = one(r#"
[[case]]
name = "slow"
turns = ["read a.rs"]
backend.files = { "a.rs" = "fn alpha() {}" }
limits.wall_secs = 0
model.rules = [{ phrase = "read ", reply = "Reading.", calls = [{ tool = "read_file", word_into = "path" }] }]
"#);
    let result = run_case(&case, &ModelChoice::Scripted).await;
    assert_eq!(result.outcome, "budget:wall_time", "{:?}", result.failures);
}

#[test]
fn a_misspelt_check_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "[[case]]\nname = \"x\"\nturns = [\"hi\"]\n[case.expect]\nanswer_contain = [\"hi\"]\n",
    )
    .unwrap();
    let err = load(&path).unwrap_err().to_string();
    assert!(
        err.contains("bad.toml") && err.contains("answer_contain"),
        "{err}"
    );
    std::fs::write(
        &path,
        "[[case]]\nname = \"x\"\nturns = [\"hi\"]\napprovals = [\"maybe\"]\n",
    )
    .unwrap();
    let err = load(&path).unwrap_err().to_string();
    assert!(err.contains("maybe"), "{err}");
}
