//! [`ScriptedBrain`]: a deterministic model for demos, evals and offline use.
//!
//! Rules over the conversation decide its answer: the first rule whose
//! phrase appears in the last user text (case-insensitive) gives the reply
//! and, optionally, tool calls — several in one message, repeated for a
//! number of steps. After the last step's results it says what came back
//! (or the rule's `done` text). With no matching rule it says what it is
//! and echoes the question. Replies stream word by word, with usage
//! estimated from the characters (about four per token), so a whole
//! conversation is reproducible byte for byte.
//!
//! Which rule a tool loop belongs to, and its step, travel in the call ids
//! it makes (`call-r{rule}s{step}c{n}-…`), so the loop continues correctly
//! even after compaction has summarised the prompt away.
//!
//! With [`ScriptedBrain::with_reasoning`] it reasons when a request asks
//! for it: each message opens with a thinking block it signs, and it
//! refuses — as Anthropic does — a tool loop whose last message of calls
//! comes back without that block, or with it changed.
//!
//! It is not a language model: it never reads tool results for meaning.
//! It ships in the gateway (not in `rein-testing`) because `rein chat`
//! offers it offline: the binary must not link a test server to have it.

mod cache_sim;
mod reasoning;
mod rule;

pub use cache_sim::AnthropicCache;
use reasoning::{reasoning_came_back, signature_of, thought_about};
pub use rule::{Rule, RuleCall};

use crate::{EventStream, Provider};
use rein_wire::{CachingStyle, Capabilities, ToolCall};
use rein_wire::{ContentBlock, Message, Reasoning, Request, Role, StopReason, StreamEvent, Usage};
use serde_json::Value;

/// A rule-driven, deterministic [`Provider`].
#[derive(Debug, Clone)]
pub struct ScriptedBrain {
    rules: Vec<Rule>,
    model: String,
    cache: Option<std::sync::Arc<AnthropicCache>>,
    reasons: bool,
}

impl Default for ScriptedBrain {
    fn default() -> Self {
        ScriptedBrain::demo()
    }
}

/// What the brain says in one message: text and calls.
type Answer = (String, Vec<ToolCall>);

impl ScriptedBrain {
    /// A brain with these rules.
    pub fn new(rules: Vec<Rule>) -> Self {
        ScriptedBrain {
            rules,
            model: "rein-scripted".into(),
            cache: None,
            reasons: false,
        }
    }

    /// Reason when a request asks for it (see the module's doc).
    pub fn with_reasoning(mut self) -> Self {
        self.reasons = true;
        self
    }

    /// Report this model name (so a price table can cost the calls).
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Behave like a provider with Anthropic's prompt cache: rein places
    /// `cache_control` breakpoints, and the usage reported is what
    /// [`AnthropicCache`] (a model of that cache) makes of them.
    pub fn with_anthropic_cache(mut self) -> Self {
        self.cache = Some(std::sync::Arc::new(AnthropicCache::new()));
        self
    }

    /// The brain `rein chat` offers when no API key is set.
    pub fn demo() -> Self {
        ScriptedBrain::new(vec![
            // First: the task handed on names other rules' phrases.
            Rule::reply("ask a helper to ", "Handing that to a sub-agent.")
                .and_call("delegate", serde_json::json!({}))
                .rest_into("task"),
            Rule::reply("list files", "Listing the files.")
                .and_call("list_files", serde_json::json!({})),
            Rule::reply("search ", "Searching.")
                .and_call("search", serde_json::json!({}))
                .word_into("query"),
            Rule::reply("read ", "Reading it.")
                .and_call("read_file", serde_json::json!({}))
                .word_into("path"),
            Rule::after_reading(
                "edit ",
                "Editing it: TODO becomes DONE.",
                "edit_file",
                serde_json::json!({"edits": [{"old_text": "TODO", "new_text": "DONE"}]}),
            ),
            Rule::after_reading(
                "write ",
                "Writing it.",
                "write_file",
                serde_json::json!({"content": "written by rein's scripted model\n"}),
            ),
            Rule::after_reading(
                "delete ",
                "Deleting it.",
                "delete_file",
                serde_json::json!({}),
            ),
            Rule::reply(
                "hello",
                "Hello! I am rein's offline scripted model. I answer by fixed rules, so you can try the chat without an API key.",
            ),
            Rule::reply(
                "help",
                "Type a message and press Enter; /exit or Ctrl-D ends the chat. Try: list files, read PATH, search WORD, edit PATH (TODO becomes DONE), write PATH, delete PATH, and with --subagents: ask a helper to write PATH. To talk to a real model, set ANTHROPIC_API_KEY or OPENAI_API_KEY (or pass --base-url for a local OpenAI-compatible server) and start rein chat again.",
            ),
        ])
    }

