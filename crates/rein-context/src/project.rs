//! The transcript the model sees, projected from the log.
//!
//! For the turns on the path from the root to the current turn: each
//! prompt, each completed assistant message, each tool result (threaded as
//! a user message of `tool_result` blocks right after the assistant message
//! that called them), and what a person said mid-turn. Pruned results show
//! as stubs; calls set aside as too many at once leave the view with their
//! results, named in a note on their step's first shown result. The log is
//! read, not changed.
//!
//! Not here: the request around the messages (`rein-runner`'s window), a
//! compaction's own text (`state_text`).

use std::collections::HashSet;

use rein_sessions::{Compaction, Event, StoredEvent, ToolStatus};
use rein_wire::{ContentBlock, Message, Role};
use serde_json::Value;

fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A result's content blocks: its JSON as text, its `_images` as images.
fn result_blocks(content: &Value) -> Vec<ContentBlock> {
    let Some(images) = content.get("_images").and_then(Value::as_array) else {
        return vec![ContentBlock::text(result_text(content))];
    };
    let mut rest = content.clone();
    if let Some(map) = rest.as_object_mut() {
        map.remove("_images");
    }
    let mut blocks = vec![ContentBlock::text(result_text(&rest))];
    for img in images {
        if let (Some(media_type), Some(data)) = (
            img.get("media_type").and_then(Value::as_str),
            img.get("data").and_then(Value::as_str),
        ) {
            blocks.push(ContentBlock::Image {
                source: rein_wire::ImageSource::Base64 {
                    media_type: media_type.to_owned(),
                    data: data.to_owned(),
                },
            });
        }
    }
    blocks
}

/// The messages for the turns in `path` (turn ids), from `events`.
pub fn project(events: &[StoredEvent], path: &[String]) -> Vec<Message> {
    project_restoring(events, path, &HashSet::new())
}

/// The projection of `events` for `path` with the set-aside results of the
/// calls in `restored` shown whole again: what the model summarising a
/// stretch must read, since the summary is all that stands for those
/// results afterwards.
pub fn project_restoring(
    events: &[StoredEvent],
    path: &[String],
    restored: &HashSet<&str>,
) -> Vec<Message> {
    let mut projector = Projector::new(events, path);
    projector
        .edits
        .pruned
        .retain(|call, _| !restored.contains(call.as_str()));
    projector
        .edits
        .at_once
        .retain(|call| !restored.contains(call.as_str()));
    for stored in events {
        projector.feed(stored);
    }
    projector
        .messages
        .into_iter()
        .map(std::sync::Arc::unwrap_or_clone)
        .collect()
}

/// The projection as a fold: fed the log in order, it keeps the messages so
/// far, so the next step only feeds what is new. It stays valid while the
/// path only grows and no compaction is recorded ([`Projector::covers`]).
#[derive(Debug, Clone)]
pub struct Projector {
    path: Vec<String>,
    on_path: HashSet<String>,
    edits: Edits,
    compactions: usize,
    current: bool,
    summarised: HashSet<u64>,
    /// Calls set aside as too many at once that are out of view, and the
    /// call whose result carries the note naming them (its step's first
    /// call still shown), with that note.
    hidden: HashSet<String>,
    notes: std::collections::HashMap<String, String>,
    /// The last sequence number fed.
    pub seen: u64,
    /// The messages so far, each shared with the requests made from them
    /// (and the gateway's kept bytes): a step copies only the last message,
    /// and only when it grows while another holder keeps it.
    pub messages: Vec<std::sync::Arc<Message>>,
}

fn compaction_count(events: &[StoredEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e.event, Event::CompactionCreated { .. }))
        .count()
}

impl Projector {
    /// A projector for `path`, with the compactions recorded in `events`.
    pub fn new(events: &[StoredEvent], path: &[String]) -> Self {
        let on_path: HashSet<String> = path.iter().cloned().collect();
        let refs: HashSet<&str> = on_path.iter().map(String::as_str).collect();
        Projector {
            path: path.to_vec(),
            edits: Edits::collect(events, &refs),
            compactions: compaction_count(events),
            on_path,
            current: false,
            summarised: HashSet::new(),
            hidden: HashSet::new(),
            notes: std::collections::HashMap::new(),
            seen: 0,
            messages: Vec::new(),
        }
    }

