//! [`Rule`]: what the scripted model answers to a phrase, and the tool
//! calls it makes over one or more steps, built in code or read from a
//! suite's TOML.
//!
//! Not here: how a request is matched to a rule or answered (the module's
//! [`super::ScriptedBrain`]).

use serde::Deserialize;
use serde_json::Value;

/// One tool call a rule makes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleCall {
    /// The tool.
    pub tool: String,
    /// Its arguments; `{step}` in a string is replaced by the step number
    /// (from 0).
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// Put a word into this argument: at the rule's first step, the word
    /// after the phrase in the person's text; at a later step, the value
    /// the same argument had in the previous step's calls (so a path read
    /// at step 0 is the path edited at step 1).
    #[serde(default)]
    pub word_into: Option<String>,
    /// Put the rest of the person's text after the phrase into this
    /// argument (a task handed on, say).
    #[serde(default)]
    pub rest_into: Option<String>,
    /// Make this call only at this step (default: at every step).
    #[serde(default)]
    pub at_step: Option<u32>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

fn one() -> u32 {
    1
}

/// One rule: when the last user text contains `phrase` (and the system
/// prompt `when_system`, the conversation it was sent `when_seen`, if
/// set), answer `reply` and make `calls` (if any), for `steps` steps.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The phrase to look for (compared case-insensitively).
    pub phrase: String,
    /// The answer text (said with the calls, when there are calls).
    #[serde(default)]
    pub reply: String,
    /// Tool calls made together in one message.
    #[serde(default)]
    pub calls: Vec<RuleCall>,
    /// How many messages of calls before the final answer.
    #[serde(default = "one")]
    pub steps: u32,
    /// The final answer after the last results (default: what came back).
    #[serde(default)]
    pub done: Option<String>,
    /// The rule applies only when the system prompt contains this too
    /// (case-insensitive): what the model was shown decides, as a
    /// product's standing words or pinned memory would for a real one.
    #[serde(default)]
    pub when_system: Option<String>,
    /// The rule applies only when some message of the request holds this
    /// too (case-insensitive): a fact the model can act on only while it
    /// is still in front of it — after a compaction, say.
    #[serde(default)]
    pub when_seen: Option<String>,
}

impl Rule {
    /// A rule answering `reply` when `phrase` appears.
    pub fn reply(phrase: &str, reply: &str) -> Self {
        Rule {
            phrase: phrase.to_lowercase(),
            reply: reply.into(),
            calls: Vec::new(),
            steps: 1,
            done: None,
            when_system: None,
            when_seen: None,
        }
    }
}

impl Rule {
    /// A rule that first reads the file named by the word after the phrase
    /// (`read_file`), then calls `tool` on it with `arguments` — as a model
    /// must before it changes a file.
    pub fn after_reading(phrase: &str, reply: &str, tool: &str, arguments: Value) -> Self {
        Rule::reply(phrase, reply)
            .and_call("read_file", empty_object())
            .word_into("path")
            .then_call(tool, arguments)
            .word_into("path")
    }

    /// Make the rule's calls at each of `steps` steps (one message of calls
    /// each) before the final answer; `{step}` in an argument's string
    /// becomes the step's number, from 0.
    #[must_use]
    pub fn repeated(mut self, steps: u32) -> Self {
        self.steps = steps.max(1);
        self
    }

    /// One step more, after the rule's last: `tool` with `arguments`, in a
    /// message of its own, once the previous step's results are back.
    /// The calls of a rule of one step are kept at its first step; those
    /// of a [`Rule::repeated`] rule stay at every step, this one included.
    #[must_use]
    pub fn then_call(mut self, tool: &str, arguments: Value) -> Self {
        if self.steps == 1 {
            for call in &mut self.calls {
                call.at_step.get_or_insert(0);
            }
        }
        let step = if self.calls.is_empty() { 0 } else { self.steps };
        self.calls.push(RuleCall {
            tool: tool.into(),
            arguments,
            word_into: None,
            rest_into: None,
            at_step: Some(step),
        });
        self.steps = step + 1;
        self
    }

    /// Make the last call take a word into its argument `field` (see
    /// [`RuleCall::word_into`] for which word, at which step).
    #[must_use]
    pub fn word_into(mut self, field: &str) -> Self {
        if let Some(call) = self.calls.last_mut() {
            call.word_into = Some(field.to_owned());
        }
        self
    }

    /// Answer `text` after the last step's results (instead of saying what
    /// came back).
    #[must_use]
    pub fn ending_with(mut self, text: &str) -> Self {
        self.done = Some(text.to_owned());
        self
    }

    /// Make `tool` with `arguments` in the same message too (on a
    /// [`Rule::reply`], the rule's first call).
    pub fn and_call(mut self, tool: &str, arguments: Value) -> Self {
        self.calls.push(RuleCall {
            tool: tool.into(),
            arguments,
            word_into: None,
            rest_into: None,
            at_step: None,
        });
        self
    }

    /// Make the first call take the rest of the person's text after the
    /// phrase as its argument `field`.
    pub fn rest_into(mut self, field: &str) -> Self {
        if let Some(call) = self.calls.first_mut() {
            call.rest_into = Some(field.to_owned());
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Rule, RuleCall};

    fn at(tool: &str, step: u32, word_into: Option<&str>) -> RuleCall {
        RuleCall {
            tool: tool.into(),
            arguments: json!({}),
            word_into: word_into.map(str::to_owned),
            rest_into: None,
            at_step: Some(step),
        }
    }

    #[test]
    fn each_further_step_is_one_call_after_the_last() {
        let built = Rule::reply("fix", "On it.")
            .and_call("read_file", json!({}))
            .word_into("path")
            .then_call("edit_file", json!({}))
            .word_into("path")
            .then_call("run_tests", json!({}))
            .ending_with("Fixed.");
        let by_hand = Rule {
            calls: vec![
                at("read_file", 0, Some("path")),
                at("edit_file", 1, Some("path")),
                at("run_tests", 2, None),
            ],
            steps: 3,
            done: Some("Fixed.".into()),
            ..Rule::reply("fix", "On it.")
        };
        assert_eq!(built, by_hand);
        let reading = Rule::after_reading("fix", "On it.", "edit_file", json!({}));
        assert_eq!(reading.calls[..], by_hand.calls[..2]);
        assert_eq!(reading.steps, 2);
    }

    #[test]
    fn a_rule_begun_without_calls_starts_at_step_zero_and_repeats_stay_unpinned() {
        let rule = Rule::reply("go", "Going.").then_call("list_files", json!({}));
        assert_eq!(rule.calls, [at("list_files", 0, None)]);
        assert_eq!(rule.steps, 1);
        let repeated = Rule::reply("poll", "")
            .and_call("status", json!({}))
            .repeated(3)
            .then_call("report", json!({}));
        assert_eq!(repeated.calls[0].at_step, None);
        assert_eq!(repeated.calls[1].at_step, Some(3));
        assert_eq!(repeated.steps, 4);
    }
}
