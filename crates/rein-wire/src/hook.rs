//! The words of a hook's record: where it ran ([`HookPoint`]) and what it
//! did ([`HookDid`]), as `hook.ran` stores them and a command hook reads
//! its point.
//!
//! Not here: what a hook is or runs (`rein-runner`'s `hooks`).

use crate::words::words;

words! {
    /// Where a hook runs.
    pub enum HookPoint {
        /// Before a tool call is checked and gated.
        BeforeCall = "before_call",
        /// After a tool call, before its result is recorded.
        AfterCall = "after_call",
        /// Before each model call.
        BeforeModelCall = "before_model_call",
        /// When a turn ended.
        TurnEnd = "turn_end",
    }
}

words! {
    /// What a hook did, as `hook.ran` records it.
    pub enum HookDid {
        /// Nothing to change.
        Continue = "continue",
        /// Refused the call (or the model call).
        Deny = "deny",
        /// Changed the call's arguments.
        Edit = "edit",
        /// Added a note to the call's result.
        Annotate = "annotate",
        /// Failed (so what it guarded was refused).
        Failed = "failed",
    }
}

#[cfg(test)]
mod tests {
    use super::{HookDid, HookPoint};

    #[test]
    fn each_word_is_its_serde_word() {
        for point in HookPoint::ALL.iter().copied() {
            assert_eq!(
                serde_json::to_value(point).ok(),
                Some(point.as_str().into())
            );
            assert_eq!(HookPoint::named(point.as_str()), Some(point));
        }
        for did in HookDid::ALL.iter().copied() {
            assert_eq!(serde_json::to_value(did).ok(), Some(did.as_str().into()));
            assert_eq!(serde_json::from_value(did.as_str().into()).ok(), Some(did));
        }
    }
}