    /// Whether this projector can continue to `path` over a log that
    /// records `compactions` compactions (a count the caller keeps as the
    /// log grows): the path extends its own and no compaction was recorded
    /// since.
    pub fn covers(&self, compactions: usize, path: &[String]) -> bool {
        path.starts_with(&self.path) && compactions == self.compactions
    }

    /// Extend to a longer path (new turns below the old head); the same
    /// path costs nothing.
    pub fn extend_path(&mut self, path: &[String]) {
        for turn in &path[self.path.len()..] {
            self.on_path.insert(turn.clone());
            self.path.push(turn.clone());
        }
    }

    fn user(&mut self, block: ContentBlock) {
        match self.messages.last_mut() {
            Some(m) if m.role == Role::User => std::sync::Arc::make_mut(m).content.push(block),
            _ => self.messages.push(std::sync::Arc::new(Message {
                role: Role::User,
                content: vec![block],
            })),
        }
    }

    /// Feed the next event of the log.
    pub fn feed(&mut self, stored: &StoredEvent) {
        self.seen = stored.seq;
        if let Event::TurnStarted { turn_id, .. } = &stored.event {
            self.current = self.on_path.contains(turn_id);
        }
        if !self.current {
            return;
        }
        // Events a compaction covers are replaced by its summary, once.
        if let Some((from, text)) = self.edits.covering(stored.seq) {
            let text = text.to_owned();
            if self.summarised.insert(from) {
                self.user(ContentBlock::text(text));
            }
            return;
        }
        match &stored.event {
            Event::TurnStarted { prompt, .. } => self.user(ContentBlock::text(prompt.clone())),
            Event::ModelCompleted { message, .. } if !message.content.is_empty() => {
                let message = self.without_set_aside(message);
                self.messages.push(std::sync::Arc::new(message));
            }
            Event::ToolResult {
                call_id,
                status,
                content,
                ..
            } => {
                if self.hidden.contains(call_id.as_str()) {
                    return;
                }
                let mut content = match self.edits.pruned.get(call_id.as_str()) {
                    Some(_) if self.edits.at_once.contains(call_id.as_str()) => {
                        vec![ContentBlock::text(SET_ASIDE_STUB)]
                    }
                    Some(artifact) => vec![ContentBlock::text(pruned_stub(artifact))],
                    None => result_blocks(content),
                };
                if let Some(note) = self.notes.remove(call_id.as_str()) {
                    content.push(ContentBlock::text(note));
                }
                self.user(ContentBlock::ToolResult {
                    tool_use_id: call_id.clone(),
                    content,
                    is_error: *status == ToolStatus::Error,
                });
            }
            Event::SteerSaid { text } => self.user(ContentBlock::text(text.clone())),
            _ => {}
        }
    }
}

impl Projector {
    /// `message` as the model is shown it: the calls set aside as too many
    /// at once are taken out with their results (a provider needs each
    /// shown call answered, and twenty stubs cost more room than the
    /// setting aside won), and the step's first call still shown carries a
    /// note naming them, so the model can make them again. When every call
    /// of the step was set aside, the first stays, with a stub.
    fn without_set_aside(&mut self, message: &Message) -> Message {
        let set_aside = |b: &ContentBlock| matches!(b, ContentBlock::ToolUse { id, .. } if self.edits.at_once.contains(id.as_str()));
        if !message.content.iter().any(set_aside) {
            return message.clone();
        }
        let keeper = message
            .content
            .iter()
            .find_map(|b| match b {
                ContentBlock::ToolUse { id, .. } if !set_aside(b) => Some(id.clone()),
                _ => None,
            })
            .or_else(|| {
                message.content.iter().find_map(|b| match b {
                    ContentBlock::ToolUse { id, .. } => Some(id.clone()),
                    _ => None,
                })
            })
            .unwrap_or_default();
        let mut named = Vec::new();
        let mut content = Vec::new();
        for block in &message.content {
            match block {
                ContentBlock::ToolUse { id, name, input } if set_aside(block) && *id != keeper => {
                    self.hidden.insert(id.clone());
                    named.push(format!("{name} {input}"));
                }
                other => content.push(other.clone()),
            }
        }
        if !named.is_empty() {
            self.notes.insert(keeper, set_aside_note(&named));
        }
        Message {
            role: message.role,
            content,
        }
    }
}

