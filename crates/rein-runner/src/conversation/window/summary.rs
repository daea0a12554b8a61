//! The model's summary of the history a compaction covers: what the
//! summariser is shown, the call, the check against the log (asked again
//! once, then dropped) and the tidying of what it wrote — a sentence it
//! repeated said once, a sentence its output limit cut off left out.
//!
//! Not here: what a summary may claim (`crate::claims`), when to compact
//! and the record of it (`pressure`), the state beside it
//! (`crate::state_text`).

use futures::StreamExt;
use rein_sessions::StoredEvent;
use rein_wire::{Assembler, Request, StopReason, SystemBlock};
use serde_json::{Value, json};

use crate::agent::Agent;
use crate::project::project;

/// The model's summary of `transcript`, tidied and checked against the
/// log: one that claims what the log does not show (`claims::unbacked`) is
/// asked for again once, naming the claims, then dropped — the derived
/// state stands alone. The second value is the record of that (`kept`,
/// `rewritten` or `dropped`, what was rejected, and what tidying took
/// out).
pub(super) async fn checked(
    agent: &Agent,
    transcript: &str,
    record: &crate::claims::Record,
    window: u64,
) -> (String, Value) {
    let described = |claims: &[crate::claims::Claim]| -> Vec<String> {
        claims.iter().map(crate::claims::Claim::describe).collect()
    };
    let first = summarise(agent, transcript, None, window).await;
    let rejected = crate::claims::unbacked(&first.text, record);
    if rejected.is_empty() {
        return (first.text, first.tidied.noted(json!({"outcome": "kept"})));
    }
    let note = format!(
        "{SUMMARY_CORRECTION} {}.",
        crate::claims::correction(&rejected)
    );
    let second = summarise(agent, transcript, Some(&note), window).await;
    let again = crate::claims::unbacked(&second.text, record);
    if again.is_empty() {
        let outcome = json!({"outcome": "rewritten", "rejected": described(&rejected)});
        return (second.text, second.tidied.noted(outcome));
    }
    tracing::warn!(
        claims = again.len(),
        "the summary still claims what the log does not show; compacting with the state alone"
    );
    let outcome = json!({
        "outcome": "dropped",
        "rejected": described(&rejected),
        "again": described(&again),
    });
    (String::new(), outcome)
}

/// A summary as it will be shown, and what tidying took out of it.
struct Written {
    text: String,
    tidied: Tidied,
}

/// What tidying took out of a summary.
#[derive(Debug, Default, PartialEq, Eq)]
struct Tidied {
    /// Sentences dropped because an earlier one said the same.
    repeated: usize,
    /// The output limit cut the last sentence off, and it was left out.
    cut_off: bool,
}

impl Tidied {
    /// `outcome` with what was taken out added, when anything was.
    fn noted(&self, mut outcome: Value) -> Value {
        if self.repeated > 0 {
            outcome["repeated_sentences"] = json!(self.repeated);
        }
        if self.cut_off {
            outcome["cut_off"] = json!(true);
        }
        outcome
    }
}

/// The model's summary of a transcript ("" when the call fails: the
/// structured state still stands); `correction` says what a first one
/// claimed wrongly.
async fn summarise(
    agent: &Agent,
    transcript: &str,
    correction: Option<&str>,
    window: u64,
) -> Written {
    let shown: String = transcript.chars().take(TRANSCRIPT_CHARS).collect();
    let mut request = Request::new(
        agent.profile.model.clone(),
        vec![rein_wire::Message::user(shown)],
    );
    request.system = vec![SystemBlock {
        text: SUMMARY_INSTRUCTIONS.into(),
    }];
    if let Some(text) = correction {
        request.system.push(SystemBlock { text: text.into() });
    }
    request.max_output_tokens = output_tokens(window);
    request.sampling = agent.profile.sampling.clone();
    let mut stream = agent.provider.stream(request);
    let mut assembler = Assembler::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => assembler.push(&event),
            Err(err) => {
                tracing::warn!(code = %err.code, "the summary call failed; compacting with the state alone");
                return Written {
                    text: String::new(),
                    tidied: Tidied::default(),
                };
            }
        }
    }
    let message = assembler.finish();
    let (text, tidied) = tidy(
        &message.text(),
        message.stop_reason == Some(StopReason::MaxTokens),
    );
    Written { text, tidied }
}

/// `summary` with each sentence already said in what came before left out, and
/// — when the output limit stopped it — the unfinished last sentence. A
/// small model summarising forty like results can loop on one line until
/// its limit (try 32 in `docs/EVALS.md`: one sentence seventy-odd times);
/// said once it means the same, and the window keeps the room.
fn tidy(summary: &str, cut_off: bool) -> (String, Tidied) {
    let ends = crate::claims::sentence_ends(summary);
    // What is kept so far, as compared: spaces collapsed, lower case.
    let mut said_so_far = String::new();
    let mut kept = String::new();
    let mut tidied = Tidied::default();
    let mut start = 0;
    for (i, &end) in ends.iter().enumerate() {
        let last = i + 1 == ends.len();
        // The sentence with its closing mark and the space after it.
        let next = ends.get(i + 1).map_or(summary.len(), |_| end + 1);
        let piece = &summary[start..next.min(summary.len())];
        start = next;
        let said: String = piece.split_whitespace().collect::<Vec<_>>().join(" ");
        if said.is_empty() {
            kept.push_str(piece);
            continue;
        }
        if last && cut_off {
            tidied.cut_off = true;
            continue;
        }
        let said = said.to_lowercase();
        if said.len() >= REPEAT_MIN_CHARS && said_so_far.contains(&said) {
            tidied.repeated += 1;
            continue;
        }
        said_so_far.push_str(&said);
        said_so_far.push(' ');
        kept.push_str(piece);
    }
    (kept.trim_end().to_owned(), tidied)
}

