//! The shape every hosted CLI's reducer has: lines in, steps out, one outcome.
//!
//! A reducer is pure — no process, clock or file — so a recording, a live
//! run and a fuzzer's lines go through the same code. The driver frames
//! stdout into lines, bounds them, and tells the reducer about a line it
//! skipped ([`Reducer::oversize`]), a framing failure and the end of the
//! stream; after each call it drains the [`Step`]s.
//!
//! Not here: a CLI's record names (`claude.rs`, `codex.rs`), processes
//! (`driver.rs`) or the session log (`record.rs`).

use rein_wire::Usage;
use rein_wire::loops::Repeat;
use serde::Serialize;

use crate::progress::{Progress, ProgressKind};

/// Tool calls kept open (to name a result and fingerprint it) at most; past
/// it a result is still counted, only not named.
pub const MAX_OPEN_TOOLS: usize = 1024;

/// Refused requests kept to name; past it they are still counted.
pub const MAX_REFUSED: usize = 64;

/// Counts are capped here (a reading past it is not one to believe).
pub const MAX_COUNT: u64 = 1_000_000_000_000_000;

/// Something the driver acts on or records.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Show it.
    Progress(Progress),
    /// A tool call began (its id, its name and its one allowed detail).
    ToolCalled {
        /// The agent's call id.
        id: String,
        /// The tool.
        tool: String,
        /// The allow-listed input ("" for none).
        detail: String,
    },
    /// A tool call ended.
    ToolDone {
        /// The agent's call id.
        id: String,
        /// Whether it succeeded.
        ok: bool,
    },
    /// A turn's result arrived (results come in turn order).
    TurnClosed(TurnResult),
    /// Loop detection's verdict on a completed tool call, when not `Fine`.
    Loop(Repeat),
}

impl Step {
    /// This step with the `secrets` the program was given, and
    /// secret-shaped words, masked in every text it carries (shown,
    /// recorded or sent to a viewer alike).
    pub(crate) fn masked(self, secrets: &[String]) -> Step {
        let mask = |text: String| rein_wire::secrets::mask(&text, secrets);
        match self {
            Step::Progress(p) => Step::Progress(Progress {
                kind: p.kind,
                tool: mask(p.tool),
                detail: mask(p.detail),
            }),
            Step::ToolCalled { id, tool, detail } => Step::ToolCalled {
                id,
                tool: mask(tool),
                detail: mask(detail),
            },
            Step::TurnClosed(mut turn) => {
                turn.text = turn.text.map(mask);
                turn.failure = turn.failure.map(mask);
                Step::TurnClosed(turn)
            }
            other => other,
        }
    }
}

/// One hosted turn as it ended.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct TurnResult {
    /// 0 for the first turn of the invocation.
    pub index: u32,
    /// The model, when the turn named it.
    pub model: String,
    /// The final text when the turn succeeded.
    pub text: Option<String>,
    /// Why it did not, bounded and cleaned.
    pub failure: Option<String>,
    /// Its tokens, when reported.
    pub usage: Option<Usage>,
    /// What this turn cost (integer micro-USD), when known.
    pub cost_micro_usd: Option<u64>,
    /// How long it took, when reported.
    pub duration_ms: Option<u64>,
}

/// What kind of request the hosted agent refused on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalKind {
    /// A tool call its permissions did not allow.
    Permission,
    /// A question to the user, which nobody could answer.
    Question,
}

/// A refused request: its kind and its cleaned subject ("Write: src/a.rs").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// What was refused.
    pub kind: RefusalKind,
    /// The tool and its allowed detail ("" for a question).
    pub subject: String,
}

/// The invocation's outcome once the stream is over.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Outcome {
    /// The final assistant text on success.
    pub text: Option<String>,
    /// The bounded, redacted reason otherwise.
    pub failure: Option<String>,
    /// stdout ended inside a turn.
    pub exited_early: bool,
    /// Refused requests, the first [`MAX_REFUSED`].
    pub refused: Vec<Refusal>,
    /// How many were refused in all (once per call).
    pub refused_count: u64,
    /// The invocation's cost in micro-USD; absent when any part is unknown.
    pub cost_micro_usd: Option<u64>,
}

/// Requests a hosted agent refused on its own: kept once per call id (the
/// first [`MAX_REFUSED`] named, all counted), each shown once.
#[derive(Debug, Default)]
pub(crate) struct Refusals {
    ids: std::collections::HashSet<String>,
    kept: Vec<Refusal>,
    count: u64,
}