/// At most this many set-aside calls are named in a note; the rest counted.
const NOTE_CALLS: usize = 64;
/// Each named call's arguments are cut to this many characters.
const NOTE_CALL_CHARS: usize = 120;

/// The note on a step's first shown result naming the calls of the step
/// set aside for room (`named`: each call's tool and arguments).
fn set_aside_note(named: &[String]) -> String {
    let shown: Vec<String> = named
        .iter()
        .take(NOTE_CALLS)
        .map(|c| c.chars().take(NOTE_CALL_CHARS).collect())
        .collect();
    let more = named.len().saturating_sub(NOTE_CALLS);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!(
        "[rein: the results of {} other calls of this step did not fit the context window and were set aside, unseen: {}{more}. Make those calls again when you need them, fewer at a time.]",
        named.len(),
        shown.join("; ")
    )
}

/// What a pruned result shows the model.
pub fn pruned_stub(artifact: &str) -> String {
    format!(
        "{{\"pruned\":true,\"artifact\":\"{artifact}\",\"note\":\"This older result was set aside to save room; read it with read_result if it is needed again.\"}}"
    )
}

/// What a result set aside as one of too many read at once shows the
/// model (`conversation::window::overflow`). Short, and with no artifact:
/// a step that asked for twenty reads gets twenty of these, and the call is
/// made again rather than paged (the artifact stays in the log's record).
pub const SET_ASIDE_STUB: &str = "{\"set_aside\":\"no room beside the rest of this step: make this call again, fewer at a time\"}";

/// The compactions that apply to a path: pruned results and summarised ranges.
#[derive(Debug, Default, Clone)]
pub struct Edits {
    /// Call id -> the artifact holding its result.
    pub pruned: std::collections::HashMap<String, String>,
    /// The pruned calls set aside as too many read at once.
    pub at_once: HashSet<String>,
    /// (from seq, to seq, summary text).
    pub ranges: Vec<(u64, u64, String)>,
}

impl Edits {
    /// The edits recorded by `compaction.created` events of turns on the path.
    pub fn collect(events: &[StoredEvent], on_path: &HashSet<&str>) -> Self {
        let mut edits = Edits::default();
        let mut current = false;
        for stored in events {
            match &stored.event {
                Event::TurnStarted { turn_id, .. } => current = on_path.contains(turn_id.as_str()),
                Event::CompactionCreated {
                    from_seq,
                    to_seq,
                    summary,
                    ..
                } if current => match &**summary {
                    Compaction::Prune(prune) => {
                        for call in &prune.calls {
                            edits
                                .pruned
                                .insert(call.call_id.clone(), call.artifact.clone());
                            if prune.at_once {
                                edits.at_once.insert(call.call_id.clone());
                            }
                        }
                    }
                    Compaction::Compact(compact) => {
                        edits
                            .ranges
                            .push((*from_seq, *to_seq, compact.text.clone()));
                    }
                    Compaction::Other(_) => {}
                },
                _ => {}
            }
        }
        edits
    }

    /// The compaction covering `seq`, if any: its start and its summary.
    pub fn covering(&self, seq: u64) -> Option<(u64, &str)> {
        self.ranges
            .iter()
            .rev()
            .find(|(from, to, _)| (*from..=*to).contains(&seq))
            .map(|(from, _, text)| (*from, text.as_str()))
    }
}
