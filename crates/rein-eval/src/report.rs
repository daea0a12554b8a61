//! The scored table, the JSON report, and the comparison with a baseline.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::run::CaseResult;

/// A whole eval run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The model the cases ran against.
    pub model: String,
    /// When (RFC 3339, UTC).
    pub date: String,
    /// Cases run, each try counted (skipped ones excluded).
    pub ran: u64,
    /// Tries that passed.
    pub passed: u64,
    /// passed / ran.
    pub pass_rate: f64,
    /// Each case.
    pub cases: Vec<CaseResult>,
}

impl Report {
    /// A report of `cases` against `model`.
    pub fn new(model: String, date: String, cases: Vec<CaseResult>) -> Self {
        // Each try counts: three tries of a case are three runs.
        let ran = cases.iter().filter(|c| !c.skipped).map(|c| c.tries).sum();
        let passed = cases.iter().filter(|c| !c.skipped).map(|c| c.passes).sum();
        Report {
            model,
            date,
            ran,
            passed,
            pass_rate: if ran == 0 {
                0.0
            } else {
                passed as f64 / ran as f64
            },
            cases,
        }
    }

    /// The table a person reads.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let width = self
            .cases
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let _ = writeln!(
            out,
            "{:<width$}  {:<6}  {:>5}  {:>8}  {:>10}  {:>5}  {:>7}",
            "case", "result", "steps", "tokens", "cost µUSD", "cache", "ms"
        );
        for c in &self.cases {
            let result = if c.skipped {
                "skip".to_owned()
            } else if c.tries > 1 {
                format!("{}/{}", c.passes, c.tries)
            } else if c.passed {
                "pass".to_owned()
            } else {
                "FAIL".to_owned()
            };
            let _ = writeln!(
                out,
                "{:<width$}  {:<6}  {:>5}  {:>8}  {:>10}  {:>5.2}  {:>7}",
                c.name, result, c.steps, c.tokens, c.cost_micro_usd, c.cache_read_share, c.ms
            );
        }
        for c in self.cases.iter().filter(|c| !c.passed) {
            let _ = writeln!(out, "\n{} ({}): outcome {}", c.name, c.suite, c.outcome);
            for failure in &c.failures {
                let _ = writeln!(out, "  - {failure}");
            }
            if !c.trail.is_empty() {
                let _ = writeln!(out, "  calls: {}", c.trail.join(" · "));
            }
            if !c.answer.is_empty() {
                let shown: String = c.answer.chars().take(300).collect();
                let _ = writeln!(out, "  answer: {shown}");
            }
            // The other failed tries, one line each: how it ended and its calls.
            for t in c.failed_tries.iter().skip(1) {
                let calls = if t.trail.is_empty() {
                    "no call".to_owned()
                } else {
                    t.trail.join(" · ")
                };
                let _ = writeln!(out, "  try {} ({}): {calls}", t.try_number, t.outcome);
            }
        }
        let _ = writeln!(
            out,
            "\n{} of {} runs passed ({:.0}%) against {}",
            self.passed,
            self.ran,
            self.pass_rate * 100.0,
            self.model
        );
        out
    }
}

