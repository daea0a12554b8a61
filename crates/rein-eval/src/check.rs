//! A case's checks against what its run did: the outcome and the answer,
//! which tools ran and how often, the counts (steps, tokens, cost,
//! compactions, results, approvals, sub-agents, the cache's read share),
//! and the project's files afterwards — each failure a line in the result.
//!
//! Not here: running the case (`run`), the expectations' format (`suite`).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::pressure::{AFTER, Pressures};
use crate::result::CaseResult;
use crate::suite::{Case, Expect};

pub(crate) fn check(
    case: &Case,
    result: &mut CaseResult,
    totals: &rein_trace::Totals,
    ran: &HashMap<String, u64>,
    files: &BTreeMap<String, String>,
) {
    let expect = &case.expect;
    let mut fail = std::mem::take(&mut result.failures);
    check_answer(expect, result, &mut fail);
    check_calls(expect, ran, &mut fail);
    check_counts(expect, result, totals, &mut fail);
    check_files(expect, files, &mut fail);
    result.failures = fail;
}

/// The outcome and the answer.
fn check_answer(expect: &Expect, result: &CaseResult, fail: &mut Vec<String>) {
    if let Some(want) = &expect.outcome
        && *want != result.outcome
    {
        fail.push(format!("outcome is `{}`, not `{want}`", result.outcome));
    }
    let lower = result.answer.to_lowercase();
    for text in &expect.answer_contains {
        if !lower.contains(&text.to_lowercase()) {
            fail.push(format!("the answer does not contain `{text}`"));
        }
    }
    for text in &expect.answer_lacks {
        if lower.contains(&text.to_lowercase()) {
            fail.push(format!("the answer contains `{text}`"));
        }
    }
    if let Some(pattern) = &expect.answer_matches
        && let Ok(re) = regex::Regex::new(pattern)
        && !re.is_match(&result.answer)
    {
        fail.push(format!("the answer does not match /{pattern}/"));
    }
    if !expect.answer_fields.is_empty() {
        match serde_json::from_str::<Value>(&result.answer) {
            Ok(value) => {
                for (pointer, want) in &expect.answer_fields {
                    let got = value.pointer(pointer);
                    if got != Some(want) {
                        fail.push(format!(
                            "answer field {pointer} is {}, not {want}",
                            got.map_or("absent".to_owned(), Value::to_string)
                        ));
                    }
                }
            }
            Err(_) => fail.push("the answer is not JSON".into()),
        }
    }
}

/// Which tools ran, how often.
fn check_calls(expect: &Expect, ran: &HashMap<String, u64>, fail: &mut Vec<String>) {
    let times = |tool: &str| ran.get(tool).copied().unwrap_or(0);
    for tool in &expect.called {
        if times(tool) == 0 {
            fail.push(format!("`{tool}` never ran"));
        }
    }
    for tool in &expect.not_called {
        if times(tool) > 0 {
            fail.push(format!("`{tool}` ran {} time(s)", times(tool)));
        }
    }
    for (tool, want) in &expect.calls {
        if times(tool) != *want {
            fail.push(format!("`{tool}` ran {} time(s), not {want}", times(tool)));
        }
    }
}