impl Refusals {
    /// One more refusal of `tool` (its allowed `detail`) for call `id`: the
    /// progress event to show, or `None` when that call was refused before.
    pub(crate) fn add(
        &mut self,
        kind: RefusalKind,
        id: Option<&str>,
        tool: &str,
        detail: &str,
    ) -> Option<Progress> {
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            if self.ids.contains(id) {
                return None;
            }
            if self.ids.len() < MAX_OPEN_TOOLS {
                self.ids.insert(id.to_owned());
            }
        }
        self.count += 1;
        if self.kept.len() < MAX_REFUSED {
            let subject = match (tool.is_empty(), detail.is_empty()) {
                (false, false) => format!("{tool}: {detail}"),
                _ => tool.to_owned(),
            };
            self.kept.push(Refusal {
                kind,
                subject: crate::progress::clean(&subject, MAX_SUBJECT_CHARS),
            });
        }
        Some(Progress::tool(
            crate::progress::ProgressKind::Refused,
            tool,
            detail,
        ))
    }

    /// The named refusals.
    pub(crate) fn kept(&self) -> Vec<Refusal> {
        self.kept.clone()
    }

    /// How many there were.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }
}

/// What every reducer keeps the same way: the steps not yet drained, the
/// outcome so far (a first failure wins and clears the text), the refused
/// requests, and the loop detector of the open turn — which hears each
/// completed call, each provider retry (the same retry over and over is a
/// loop too), and starts afresh when a turn closes.
#[derive(Debug, Default)]
pub(crate) struct Core {
    pub(crate) steps: Vec<Step>,
    pub(crate) failure: Option<String>,
    pub(crate) text: Option<String>,
    pub(crate) exited_early: bool,
    pub(crate) refusals: Refusals,
    repeats: rein_wire::loops::Repeats,
}

impl Core {
    /// Show `progress`.
    pub(crate) fn send(&mut self, progress: Progress) {
        self.steps.push(Step::Progress(progress));
    }

    /// The run failed for `reason` (bounded, cleaned); a later reason is
    /// not kept.
    pub(crate) fn fail(&mut self, reason: &str) {
        if self.failure.is_none() {
            self.failure = Some(crate::progress::clean(
                reason,
                crate::progress::MAX_REASON_CHARS,
            ));
            self.text = None;
        }
    }

    /// A refused request, kept once per call and shown once.
    pub(crate) fn refuse(&mut self, kind: RefusalKind, id: Option<&str>, tool: &str, detail: &str) {
        if let Some(shown) = self.refusals.add(kind, id, tool, detail) {
            self.send(shown);
        }
    }

    /// One completed action with fingerprint `fp`, for loop detection.
    pub(crate) fn repeated(&mut self, fp: String) {
        let verdict = self.repeats.observe(fp);
        if verdict != Repeat::Fine {
            self.steps.push(Step::Loop(verdict));
        }
    }

    /// The provider was retried after `error` (the CLI's words for it,
    /// "" when it gave none): the same retry, again and again, is a loop.
    pub(crate) fn retried(&mut self, error: &str) {
        let fp = rein_wire::loops::fingerprint("provider_retry", error, "");
        self.repeated(fp);
    }

    /// A turn closed: said, and its loop count starts afresh.
    pub(crate) fn close_turn(&mut self, turn: TurnResult) {
        self.send(Progress::of(ProgressKind::TurnFinished));
        self.steps.push(Step::TurnClosed(turn));
        self.repeats = rein_wire::loops::Repeats::new();
    }

    /// The steps since the last call.
    pub(crate) fn drain(&mut self) -> Vec<Step> {
        std::mem::take(&mut self.steps)
    }

    /// The outcome so far, with the cost the reducer knows.
    pub(crate) fn outcome(&self, cost_micro_usd: Option<u64>) -> Outcome {
        Outcome {
            text: self.text.clone().filter(|_| self.failure.is_none()),
            failure: self.failure.clone(),
            exited_early: self.exited_early,
            refused: self.refusals.kept(),
            refused_count: self.refusals.count(),
            cost_micro_usd,
        }
    }
}

/// A refused subject is cut to this many characters.
const MAX_SUBJECT_CHARS: usize = 160;

