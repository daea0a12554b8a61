//! What a compaction records beside its text, typed: the state it derives
//! from the history it covers (its `state`) — the person's words, the
//! files touched and changed, the checks run, the calls that failed, the
//! person's decisions, what still waits, the sub-agents, the results set
//! aside, and notes on what each read showed — and how the model's summary
//! was checked against the log (its `summary_check`, [`SummaryCheck`]).
//! Both read from the same JSON every earlier build wrote (a field missing
//! is read as empty, and written so; fields beyond these are kept). A part
//! this build cannot read is kept whole ([`Recorded::Kept`]) and written
//! back unchanged, so the compaction itself still applies.
//!
//! Not here: deriving it from the log or rendering it for the model
//! (`rein-context`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A part of a compaction's record: typed where this build reads it, else
/// kept as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Recorded<T> {
    /// Read (boxed: a record is mostly moved, its parts rarely read).
    Typed(Box<T>),
    /// Kept as recorded.
    Kept(Value),
}

impl<T: Default> Default for Recorded<T> {
    fn default() -> Self {
        Recorded::Typed(Box::default())
    }
}

impl<T> Recorded<T> {
    /// The part, where this build reads it.
    pub fn typed(&self) -> Option<&T> {
        match self {
            Recorded::Typed(part) => Some(part),
            Recorded::Kept(_) => None,
        }
    }
}

/// How the model's summary of a compaction was checked against the log.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SummaryCheck {
    /// What was asked for (`record`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<String>,
    /// What became of it.
    pub outcome: SummaryOutcome,
    /// The claims the first answer made that the log does not back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<String>,
    /// The claims the second answer still made (it was dropped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub again: Vec<String>,
    /// The record kept (the summary's own fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<Value>,
    /// Items said twice and kept once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeated_items: Option<u64>,
    /// The output limit stopped the answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_off: bool,
    /// How the record was asked for (`structured_output`, `instructions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_by: Option<String>,
    /// Fields of a later build, kept.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// What became of the model's summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryOutcome {
    /// The first answer was backed by the log, and kept.
    #[default]
    Kept,
    /// The second answer, after the first was refused, was kept.
    Rewritten,
    /// Both were refused: the state stands alone.
    Dropped,
    /// The model call failed: the state stands alone.
    CallFailed,
}

impl SummaryOutcome {
    /// Its recorded word.
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryOutcome::Kept => "kept",
            SummaryOutcome::Rewritten => "rewritten",
            SummaryOutcome::Dropped => "dropped",
            SummaryOutcome::CallFailed => "call_failed",
        }
    }
}

/// What a compaction keeps of the history it covers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CompactState {
    /// The person's prompts, word for word.
    #[serde(default)]
    pub prompts: Vec<String>,
    /// Files read or touched, in the order first touched.
    #[serde(default)]
    pub touched: Vec<String>,
    /// Files changed, at the revisions they were left at.
    #[serde(default)]
    pub changed: Vec<rein_wire::Revision>,
    /// The checks run, with their receipts.
    #[serde(default)]
    pub checks: Vec<Receipt>,
    /// Calls that failed.
    #[serde(default)]
    pub failures: Vec<FailedCall>,
    /// The person's decisions.
    #[serde(default)]
    pub decisions: Vec<DecisionSeen>,
    /// Approvals still waiting for the person.
    #[serde(default)]
    pub pending_approvals: Vec<String>,
    /// Sub-agents started.
    #[serde(default)]
    pub agents: Vec<String>,
    /// Results set aside (read back with `read_result`).
    #[serde(default)]
    pub artifacts: Vec<String>,
    /// What each read showed that no other did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_notes: Vec<ReadNote>,
    /// Files read whose notes were left out, for room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_notes_left_out: Option<u64>,
    /// Fields of a later build, kept.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A check's receipt (`check.ran`) as the state keeps it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Receipt {
    /// The command, its words joined by spaces.
    #[serde(default)]
    pub command: String,
    /// The exit it had to give.
    #[serde(default)]
    pub expected: i32,
    /// The exit it gave (`None`: killed, over its time, not started).
    #[serde(default)]
    pub exit: Option<i32>,
    /// Whether it passed.
    #[serde(default)]
    pub passed: bool,
    /// The files changed, at their revisions when it ran.
    #[serde(default)]
    pub revisions: Vec<rein_wire::Revision>,
    /// Its event's sequence number.
    #[serde(default)]
    pub seq: u64,
    /// When it ran (ms since the epoch).
    #[serde(default)]
    pub at_ms: i64,
    /// Fields of a later build, kept.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A call that failed: its tool (when known) and its error's code.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FailedCall {
    /// The tool.
    #[serde(default)]
    pub tool: Option<String>,
    /// The error's code.
    #[serde(default)]
    pub code: String,
}