    /// The calls of `rule` (number `index`) at `step`, or `None` when the
    /// rule does not apply (a tool is not offered, the word is missing).
    fn calls(
        &self,
        request: &Request,
        index: usize,
        step: u32,
        word: &dyn Fn(&str, bool) -> Option<String>,
    ) -> Option<Vec<ToolCall>> {
        let rule = self.rules.get(index)?;
        let mut made = Vec::new();
        let now = rule
            .calls
            .iter()
            .filter(|c| c.at_step.is_none_or(|at| at == step));
        for (n, call) in now.enumerate() {
            if !request.tools.iter().any(|t| t.name == call.tool) {
                return None;
            }
            let mut arguments = with_step(&call.arguments, step);
            for (field, whole) in [(&call.word_into, false), (&call.rest_into, true)] {
                let Some(field) = field else { continue };
                let word = word(field, whole).filter(|w| !w.is_empty())?;
                if let Some(map) = arguments.as_object_mut() {
                    map.insert(field.clone(), Value::String(word));
                }
            }
            let id = format!("call-r{index}s{step}c{n}-{}", rein_wire::ids::new_id());
            made.push(ToolCall::new(id, call.tool.clone(), arguments));
        }
        (!made.is_empty()).then_some(made)
    }

    /// After tool results: the next step of the loop they belong to, or the
    /// final answer.
    fn after_results(&self, request: &Request, results: Vec<String>) -> Answer {
        if let Some((index, step, previous)) = last_loop(request)
            && let Some(rule) = self.rules.get(index)
        {
            if step + 1 < rule.steps {
                let word = |field: &str, _whole: bool| {
                    previous
                        .iter()
                        .find_map(|args| args.get(field).and_then(Value::as_str))
                        .map(str::to_owned)
                };
                if let Some(calls) = self.calls(request, index, step + 1, &word) {
                    return (rule.reply.clone(), calls);
                }
            }
            if let Some(done) = &rule.done {
                return (done.clone(), Vec::new());
            }
        }
        (results.join("\n"), Vec::new())
    }

    fn answer(&self, request: &Request) -> Answer {
        if let Some(last) = request.messages.last()
            && last.role == Role::User
        {
            let results = result_lines(last);
            if !results.is_empty() {
                return self.after_results(request, results);
            }
        }
        let last_user = request
            .messages
            .iter()
            .rev()
            .find(|m| {
                m.role == Role::User
                    && m.content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::Text { .. }))
            })
            .map(|m| m.text())
            .unwrap_or_default();
        let lower = last_user.to_lowercase();
        let system = request
            .system
            .iter()
            .map(|b| b.text.to_lowercase())
            .collect::<Vec<_>>()
            .join("\n");
        for (index, rule) in self.rules.iter().enumerate() {
            let phrase = rule.phrase.to_lowercase();
            let Some(at) = lower.find(&phrase) else {
                continue;
            };
            if let Some(wanted) = &rule.when_system
                && !system.contains(&wanted.to_lowercase())
            {
                continue;
            }
            if let Some(wanted) = &rule.when_seen
                && !seen(request).contains(&wanted.to_lowercase())
            {
                continue;
            }
            if rule.calls.is_empty() {
                return (rule.reply.clone(), Vec::new());
            }
            let word = |_: &str, whole: bool| {
                // `lower` may differ in byte length from the original; never panic.
                let rest = last_user.get(at + phrase.len()..).unwrap_or("");
                if whole {
                    return Some(rest.trim().to_owned());
                }
                let word = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .trim_matches(|c: char| c == '"' || c == '\'' || c == '?' || c == ',');
                Some(word.to_owned())
            };
            if let Some(calls) = self.calls(request, index, 0, &word) {
                return (rule.reply.clone(), calls);
            }
        }
        let shown: String = last_user.chars().take(200).collect();
        (
            format!(
                "(offline scripted model) You said: \"{shown}\". I follow fixed rules rather than a language model; say \"help\" to see how to connect a real one."
            ),
            Vec::new(),
        )
    }
}

/// What each tool result in `message` says, as the brain reports it.
fn result_lines(message: &Message) -> Vec<String> {
    message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                content, is_error, ..
            } => {
                let text: String = content
                    .iter()
                    .filter_map(|c| match c {
                        ContentBlock::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                let shown: String = text.chars().take(300).collect();
                Some(if *is_error {
                    format!("That did not work: {shown}")
                } else {
                    format!("Done. The result: {shown}")
                })
            }
            _ => None,
        })
        .collect()
}

/// The rule, step and call arguments of the brain's last message of calls.
fn last_loop(request: &Request) -> Option<(usize, u32, Vec<Value>)> {
    let message = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)?;
    let mut found = None;
    let mut arguments = Vec::new();
    for block in &message.content {
        if let ContentBlock::ToolUse { id, input, .. } = block {
            if found.is_none() {
                found = parse_call_id(id);
            }
            arguments.push(input.clone());
        }
    }
    found.map(|(index, step)| (index, step, arguments))
}