/// Steps, tokens, cost, compactions, results, approvals, sub-agents, the
/// cache's read share.
fn check_counts(
    expect: &Expect,
    result: &CaseResult,
    totals: &rein_trace::Totals,
    fail: &mut Vec<String>,
) {
    let none = Pressures::default();
    check_pressures(expect, result.pressures.as_ref().unwrap_or(&none), fail);
    for wanted in &expect.summary_checks_include {
        if !result.summary_checks.contains(wanted) {
            fail.push(format!(
                "no summary check was {wanted} (they were {:?})",
                result.summary_checks
            ));
        }
    }
    let mut at_most = |what: &str, got: u64, max: Option<u64>| {
        if let Some(max) = max
            && got > max
        {
            fail.push(format!("{what} {got} > {max}"));
        }
    };
    at_most("steps", result.steps, expect.steps_at_most);
    at_most("tokens", result.tokens, expect.tokens_at_most);
    at_most(
        "cost (micro-USD)",
        result.cost_micro_usd,
        expect.cost_at_most_micro_usd,
    );
    let mut at_least = |what: &str, got: u64, min: Option<u64>| {
        if let Some(min) = min
            && got < min
        {
            fail.push(format!("{what} {got} < {min}"));
        }
    };
    at_least("steps", result.steps, expect.steps_at_least);
    at_least(
        "compactions",
        result.compactions,
        expect.compactions_at_least,
    );
    at_least(
        "offloaded results",
        totals.tools.offloaded,
        expect.offloaded_at_least,
    );
    at_least(
        "cached results",
        totals.tools.cached,
        expect.cached_at_least,
    );
    at_least(
        "reasoning tokens",
        totals.usage.reasoning,
        expect.reasoning_tokens_at_least,
    );
    at_least(
        "tool errors",
        totals.tools.error,
        expect.tool_errors_at_least,
    );
    if let Some(want) = expect.approvals_requested
        && result.approvals != want
    {
        fail.push(format!(
            "{} approval(s) requested, not {want}",
            result.approvals
        ));
    }
    if let Some(want) = expect.agents
        && result.agents != want
    {
        fail.push(format!(
            "{} sub-agent(s) started, not {want}",
            result.agents
        ));
    }
    if let Some(min) = expect.cache_read_share_at_least
        && result.cache_read_share < min
    {
        fail.push(format!(
            "cache read share {:.3} < {min}",
            result.cache_read_share
        ));
    }
}

/// The project's files afterwards.
fn check_files(expect: &Expect, files: &BTreeMap<String, String>, fail: &mut Vec<String>) {
    for (path, want) in &expect.files {
        match files.get(path) {
            None => fail.push(format!("`{path}` does not exist")),
            Some(got) if got != want => fail.push(format!("`{path}` has other content")),
            Some(_) => {}
        }
    }
    for (path, texts) in &expect.file_contains {
        let Some(got) = files.get(path) else {
            fail.push(format!("`{path}` does not exist"));
            continue;
        };
        for text in texts.iter().filter(|t| !got.contains(t.as_str())) {
            fail.push(format!("`{path}` does not hold `{text}`"));
        }
    }
    for (path, texts) in &expect.file_lacks {
        let Some(got) = files.get(path) else {
            fail.push(format!("`{path}` does not exist"));
            continue;
        };
        for text in texts.iter().filter(|t| got.contains(t.as_str())) {
            fail.push(format!("`{path}` still holds `{text}`"));
        }
    }
    for path in &expect.present {
        if !files.contains_key(path) {
            fail.push(format!("`{path}` does not exist"));
        }
    }
    for path in &expect.absent {
        if files.contains_key(path) {
            fail.push(format!("`{path}` exists"));
        }
    }
}

/// The requests' shares and the cache after each compaction.
fn check_pressures(expect: &Expect, pressures: &Pressures, fail: &mut Vec<String>) {
    if let Some(max) = expect.request_share_at_most
        && pressures.largest_sent > max
    {
        fail.push(format!(
            "a request was sent at {:.3} of the window > {max}",
            pressures.largest_sent
        ));
    }
    if let Some(min) = expect.cache_after_compaction_at_least {
        // A compaction the session ended within `AFTER` calls of has no
        // "after" to judge: its share is only the call that rebuilt the
        // prefix. Every other one is held to the bound.
        for at in pressures
            .compactions
            .iter()
            .filter(|c| c.calls >= AFTER && c.cache_read_share < min)
        {
            fail.push(format!(
                "after the compaction at request {} the cache read {:.3} < {min}",
                at.request, at.cache_read_share
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{AFTER, Expect, Pressures, check_pressures};
    use crate::pressure::AfterCompaction;

    #[test]
    fn the_cache_is_judged_after_every_compaction_the_session_went_on_from() {
        let expect = Expect {
            cache_after_compaction_at_least: Some(0.6),
            ..Expect::default()
        };
        let at = |request, share, calls| AfterCompaction {
            request,
            before: 0.86,
            sent: 0.3,
            cache_read_share: share,
            calls,
        };
        let pressures = Pressures {
            requests: 300,
            largest_sent: 0.85,
            compactions: vec![at(60, 0.79, AFTER), at(120, 0.41, AFTER), at(300, 0.2, 1)],
        };
        let mut fail = Vec::new();
        check_pressures(&expect, &pressures, &mut fail);
        assert_eq!(
            fail,
            ["after the compaction at request 120 the cache read 0.410 < 0.6"]
        );
    }
}
