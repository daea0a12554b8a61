//! The model's summary of the history a compaction covers: what the
//! summariser is shown, the call (asking for the typed record,
//! `claims::Summary`, in the schema each API's structured output takes),
//! the check against the log — asked again once, then dropped — and what
//! is recorded of it.
//!
//! Not here: reading and checking the record (`rein_context::claims`), when to
//! compact and the record of it (`pressure`), the state beside it
//! (`rein_context::state_text`).

use futures::StreamExt;
use rein_sessions::StoredEvent;
use rein_wire::{Assembler, OutputSchema, Request, StopReason, SystemBlock};
use serde_json::json;

use crate::agent::Agent;
use rein_context::claims::{Claim, Record, Summary};
use rein_context::project::project;
use rein_sessions::{SummaryCheck, SummaryOutcome};

/// The model's summary record of `transcript`, checked against the log:
/// an answer that is not a record, or a record that claims what the log
/// does not show (`Summary::unbacked`), is asked for again once, naming
/// what was wrong, then dropped — the derived state stands alone. The
/// first value is the record as the model will read it; the second is
/// what is recorded of the check (`form`, `outcome` — `kept`, `rewritten`,
/// `dropped` or `call_failed` —, what was rejected, the record kept, and
/// `asked_by`: the API's structured output or the instructions).
pub(super) async fn checked(
    agent: &Agent,
    transcript: &str,
    record: &Record,
    window: u64,
) -> (String, SummaryCheck) {
    let (text, mut outcome) = asked_and_judged(agent, transcript, record, window).await;
    // Which way the record was asked: the API's structured output, or the
    // schema in the instructions.
    outcome.asked_by = Some(
        if agent.provider.capabilities().structured_output {
            "structured_output"
        } else {
            "instructions"
        }
        .to_owned(),
    );
    (text, outcome)
}

/// A check that ended `outcome`, of a record asked for.
fn check(outcome: SummaryOutcome) -> SummaryCheck {
    SummaryCheck {
        form: Some("record".to_owned()),
        outcome,
        ..SummaryCheck::default()
    }
}

async fn asked_and_judged(
    agent: &Agent,
    transcript: &str,
    record: &Record,
    window: u64,
) -> (String, SummaryCheck) {
    let Some(first) = summarise(agent, transcript, None, window).await else {
        return (String::new(), check(SummaryOutcome::CallFailed));
    };
    let rejected = match first.judged(record) {
        Ok(judged) => return kept(judged, check(SummaryOutcome::Kept), &first),
        Err(claims) => claims,
    };
    let note = format!(
        "{SUMMARY_CORRECTION} {}.",
        rein_context::claims::correction(&rejected)
    );
    let described =
        |claims: &[Claim]| -> Vec<String> { claims.iter().map(Claim::describe).collect() };
    let Some(second) = summarise(agent, transcript, Some(&note), window).await else {
        let outcome = SummaryCheck {
            rejected: described(&rejected),
            ..check(SummaryOutcome::CallFailed)
        };
        return (String::new(), outcome);
    };
    match second.judged(record) {
        Ok(judged) => {
            let outcome = SummaryCheck {
                rejected: described(&rejected),
                ..check(SummaryOutcome::Rewritten)
            };
            kept(judged, outcome, &second)
        }
        Err(again) => {
            tracing::warn!(
                claims = again.len(),
                "the summary still claims what the log does not show; compacting with the state alone"
            );
            let outcome = SummaryCheck {
                rejected: described(&rejected),
                again: described(&again),
                cut_off: second.cut_off,
                ..check(SummaryOutcome::Dropped)
            };
            (String::new(), outcome)
        }
    }
}

/// The model's answer to a summary request.
struct Answer {
    text: String,
    /// The output limit stopped it.
    cut_off: bool,
}