/// `call-r{rule}s{step}c{n}-…` → (rule, step).
fn parse_call_id(id: &str) -> Option<(usize, u32)> {
    let rest = id.strip_prefix("call-r")?;
    let (rule, rest) = rest.split_once('s')?;
    let (step, _) = rest.split_once('c')?;
    Some((rule.parse().ok()?, step.parse().ok()?))
}

/// `value` with `{step}` in every string replaced by `step`.
fn with_step(value: &Value, step: u32) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace("{step}", &step.to_string())),
        Value::Array(items) => Value::Array(items.iter().map(|v| with_step(v, step)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), with_step(v, step)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn estimate_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

impl Provider for ScriptedBrain {
    fn name(&self) -> &str {
        "scripted"
    }

    fn capabilities(&self) -> Capabilities {
        let cached = self.cache.is_some();
        Capabilities {
            caching: if cached {
                CachingStyle::Explicit
            } else {
                CachingStyle::None
            },
            max_cache_breakpoints: if cached { 4 } else { 0 },
            context_window: 200_000,
            structured_output: false,
            token_counting: false,
        }
    }

    fn stream(&self, request: Request) -> EventStream {
        let reasoning = self.reasons && request.reasoning.is_some_and(|r| r != Reasoning::Off);
        if reasoning && let Err(error) = reasoning_came_back(&request) {
            return Box::pin(futures::stream::iter([Err(error)]));
        }
        let (reply, calls) = self.answer(&request);
        let thought = reasoning.then(|| thought_about(&reply, &calls));
        let mut usage = match &self.cache {
            Some(cache) => Usage {
                output: estimate_tokens(reply.len()),
                ..cache.usage(&crate::encode::anthropic_body(&request))
            },
            None => {
                let prompt_chars: usize =
                    request.system.iter().map(|b| b.text.len()).sum::<usize>()
                        + request
                            .messages
                            .iter()
                            .flat_map(|m| m.content.iter())
                            .map(|b| match b {
                                ContentBlock::Text { text } => text.len(),
                                other => serde_json::to_string(other).map_or(0, |s| s.len()),
                            })
                            .sum::<usize>();
                Usage {
                    input: estimate_tokens(prompt_chars),
                    output: estimate_tokens(reply.len()),
                    ..Usage::default()
                }
            }
        };
        let mut events = vec![StreamEvent::MessageStart {
            id: None,
            model: self.model.clone(),
        }];
        if let Some(thought) = thought {
            let tokens = estimate_tokens(thought.len());
            usage.output += tokens;
            usage.reasoning = tokens;
            let signature = signature_of(&thought);
            events.push(StreamEvent::ThinkingDelta { text: thought });
            events.push(StreamEvent::ThinkingSignature {
                signature,
                id: None,
            });
        }
        let mut rest = reply.as_str();
        while !rest.is_empty() {
            let cut = rest
                .char_indices()
                .skip(1)
                .find(|(_, c)| *c == ' ')
                .map_or(rest.len(), |(i, _)| i);
            events.push(StreamEvent::TextDelta {
                text: rest[..cut].to_owned(),
            });
            rest = &rest[cut..];
        }
        let mut stop = StopReason::EndTurn;
        for (index, call) in calls.into_iter().enumerate() {
            stop = StopReason::ToolUse;
            let index = index as u32;
            events.push(StreamEvent::ToolCallStart {
                index,
                id: call.id,
                name: call.tool,
            });
            events.push(StreamEvent::ToolCallDelta {
                index,
                fragment: call.arguments.to_string(),
            });
            events.push(StreamEvent::ToolCallEnd { index });
        }
        events.push(StreamEvent::Stop { reason: stop });
        events.push(StreamEvent::Usage { usage });
        Box::pin(futures::stream::iter(events.into_iter().map(Ok)))
    }
}

/// Every message's text in `request`, tool results' text included,
/// lowercased (for `Rule::when_seen`).
fn seen(request: &Request) -> String {
    let mut out = Vec::new();
    for message in &request.messages {
        out.push(message.text());
        for block in &message.content {
            if let ContentBlock::ToolResult { content, .. } = block {
                out.push(rein_wire::text_of(content));
            }
        }
    }
    out.join("\n").to_lowercase()
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn call_ids_carry_rule_and_step() {
        assert_eq!(parse_call_id("call-r3s12c0-0190abcd"), Some((3, 12)));
        assert_eq!(parse_call_id("call_0190abcd"), None);
        assert_eq!(parse_call_id("call-rxs1c0-"), None);
    }

    #[test]
    fn step_is_put_into_strings() {
        let v = serde_json::json!({"path": "f{step}.txt", "n": 3, "deep": ["{step}"]});
        assert_eq!(
            with_step(&v, 7),
            serde_json::json!({"path": "f7.txt", "n": 3, "deep": ["7"]})
        );
    }
}