/// A person's decision, and who made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionSeen {
    /// What was decided.
    pub decision: rein_wire::permission::Decision,
    /// Who decided.
    #[serde(default)]
    pub by: String,
}

/// What one read showed that no other read did, quoted from the log.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReadNote {
    /// The file read.
    pub path: String,
    /// Its own sentences or lines.
    #[serde(default)]
    pub saw: Vec<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_state_an_earlier_build_wrote_reads_typed_and_writes_back_the_same() {
        let written = json!({
            "prompts": ["fix it"], "touched": ["a.py"],
            "changed": [{"resource": "a.py", "token": "t1"}],
            "checks": [{"command": "pytest -q", "expected": 0, "exit": 1, "passed": false,
                        "revisions": [], "seq": 9, "at_ms": 5}],
            "failures": [{"tool": null, "code": "not_read"}],
            "decisions": [{"decision": "approved", "by": "terminal"}],
            "pending_approvals": [], "agents": [], "artifacts": ["ab"],
            "read_notes": [{"path": "a.py", "saw": ["def f():"]}], "read_notes_left_out": 2,
            "later": {"field": 1},
        });
        let read: Recorded<CompactState> = serde_json::from_value(written.clone()).unwrap();
        let state = read.typed().expect("typed");
        assert_eq!(state.checks[0].exit, Some(1));
        assert_eq!(state.failures[0].tool, None);
        assert_eq!(state.read_notes[0].saw, vec!["def f():".to_owned()]);
        assert_eq!(serde_json::to_value(&read).unwrap(), written);
    }

    #[test]
    fn each_summary_check_a_build_writes_reads_typed_and_writes_back_the_same() {
        for written in [
            json!({"form": "record", "outcome": "kept", "record": {"goal": "g"},
                   "repeated_items": 2, "asked_by": "instructions"}),
            json!({"form": "record", "outcome": "rewritten", "rejected": ["x"],
                   "record": {"goal": "g"}, "cut_off": true, "asked_by": "structured_output"}),
            json!({"form": "record", "outcome": "dropped", "rejected": ["x"], "again": ["y"]}),
            json!({"form": "record", "outcome": "call_failed", "asked_by": "instructions"}),
        ] {
            let read: Recorded<SummaryCheck> = serde_json::from_value(written.clone()).unwrap();
            assert!(read.typed().is_some(), "{written}");
            assert_eq!(serde_json::to_value(&read).unwrap(), written);
        }
        let later = json!({"outcome": "weighed", "by": "a later build"});
        let read: Recorded<SummaryCheck> = serde_json::from_value(later.clone()).unwrap();
        assert!(read.typed().is_none());
        assert_eq!(serde_json::to_value(&read).unwrap(), later);
    }

    #[test]
    fn a_state_this_build_cannot_read_is_kept_whole() {
        let odd = json!({"prompts": "not a list", "touched": 3});
        let read: Recorded<CompactState> = serde_json::from_value(odd.clone()).unwrap();
        assert!(read.typed().is_none());
        assert_eq!(serde_json::to_value(&read).unwrap(), odd);
    }
}
