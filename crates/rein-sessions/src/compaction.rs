//! What a `compaction.created` event records: results set aside
//! ([`Prune`]) or older history replaced by a state and a summary
//! ([`Compact`]), typed, and read back from the same JSON every earlier
//! build wrote.
//!
//! A record this build cannot read as either (a newer kind, a field of
//! another type) is kept whole as [`Compaction::Other`] and written back
//! unchanged; fields a record has beyond the ones named here are kept too.
//!
//! Not here: when to compact (the runner's), the state's own fields
//! (`compact_state`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
pub enum Compaction {
    /// Read results set aside as artifacts, the calls kept.
    Prune(Prune),
    /// Older groups replaced by a structured state and a summary.
    Compact(Compact),
    /// A record this build does not read, kept as it was.
    Other(Value),
}

impl Compaction {
    /// The recorded kind (`prune`, `compact`; `unknown` for another).
    pub fn kind(&self) -> &'static str {
        match self {
            Compaction::Prune(_) => "prune",
            Compaction::Compact(_) => "compact",
            Compaction::Other(_) => "unknown",
        }
    }

    /// What set it off (`soft_line`, `hard_line`, `over_target`, …), when
    /// recorded.
    pub fn trigger(&self) -> Option<&str> {
        match self {
            Compaction::Prune(prune) => prune.trigger.as_deref(),
            Compaction::Compact(compact) => compact.trigger.as_deref(),
            Compaction::Other(_) => None,
        }
    }

    /// The request's share of the window before it, when recorded.
    pub fn pressure(&self) -> Option<f64> {
        match self {
            Compaction::Prune(prune) => prune.pressure,
            Compaction::Compact(compact) => compact.pressure,
            Compaction::Other(_) => None,
        }
    }
}

/// Read results set aside: each call's result now in an artifact.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Prune {
    /// The calls whose results were set aside.
    #[serde(default)]
    pub calls: Vec<PrunedCall>,
    /// Tokens the request lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaimed_tokens: Option<u64>,
    /// What set it off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// The request's share of the window before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressure: Option<f64>,
    /// The window, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// Set aside from the newest results, asked for in one step with more
    /// than the window holds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_once: bool,
    /// Fields of a later build, kept.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// One call whose result a prune set aside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrunedCall {
    /// The call.
    pub call_id: String,
    /// The artifact holding its result.
    pub artifact: String,
}

/// Older history replaced by a structured state and a summary.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Compact {
    /// The structured state derived from the log.
    pub state: crate::Recorded<crate::CompactState>,
    /// What the model is shown in place of the covered history.
    pub text: String,
    /// Groups of the history summarised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups_covered: Option<u64>,
    /// Groups kept raw after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups_kept: Option<u64>,
    /// Tokens of the raw tail kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail_tokens: Option<u64>,
    /// How the model's summary was checked against the log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_check: Option<crate::Recorded<crate::SummaryCheck>>,
    /// What set it off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// The request's share of the window before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pressure: Option<f64>,
    /// The window, in tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// The policy it ran under.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<CompactPolicy>,
    /// Fields of a later build, kept.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The context policy a compaction ran under, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CompactPolicy {
    /// The share of the window at which results are pruned.
    pub soft: f64,
    /// The share at which history is compacted.
    pub hard: f64,
    /// The share a compaction aims for.
    pub target: f64,
    /// The raw tail's share of the request.
    pub tail_share: f64,
    /// The raw tail's most tokens.
    pub tail_max_tokens: u64,
    /// The fewest groups kept raw.
    pub keep_groups: usize,
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Shown<'a> {
    Prune(&'a Prune),
    Compact(&'a Compact),
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Read {
    Prune(Prune),
    Compact(Compact),
}

impl Serialize for Compaction {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Compaction::Prune(prune) => Shown::Prune(prune).serialize(s),
            Compaction::Compact(compact) => Shown::Compact(compact).serialize(s),
            Compaction::Other(value) => value.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Compaction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Compaction::from(Value::deserialize(d)?))
    }
}

impl From<Value> for Compaction {
    /// The record `value` holds: typed where this build reads it, else kept.
    fn from(value: Value) -> Self {
        match Read::deserialize(&value) {
            Ok(Read::Prune(prune)) => Compaction::Prune(prune),
            Ok(Read::Compact(compact)) => Compaction::Compact(compact),
            Err(_) => Compaction::Other(value),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_record_an_earlier_build_wrote_reads_typed_and_writes_back_the_same() {
        let prune = json!({"kind": "prune", "calls": [{"call_id": "c1", "artifact": "ab"}],
            "reclaimed_tokens": 40, "trigger": "soft_line", "pressure": 0.7, "window": 8192,
            "at_once": true});
        let state = json!({"prompts": ["p"], "touched": [], "changed": [], "checks": [],
            "failures": [], "decisions": [], "pending_approvals": [], "agents": [],
            "artifacts": [], "goal": "x"});
        let compact = json!({"kind": "compact", "state": state, "text": "so far",
            "groups_covered": 3, "groups_kept": 2, "tail_tokens": 900,
            "summary_check": {"outcome": "kept"}, "trigger": "hard_line", "pressure": 0.9,
            "window": 8192, "policy": {"soft": 0.6, "hard": 0.85, "target": 0.4,
            "tail_share": 0.3, "tail_max_tokens": 4000, "keep_groups": 2}, "later": [1]});
        let newer = json!({"kind": "fold", "whatever": 1});
        for value in [prune, compact, newer] {
            let read = Compaction::from(value.clone());
            assert_eq!(serde_json::to_value(&read).unwrap(), value, "{read:?}");
        }
        let Compaction::Prune(prune) = Compaction::from(json!({"kind": "prune", "calls": []}))
        else {
            panic!("a bare prune is a prune")
        };
        assert!(!prune.at_once);
        // A state missing fields reads them as empty (and is written so).
        let Compaction::Compact(older) =
            Compaction::from(json!({"kind": "compact", "state": {}, "text": "t"}))
        else {
            panic!("an older compaction is a compaction")
        };
        assert_eq!(older.state.typed().map(|s| s.prompts.len()), Some(0));
        assert!(matches!(
            Compaction::from(json!({"kind": "compact", "text": 3})),
            Compaction::Other(_)
        ));
    }
}