/// A hosted CLI's stream reducer.
pub trait Reducer: Send {
    /// Reduce one stdout line (without its newline).
    fn feed(&mut self, line: &[u8]);
    /// The framer skipped a line longer than `limit` bytes.
    fn oversize(&mut self, limit: usize);
    /// The framer failed (an unterminated last line, an overflow).
    fn framing_error(&mut self, what: &str);
    /// stdout reached its end.
    fn stream_ended(&mut self);
    /// The steps since the last call.
    fn drain(&mut self) -> Vec<Step>;
    /// The outcome so far (final once the stream ended).
    fn outcome(&self) -> Outcome;
    /// The flat, bounded, redacted summary (scalars only).
    fn summary(&self) -> serde_json::Value;
}

/// A program's own id of its conversation, when it can be handed back as
/// an argument to resume it (`claude --resume ID`, `codex resume ID`): 1
/// to 64 letters, digits, `-` and `_`, not starting with `-` (never an
/// option, a path or anything a shell or the program reads otherwise).
pub fn resumable(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && !id.starts_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The digest of a JSON value (its canonical form).
pub fn digest(value: &serde_json::Value) -> String {
    let text = rein_wire::canonical::to_string(value).unwrap_or_default();
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// `value` as a count, when it is a non-negative integer below [`MAX_COUNT`].
pub fn count(value: Option<&serde_json::Value>) -> Option<u64> {
    value
        .and_then(serde_json::Value::as_u64)
        .filter(|n| *n <= MAX_COUNT)
}

/// `value` USD as integer micro-USD (half up), when it is a finite,
/// non-negative amount no larger than a million dollars.
pub fn micro_usd(value: Option<&serde_json::Value>) -> Option<u64> {
    let value = value?;
    if let Some(n) = value.as_u64() {
        return (n <= 1_000_000).then(|| n * 1_000_000);
    }
    // The decimal text the JSON had (serde_json prints the shortest
    // round-trip form), scaled exactly: no binary rounding of 0.1354875.
    let f = value.as_f64()?;
    if !f.is_finite() || !(0.0..=1_000_000.0).contains(&f) {
        return None;
    }
    decimal_micro(&value.to_string())
}

/// A non-negative decimal (`12.3456785`, `1e-5`) in micro-units, half up.
fn decimal_micro(text: &str) -> Option<u64> {
    let (mantissa, exp) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], text[i + 1..].parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = format!("{int}{frac}");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // value = digits × 10^(exp − len(frac)); micro = value × 10^6.
    let shift = exp - i32::try_from(frac.len()).ok()? + 6;
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Some(0);
    }
    if shift >= 0 {
        let n: u128 = digits.parse().ok()?;
        let scaled = n.checked_mul(10u128.checked_pow(u32::try_from(shift).ok()?)?)?;
        return u64::try_from(scaled).ok();
    }
    let cut = usize::try_from(-shift).ok()?;
    if cut > digits.len() {
        // Less than one micro-unit: rounds to 0 or 1.
        let first = digits.as_bytes()[0];
        return Some(u64::from(cut == digits.len() + 1 && first >= b'5'));
    }
    let (keep, rest) = digits.split_at(digits.len() - cut);
    let kept: u64 = if keep.is_empty() {
        0
    } else {
        keep.parse().ok()?
    };
    let up = rest.as_bytes().first().is_some_and(|b| *b >= b'5');
    kept.checked_add(u64::from(up))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn costs_are_exact_micro_usd_rounded_half_up() {
        assert_eq!(micro_usd(Some(&json!(0.1354875))), Some(135_488));
        assert_eq!(micro_usd(Some(&json!(0.24722425))), Some(247_224));
        assert_eq!(micro_usd(Some(&json!(2))), Some(2_000_000));
        assert_eq!(micro_usd(Some(&json!(1e-7))), Some(0));
        assert_eq!(micro_usd(Some(&json!(5e-7))), Some(1));
        assert_eq!(micro_usd(Some(&json!(0.0000005))), Some(1));
        assert_eq!(micro_usd(Some(&json!(-1.0))), None);
        assert_eq!(micro_usd(Some(&json!(2e6))), None);
        assert_eq!(micro_usd(Some(&json!("0.1"))), None);
        assert_eq!(micro_usd(Some(&json!(true))), None);
        assert_eq!(micro_usd(None), None);
    }

    #[test]
    fn counts_refuse_what_is_not_a_count() {
        assert_eq!(count(Some(&json!(3))), Some(3));
        assert_eq!(count(Some(&json!(-3))), None);
        assert_eq!(count(Some(&json!(1.5))), None);
        assert_eq!(count(Some(&json!(true))), None);
    }
}
