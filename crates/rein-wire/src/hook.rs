//! The words of a hook's record: where it ran ([`HookPoint`]) and what it
//! did ([`HookDid`]), as `hook.ran` stores them and a command hook reads
//! its point.
//!
//! Not here: what a hook is or runs (`rein-runner`'s `hooks`).

use serde::{Deserialize, Serialize};

/// Where a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookPoint {
    /// Before a tool call is checked and gated.
    BeforeCall,
    /// After a tool call, before its result is recorded.
    AfterCall,
    /// Before each model call.
    BeforeModelCall,
    /// When a turn ended.
    TurnEnd,
}

impl HookPoint {
    /// Every point, in the order a turn meets them.
    pub const ALL: [HookPoint; 4] = [
        HookPoint::BeforeCall,
        HookPoint::AfterCall,
        HookPoint::BeforeModelCall,
        HookPoint::TurnEnd,
    ];

    /// Its name in events and in a command hook's input.
    pub fn as_str(self) -> &'static str {
        match self {
            HookPoint::BeforeCall => "before_call",
            HookPoint::AfterCall => "after_call",
            HookPoint::BeforeModelCall => "before_model_call",
            HookPoint::TurnEnd => "turn_end",
        }
    }

    /// The point a name stands for (`before_call`, `after_call`,
    /// `before_model_call`, `turn_end`).
    pub fn named(name: &str) -> Option<HookPoint> {
        HookPoint::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

impl std::fmt::Display for HookPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a hook did, as `hook.ran` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookDid {
    /// Nothing to change.
    Continue,
    /// Refused the call (or the model call).
    Deny,
    /// Changed the call's arguments.
    Edit,
    /// Added a note to the call's result.
    Annotate,
    /// Failed (so what it guarded was refused).
    Failed,
}

impl HookDid {
    /// Its recorded word.
    pub fn as_str(self) -> &'static str {
        match self {
            HookDid::Continue => "continue",
            HookDid::Deny => "deny",
            HookDid::Edit => "edit",
            HookDid::Annotate => "annotate",
            HookDid::Failed => "failed",
        }
    }
}

impl std::fmt::Display for HookDid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::{HookDid, HookPoint};

    #[test]
    fn each_word_is_its_serde_word() {
        for point in HookPoint::ALL {
            assert_eq!(
                serde_json::to_value(point).ok(),
                Some(point.as_str().into())
            );
            assert_eq!(HookPoint::named(point.as_str()), Some(point));
        }
        for did in [
            HookDid::Continue,
            HookDid::Deny,
            HookDid::Edit,
            HookDid::Annotate,
            HookDid::Failed,
        ] {
            assert_eq!(serde_json::to_value(did).ok(), Some(did.as_str().into()));
        }
    }
}
