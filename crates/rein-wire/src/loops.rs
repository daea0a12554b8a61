//! Loop detection: the same action with the same result, over and over.
//!
//! One rule for every agent rein watches — its own conversations and the
//! agents it hosts (`rein-host`): an action is fingerprinted from the tool's
//! name, a digest of its whole input and a digest of what its result says
//! ([`result_digest`]: never the call's id, nor when it ran or how long it
//! took, which differ every time); the [`LOOP_NUDGE`]th repeat of one
//! fingerprint earns a nudge, the [`LOOP_STOP`]th ends the turn.
//!
//! Not here: what a nudge says or how a turn is ended (the runner's and the
//! host's), or digesting a provider's record (the reducers do that).

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

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

    /// Ask for the next answer in words, as a nudge does: the model just
    /// made again a change the file already holds, so the work it set out
    /// to do is done and the edit loop ends here.
    pub fn ask_for_words(&mut self) {
        self.nudged = true;
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

/// The digest of what a result says, for [`fingerprint`]: the same for two
/// results that differ only in when or how long. By rule, for every tool:
/// a field named for a time or a duration (`duration_ms`, `elapsed`,
/// `*_ms`, `*_at`, `timestamp`…) is left out, and in text a date-time, a
/// clock time, a duration (`in 0.05s`, `12 ms`) and a UUID count as the
/// same whatever their value. A text that is JSON is read as JSON.
pub fn result_digest(result: &Value) -> String {
    let steady = steady(result, 0);
    let text = crate::canonical::to_string(&steady).unwrap_or_default();
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// How deep JSON inside JSON text is read.
const MAX_NESTING: u8 = 4;

fn steady(value: &Value, depth: u8) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| !volatile(key))
                .map(|(key, value)| (key.clone(), steady(value, depth)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| steady(v, depth)).collect()),
        Value::String(text) => {
            let trimmed = text.trim_start();
            if depth < MAX_NESTING
                && (trimmed.starts_with('{') || trimmed.starts_with('['))
                && let Ok(inner) = serde_json::from_str::<Value>(text)
            {
                return steady(&inner, depth + 1);
            }
            Value::String(steady_text(text))
        }
        other => other.clone(),
    }
}

/// Whether a field's name says it holds a time or a duration.
fn volatile(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    matches!(
        key.as_str(),
        "duration" | "elapsed" | "timestamp" | "time" | "date" | "now" | "took" | "uptime"
    ) || [
        "_ms",
        "_us",
        "_ns",
        "_secs",
        "_seconds",
        "_at",
        "_time",
        "_timestamp",
        "_date",
    ]
    .iter()
    .any(|suffix| key.ends_with(suffix))
}

/// `text` with its date-times, clock times, durations and UUIDs made one.
fn steady_text(text: &str) -> String {
    static VOLATILE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(concat!(
            r"\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?",
            r"|\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b",
            r"|\b\d+(\.\d+)?\s?(ns|µs|us|ms|s|sec|secs|seconds?|m|min|minutes?)\b",
            r"|\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
        ))
        .ok()
    });
    match VOLATILE.as_ref() {
        Some(volatile) => volatile.replace_all(text, "~").into_owned(),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_differing_only_in_when_or_how_long_says_the_same() {
        let run = |ms: u64, took: &str, at: &str| {
            serde_json::json!([{"type": "text", "text": serde_json::json!({
                "exit_code": 1,
                "stdout": format!("E\nRan 1 test in {took}\n\nFAILED (errors=1)"),
                "stderr": format!("{at} ImportError: cannot import name 'slug'"),
                "duration_ms": ms,
            }).to_string()}])
        };
        assert_eq!(
            result_digest(&run(12, "0.001s", "2026-12-05T17:53:37Z")),
            result_digest(&run(31, "0.004s", "2026-12-05T17:54:02.118+00:00")),
        );
        // What it says still counts: another exit, another error.
        let other = serde_json::json!([{"type": "text", "text": serde_json::json!({
            "exit_code": 1,
            "stdout": "E\nRan 1 test in 0.001s\n\nFAILED (errors=1)",
            "stderr": "2026-12-05T17:53:37Z ImportError: cannot import name 'slugify'",
            "duration_ms": 12,
        }).to_string()}]);
        assert_ne!(
            result_digest(&run(12, "0.001s", "2026-12-05T17:53:37Z")),
            result_digest(&other)
        );
        // A plain text's clock time and a UUID too.
        assert_eq!(
            result_digest(&serde_json::json!(
                "at 17:53:37 job 123e4567-e89b-12d3-a456-426614174000 failed"
            )),
            result_digest(&serde_json::json!(
                "at 09:01:02 job 00000000-0000-4000-8000-000000000000 failed"
            )),
        );
    }

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