impl Answer {
    /// The record in the answer with how many repeated items were dropped,
    /// or what is wrong with it.
    fn judged(&self, record: &Record) -> Result<(Summary, usize), Vec<Claim>> {
        let parsed = Summary::parse(&self.text).or_else(|| {
            self.cut_off
                .then(|| Summary::parse_cut_off(&self.text))
                .flatten()
        });
        let Some((summary, repeated)) = parsed else {
            return Err(vec![Claim::NotARecord]);
        };
        let claims = summary.unbacked(record);
        if claims.is_empty() {
            Ok((summary, repeated))
        } else {
            Err(claims)
        }
    }
}

/// A kept record's text, and `outcome` with the record and what tidying
/// took out of it.
fn kept(
    judged: (Summary, usize),
    outcome: SummaryCheck,
    answer: &Answer,
) -> (String, SummaryCheck) {
    let (summary, repeated) = judged;
    let outcome = SummaryCheck {
        record: Some(json!(summary)),
        repeated_items: (repeated > 0).then_some(repeated as u64),
        cut_off: answer.cut_off,
        ..outcome
    };
    (summary.text(), outcome)
}

/// The summary's output limit, in tokens: an eighth of the window, between
/// 256 and 1,024 — the summary stays beside the state and the tail after
/// the compaction, which has a target to reach.
fn output_tokens(window: u64) -> u32 {
    u32::try_from(window / 8)
        .unwrap_or(u32::MAX)
        .clamp(256, 1024)
}

/// The model's answer to the summary request for `transcript` (`None` when
/// the call fails: the structured state still stands); `correction` says
/// what a first answer got wrong.
async fn summarise(
    agent: &Agent,
    transcript: &str,
    correction: Option<&str>,
    window: u64,
) -> Option<Answer> {
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
    // The API's own structured output where it has one (OpenAI's, llama.cpp's
    // grammar, vLLM's); else the schema in the instructions (Anthropic's
    // encoder sends none).
    if agent.provider.capabilities().structured_output {
        request.output_schema = Some(OutputSchema {
            name: "compaction_summary".into(),
            schema: rein_context::claims::schema(),
        });
    } else {
        request.system.push(SystemBlock {
            text: format!(
                "The JSON object follows this JSON schema:\n{}",
                rein_context::claims::schema()
            ),
        });
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
                return None;
            }
        }
    }
    let message = assembler.finish();
    Some(Answer {
        text: message.text(),
        cut_off: message.stop_reason == Some(StopReason::MaxTokens),
    })
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
    let edits = rein_context::project::Edits::collect(before, &path_set);
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
    serde_json::to_string(&rein_context::project::project_restoring(
        before, path, &restored,
    ))
    .unwrap_or_default()
}

/// Said to the summariser when its first record claimed what the log does
/// not show; the claims follow.
pub const SUMMARY_CORRECTION: &str = "Your previous summary claimed what the conversation's record does not show. Write the JSON object again with only what the conversation shows: files changed that a call changed, checks as they ran, each fact's quote copied from that file's read. It gave";

/// What the model is asked when it summarises older history.
pub const SUMMARY_INSTRUCTIONS: &str = "Summarise this conversation for your own later use, as one JSON object with these fields: \"goal\" (what was asked, in a sentence), \"done\" (what was done and found, short items), \"files_changed\" (the paths of the files the conversation changed), \"checks\" (each command or test that ran, as {\"command\", \"passed\"}), \"facts\" (each fact the request may still need, as {\"file\", \"quote\"}, the quote copied word for word from what that file's read showed), \"next\" (what remains). Put in only what the conversation shows: its results will be gone. Answer with the JSON object alone.";

#[cfg(test)]
mod tests {
    use super::output_tokens;

    #[test]
    fn the_output_limit_is_an_eighth_of_the_window_within_bounds() {
        assert_eq!(output_tokens(6_000), 750);
        assert_eq!(output_tokens(1_000), 256);
        assert_eq!(output_tokens(200_000), 1024);
    }
}
