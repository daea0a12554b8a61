//! Loop detection: the same action with the same result, over and over.
//!
//! One rule for every agent rein watches — its own conversations and the
//! agents it hosts (`rein-host`): an action is fingerprinted from the tool's
//! name, a digest of its whole input and a digest of its whole result (never
//! the call's id, which differs every time); the [`LOOP_NUDGE`]th repeat of
//! one fingerprint earns a nudge, the [`LOOP_STOP`]th ends the turn.
//!
//! Not here: what a nudge says or how a turn is ended (the runner's and the
//! host's), or digesting a provider's record (the reducers do that).

use std::collections::HashMap;

/// The same action repeated this many times with the same result earns a nudge…
pub const LOOP_NUDGE: u32 = 3;

/// …and this many ends the turn.
pub const LOOP_STOP: u32 = 5;

/// At most this many distinct fingerprints are counted; past it new ones
/// are not (a run that never repeats itself must not grow memory forever).
pub const MAX_FINGERPRINTS: usize = 4096;

/// What one more observation of a fingerprint means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// Nothing to do yet.
    Fine,
    /// The [`LOOP_NUDGE`]th time: tell the model to try something else.
    Nudge,
    /// [`LOOP_STOP`] times or more: end the turn.
    Stop,
}

/// Counts of fingerprints within one turn.
#[derive(Debug, Default, Clone)]
pub struct Repeats {
    seen: HashMap<String, u32>,
    /// The fingerprint of each call counted by [`Repeats::observe_call`],
    /// so a call taken out of the model's view stops counting
    /// ([`Repeats::forget_calls`]); at most [`MAX_FINGERPRINTS`] calls.
    calls: HashMap<String, String>,
    /// A nudge was earned and not yet taken (`take_nudged`).
    nudged: bool,
}

impl Repeats {
    /// No action seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// One more action with fingerprint `fp`.
    pub fn observe(&mut self, fp: String) -> Repeat {
        if !self.seen.contains_key(&fp) && self.seen.len() >= MAX_FINGERPRINTS {
            return Repeat::Fine;
        }
        let n = self.seen.entry(fp).or_insert(0);
        *n = n.saturating_add(1);
        if *n >= LOOP_STOP {
            Repeat::Stop
        } else if *n == LOOP_NUDGE {
            self.nudged = true;
            Repeat::Nudge
        } else {
            Repeat::Fine
        }
    }

    /// One more action with fingerprint `fp`, made by call `call_id`: as
    /// [`Repeats::observe`], and forgotten again when that call's result
    /// leaves the model's view. Past [`MAX_FINGERPRINTS`] calls a call is
    /// counted but never forgotten — a bound that errs toward stopping.
    pub fn observe_call(&mut self, fp: String, call_id: &str) -> Repeat {
        let counted = self.seen.contains_key(&fp) || self.seen.len() < MAX_FINGERPRINTS;
        if counted && self.calls.len() < MAX_FINGERPRINTS {
            self.calls.insert(call_id.to_owned(), fp.clone());
        }
        self.observe(fp)
    }

    /// The model can no longer see these calls' results (pruning or a
    /// compaction took them out of its view): each stops counting, so
    /// reading a file again is recalling it, not looping — while a call
    /// whose earlier results are still in view keeps its count.
    pub fn forget_calls<'a>(&mut self, hidden: impl IntoIterator<Item = &'a str>) {
        for call_id in hidden {
            let Some(fp) = self.calls.remove(call_id) else {
                continue;
            };
            if let Some(n) = self.seen.get_mut(&fp) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.seen.remove(&fp);
                }
            }
        }
    }

    /// Whether a nudge was earned since this was last asked: the runner
    /// asks for its next answer in words then.
    pub fn take_nudged(&mut self) -> bool {
        std::mem::take(&mut self.nudged)
    }
}

/// An action's fingerprint: its tool, the digest of its whole input and the
/// digest of its whole result (each digest any stable hex or bytes).
pub fn fingerprint(tool: &str, input_digest: &str, result_digest: &str) -> String {
    blake3::hash(format!("{tool}\u{0}{input_digest}\u{0}{result_digest}").as_bytes())
        .to_hex()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_third_repeat_nudges_and_the_fifth_stops() {
        let mut r = Repeats::new();
        let fp = fingerprint("read", "a", "b");
        let seen: Vec<Repeat> = (0..6).map(|_| r.observe(fp.clone())).collect();
        assert_eq!(
            seen,
            [
                Repeat::Fine,
                Repeat::Fine,
                Repeat::Nudge,
                Repeat::Fine,
                Repeat::Stop,
                Repeat::Stop
            ]
        );
        assert_eq!(r.observe(fingerprint("read", "a", "c")), Repeat::Fine);
        // The nudge is taken once.
        assert!(r.take_nudged());
        assert!(!r.take_nudged());
    }

    #[test]
    fn a_call_taken_out_of_view_stops_counting_and_one_in_view_keeps_its_count() {
        let mut r = Repeats::new();
        let fp = fingerprint("read", "f39", "same");
        assert_eq!(r.observe_call(fp.clone(), "c1"), Repeat::Fine);
        assert_eq!(r.observe_call(fp.clone(), "c2"), Repeat::Fine);
        // Pruning took c1's result away, and a call nobody counted.
        r.forget_calls(["c1", "c0"]);
        // c2 is still in view: this is its second visible repeat.
        assert_eq!(r.observe_call(fp.clone(), "c3"), Repeat::Fine);
        assert_eq!(r.observe_call(fp.clone(), "c4"), Repeat::Nudge);
        // Everything hidden: reading again is recalling, from the start.
        r.forget_calls(["c2", "c3", "c4", "c4"]);
        assert_eq!(r.seen.get(&fp), None);
        let again: Vec<Repeat> = (5..10)
            .map(|i| r.observe_call(fp.clone(), &format!("c{i}")))
            .collect();
        assert_eq!(
            again,
            [
                Repeat::Fine,
                Repeat::Fine,
                Repeat::Nudge,
                Repeat::Fine,
                Repeat::Stop
            ]
        );
    }

    #[test]
    fn distinct_fingerprints_are_bounded() {
        let mut r = Repeats::new();
        for i in 0..MAX_FINGERPRINTS + 10 {
            r.observe(i.to_string());
        }
        assert_eq!(r.seen.len(), MAX_FINGERPRINTS);
        // The calls remembered for forgetting are bounded too.
        for i in 0..MAX_FINGERPRINTS + 10 {
            r.observe_call("0".into(), &i.to_string());
        }
        assert_eq!(r.calls.len(), MAX_FINGERPRINTS);
    }
}
