//! [`ScriptedBrain`]: a deterministic model for demos, evals and offline use.
//!
//! Rules over the conversation decide its answer: the first rule whose
//! phrase appears in the last user text (case-insensitive) gives the reply
//! and, optionally, a tool call. With no matching rule it says what it is
//! and echoes the question. Replies stream word by word, with usage
//! estimated from the characters (about four per token), so a whole
//! conversation is reproducible byte for byte.

use rein_gateway::{CachingStyle, Capabilities, EventStream, Provider};
use rein_wire::{ContentBlock, Request, Role, StopReason, StreamEvent, Usage};
use serde_json::Value;

/// One rule: when the last user text contains `phrase`, answer `reply`
/// (and call `tool` with `arguments`, if set).
#[derive(Debug, Clone)]
pub struct Rule {
    /// The phrase to look for, lower-case.
    pub phrase: String,
    /// The answer text.
    pub reply: String,
    /// A tool call to make: name and arguments.
    pub tool: Option<(String, Value)>,
    /// Put the word after the phrase into this argument of the call.
    pub word_into: Option<String>,
}

impl Rule {
    /// A rule answering `reply` when `phrase` appears.
    pub fn reply(phrase: &str, reply: &str) -> Self {
        Rule {
            phrase: phrase.to_lowercase(),
            reply: reply.into(),
            tool: None,
            word_into: None,
        }
    }

    /// A rule that calls `tool` with `arguments`, the word after the phrase
    /// put into the argument `word_into` (if given).
    pub fn call(
        phrase: &str,
        reply: &str,
        tool: &str,
        arguments: Value,
        word_into: Option<&str>,
    ) -> Self {
        Rule {
            phrase: phrase.to_lowercase(),
            reply: reply.into(),
            tool: Some((tool.into(), arguments)),
            word_into: word_into.map(str::to_owned),
        }
    }
}

/// A rule-driven, deterministic [`Provider`].
#[derive(Debug, Clone)]
pub struct ScriptedBrain {
    rules: Vec<Rule>,
}

impl Default for ScriptedBrain {
    fn default() -> Self {
        ScriptedBrain::demo()
    }
}

impl ScriptedBrain {
    /// A brain with these rules.
    pub fn new(rules: Vec<Rule>) -> Self {
        ScriptedBrain { rules }
    }

    /// The brain `rein chat` offers when no API key is set.
    pub fn demo() -> Self {
        ScriptedBrain::new(vec![
            Rule::call(
                "list files",
                "Listing the files.",
                "list_files",
                serde_json::json!({}),
                None,
            ),
            Rule::call(
                "search ",
                "Searching.",
                "search",
                serde_json::json!({}),
                Some("query"),
            ),
            Rule::call(
                "read ",
                "Reading it.",
                "read_file",
                serde_json::json!({}),
                Some("path"),
            ),
            Rule::call(
                "write ",
                "Writing it.",
                "write_file",
                serde_json::json!({"content": "written by rein's scripted model\n"}),
                Some("path"),
            ),
            Rule::call(
                "delete ",
                "Deleting it.",
                "delete_file",
                serde_json::json!({}),
                Some("path"),
            ),
            Rule::reply(
                "hello",
                "Hello! I am rein's offline scripted model. I answer by fixed rules, so you can try the chat without an API key.",
            ),
            Rule::reply(
                "help",
                "Type a message and press Enter; /exit or Ctrl-D ends the chat. Try: list files, read PATH, search WORD, write PATH, delete PATH. To talk to a real model, set ANTHROPIC_API_KEY or OPENAI_API_KEY (or pass --base-url for a local OpenAI-compatible server) and start rein chat again.",
            ),
        ])
    }

    fn answer(&self, request: &Request) -> (String, Option<(String, Value)>) {
        // After tool results, say what came back instead of calling again.
        if let Some(last) = request.messages.last()
            && last.role == Role::User
        {
            let results: Vec<String> = last
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
                .collect();
            if !results.is_empty() {
                return (results.join("\n"), None);
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
        let offered = |name: &str| request.tools.iter().any(|t| t.name == name);
        for rule in &self.rules {
            let Some(at) = lower.find(&rule.phrase) else {
                continue;
            };
            let Some((tool, mut arguments)) = rule.tool.clone() else {
                return (rule.reply.clone(), None);
            };
            if !offered(&tool) {
                continue;
            }
            if let Some(field) = &rule.word_into {
                // `lower` may differ in byte length from the original; never panic.
                let rest = last_user.get(at + rule.phrase.len()..).unwrap_or("");
                let word = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .trim_matches(|c: char| c == '"' || c == '\'' || c == '?' || c == ',');
                if word.is_empty() {
                    continue;
                }
                if let Some(map) = arguments.as_object_mut() {
                    map.insert(field.clone(), Value::String(word.to_owned()));
                }
            }
            return (rule.reply.clone(), Some((tool, arguments)));
        }
        let shown: String = last_user.chars().take(200).collect();
        (
            format!(
                "(offline scripted model) You said: \"{shown}\". I follow fixed rules rather than a language model; say \"help\" to see how to connect a real one."
            ),
            None,
        )
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
        Capabilities {
            caching: CachingStyle::None,
            max_cache_breakpoints: 0,
            context_window: 200_000,
            structured_output: false,
            token_counting: false,
        }
    }

    fn stream(&self, request: Request) -> EventStream {
        let (reply, tool) = self.answer(&request);
        let prompt_chars: usize = request.system.iter().map(|b| b.text.len()).sum::<usize>()
            + request
                .messages
                .iter()
                .flat_map(|m| m.content.iter())
                .map(|b| match b {
                    ContentBlock::Text { text } => text.len(),
                    other => serde_json::to_string(other).map_or(0, |s| s.len()),
                })
                .sum::<usize>();
        let mut events = vec![StreamEvent::MessageStart {
            id: None,
            model: "rein-scripted".into(),
        }];
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
        if let Some((name, arguments)) = tool {
            stop = StopReason::ToolUse;
            events.push(StreamEvent::ToolCallStart {
                index: 0,
                id: rein_wire::ids::new_prefixed("call"),
                name,
            });
            events.push(StreamEvent::ToolCallDelta {
                index: 0,
                fragment: arguments.to_string(),
            });
            events.push(StreamEvent::ToolCallEnd { index: 0 });
        }
        events.push(StreamEvent::Stop { reason: stop });
        events.push(StreamEvent::Usage {
            usage: Usage {
                input: estimate_tokens(prompt_chars),
                output: estimate_tokens(reply.len()),
                ..Usage::default()
            },
        });
        Box::pin(futures::stream::iter(events.into_iter().map(Ok)))
    }
}