/// Regressions of `now` against `baseline`: a case that passed and now
/// fails, or that now needs more steps, more than 10% more tokens or cost,
/// or reads a share of its prompt from the cache lower by more than 0.05.
/// Times are not compared (they are not deterministic).
pub fn regressions(baseline: &Report, now: &Report) -> Vec<String> {
    let mut found = Vec::new();
    for before in &baseline.cases {
        let Some(after) = now.cases.iter().find(|c| c.name == before.name) else {
            found.push(format!("{}: in the baseline but not run", before.name));
            continue;
        };
        if before.skipped || after.skipped {
            continue;
        }
        if before.passed && !after.passed {
            found.push(format!("{}: passed before, fails now", before.name));
        }
        if after.steps > before.steps {
            found.push(format!(
                "{}: {} steps, {} before",
                before.name, after.steps, before.steps
            ));
        }
        let grew = |now: u64, then: u64| now as f64 > then as f64 * 1.10 + 1.0;
        if grew(after.tokens, before.tokens) {
            found.push(format!(
                "{}: {} tokens, {} before",
                before.name, after.tokens, before.tokens
            ));
        }
        if grew(after.cost_micro_usd, before.cost_micro_usd) {
            found.push(format!(
                "{}: cost {} µUSD, {} before",
                before.name, after.cost_micro_usd, before.cost_micro_usd
            ));
        }
        if after.cache_read_share + 0.05 < before.cache_read_share {
            found.push(format!(
                "{}: cache read share {:.3}, {:.3} before",
                before.name, after.cache_read_share, before.cache_read_share
            ));
        }
    }
    found
}

#[cfg(test)]
mod tests {

    use super::*;

    fn case(name: &str, passed: bool, steps: u64, tokens: u64) -> CaseResult {
        CaseResult {
            suite: "s".into(),
            name: name.into(),
            covers: "loop".into(),
            skipped: false,
            passed,
            failures: if passed {
                vec![]
            } else {
                vec!["outcome".into()]
            },
            outcome: "finished".into(),
            answer: String::new(),
            steps,
            tokens,
            cost_micro_usd: 0,
            cache_read_share: 0.5,
            compactions: 0,
            summary_checks: Vec::new(),
            pressures: None,
            approvals: 0,
            agents: 0,
            tool_results: 0,
            trail: Vec::new(),
            ms: 3,
            tries: 1,
            passes: u64::from(passed),
            failed_tries: Vec::new(),
        }
    }

    #[test]
    fn every_failed_try_of_several_is_kept_and_shown() {
        let mut first = case("a", false, 2, 100);
        first.trail = vec!["read_file x.py: not_found".into()];
        let second = case("a", true, 2, 100);
        let mut third = case("a", false, 3, 100);
        third.trail = vec!["edit_file x.py: not_read".into()];
        third.answer = "é".repeat(1000);
        let one = CaseResult::of_tries(vec![first, second, third]).unwrap();
        assert_eq!((one.tries, one.passes, one.passed), (3, 1, false));
        let numbers: Vec<u64> = one.failed_tries.iter().map(|t| t.try_number).collect();
        assert_eq!(numbers, vec![1, 3]);
        assert_eq!(one.failed_tries[1].trail, vec!["edit_file x.py: not_read"]);
        assert_eq!(
            one.failed_tries[1].answer.chars().count(),
            crate::run::FailedTry::ANSWER_CHARS
        );
        let shown = Report::new("m".into(), "d".into(), vec![one]).table();
        assert!(
            shown.contains("try 3 (finished): edit_file x.py: not_read"),
            "{shown}"
        );
        // One try alone keeps no list: its fields are the try.
        let alone = CaseResult::of_tries(vec![case("b", false, 1, 1)]).unwrap();
        assert!(alone.failed_tries.is_empty());
    }

    #[test]
    fn a_case_that_fails_or_grows_is_a_regression() {
        let base = Report::new(
            "scripted".into(),
            "d".into(),
            vec![
                case("a", true, 2, 100),
                case("b", true, 2, 100),
                case("c", false, 2, 100),
            ],
        );
        let now = Report::new(
            "scripted".into(),
            "d".into(),
            vec![
                case("a", false, 2, 100),
                case("b", true, 3, 200),
                case("c", true, 2, 100),
            ],
        );
        let found = regressions(&base, &now);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found[0].starts_with("a: passed before"));
        assert!(found[1].starts_with("b: 3 steps"));
        assert!(found[2].starts_with("b: 200 tokens"));
        assert!(regressions(&base, &base).is_empty());
        assert!((now.pass_rate - 2.0 / 3.0).abs() < 1e-9);
    }
}