/// The shortest sentence whose repeats are left out ("Done." twice is not
/// a loop worth tidying).
const REPEAT_MIN_CHARS: usize = 16;

/// The summary's output limit, in tokens: an eighth of the window, between
/// 256 and 1,024 — the summary stays beside the state and the tail after
/// the compaction, which has a target to reach.
fn output_tokens(window: u64) -> u32 {
    u32::try_from(window / 8)
        .unwrap_or(u32::MAX)
        .clamp(256, 1024)
}

/// The most the summary request shows of the transcript, in characters.
const TRANSCRIPT_CHARS: usize = 60_000;

/// What the model summarising `before` reads: the transcript with the
/// results soft pruning set aside shown whole again, oldest first, as many
/// as fit the window beside the summary's own output (at 3.5 characters a
/// token, with a tenth to spare) — the summary is all that stands for them
/// afterwards, and a summariser shown only the stubs writes what it
/// guesses. The rest stay stubs.
pub(super) fn transcript(before: &[StoredEvent], path: &[String], window: u64) -> String {
    let room = window.saturating_sub(u64::from(output_tokens(window))) as f64 * 3.5 * 0.9;
    let room = (room as usize).min(TRANSCRIPT_CHARS);
    let stubbed = serde_json::to_string(&project(before, path)).unwrap_or_default();
    let path_set: std::collections::HashSet<&str> = path.iter().map(String::as_str).collect();
    let edits = crate::project::Edits::collect(before, &path_set);
    let mut used = stubbed.len() + SUMMARY_INSTRUCTIONS.len();
    let mut restored = std::collections::HashSet::new();
    for e in before {
        if let rein_sessions::Event::ToolResult {
            call_id, content, ..
        } = &e.event
            && edits.pruned.contains_key(call_id.as_str())
        {
            let size = serde_json::to_string(content).map_or(usize::MAX, |t| t.len());
            if used + size > room {
                break;
            }
            used += size;
            restored.insert(call_id.as_str());
        }
    }
    if restored.is_empty() {
        return stubbed;
    }
    serde_json::to_string(&crate::project::project_restoring(before, path, &restored))
        .unwrap_or_default()
}

/// Said to the summariser when its first summary claimed what the log
/// does not show; the claims follow.
pub const SUMMARY_CORRECTION: &str = "Your previous summary claimed what the conversation's record does not show. Write it again, stating only what the conversation shows: the changes made, the checks' results, and what each file read said or did not say. It claimed";

/// What the model is asked when it summarises older history.
pub const SUMMARY_INSTRUCTIONS: &str = "Summarise this conversation for your own later use: what was asked, what was done and found, what was decided, and what remains. Keep word for word every fact found that the request may still need (which file or result said what), since the results themselves will be gone. Be brief and concrete.";

#[cfg(test)]
mod tests {
    use super::{Tidied, output_tokens, tidy};

    #[test]
    fn a_sentence_said_again_is_said_once() {
        let line = "file 0: lorem ipsum dolor sit amet, consectetur adipiscing.";
        let looped = format!(
            "The files were read in order. The result for file 0 was \"{}",
            format!("{line} ").repeat(70)
        );
        let (text, tidied) = tidy(&looped, false);
        assert_eq!(
            text,
            format!("The files were read in order. The result for file 0 was \"{line}")
        );
        assert_eq!(tidied.repeated, 69);
        assert!(!tidied.cut_off);
    }

    #[test]
    fn the_sentence_the_limit_cut_off_is_left_out() {
        let (text, tidied) = tidy("f3.txt mentions BLUE. The next file, f4.txt, sa", true);
        assert_eq!(text, "f3.txt mentions BLUE.");
        assert!(tidied.cut_off);
        // A summary that ended on its own keeps its last sentence whole.
        let (text, tidied) = tidy("f3.txt mentions BLUE. Nothing else does", false);
        assert_eq!(text, "f3.txt mentions BLUE. Nothing else does");
        assert_eq!(tidied, Tidied::default());
    }

    #[test]
    fn short_and_different_sentences_stay() {
        let summary =
            "Done.\nDone.\n- f1.txt: read.\n- f2.txt: read.\nThe tests pass. The tests pass!";
        let (text, tidied) = tidy(summary, false);
        // A sentence is compared with its closing mark: "The tests pass!"
        // is not "The tests pass." said again.
        assert_eq!(
            text,
            "Done.\nDone.\n- f1.txt: read.\n- f2.txt: read.\nThe tests pass. The tests pass!"
        );
        assert_eq!(tidied.repeated, 0);
    }

    #[test]
    fn the_output_limit_is_an_eighth_of_the_window_within_bounds() {
        assert_eq!(output_tokens(6_000), 750);
        assert_eq!(output_tokens(1_000), 256);
        assert_eq!(output_tokens(200_000), 1024);
    }
}
