//! Context pressure: keep the request inside the model's context window
//! without rewriting the log.
//!
//! The whole request is estimated (characters of its JSON / 3.5, plus the
//! reserved output). Above the soft threshold (70% by default), old
//! successful read results are set aside as artifacts (the model can read
//! them back with `read_result`); a batch is only made if it reclaims
//! enough. Above the hard threshold (85%), older complete groups are
//! replaced by a structured state derived from the log plus a summary the
//! model writes, keeping a raw recent tail. Both are recorded as
//! `compaction.created`; the projection applies them, so a branch from
//! before a compaction still sees the full history. If one compaction
//! cannot bring the request under the hard threshold, the turn ends with
//! `context_window_exceeded` — it never loops.
//!
//! Here are the pure parts: the policy's thresholds, estimates and sizes,
//! the groups of the log a compaction may cover, and the state it derives.
//! Not here: deciding when, and the model call for the summary
//! (`rein-runner`'s `conversation/window`).

use std::collections::{BTreeSet, HashSet};

use rein_sessions::{CompactState, DecisionSeen, Event, FailedCall, StoredEvent, ToolStatus};
use rein_wire::Request;
use serde_json::Value;

/// Thresholds and shapes of context management.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextPolicy {
    /// The window in tokens (`None`: what the provider says).
    pub window: Option<u64>,
    /// Soft pruning starts above this share of the window.
    pub soft: f64,
    /// Hard compaction starts above this share.
    pub hard: f64,
    /// Hard compaction aims at this share.
    pub target: f64,
    /// A pruning batch must reclaim at least this many tokens.
    pub min_reclaim: u64,
    /// Complete groups (a model message and its results) kept raw: soft
    /// pruning never touches them, and compaction keeps them whenever they
    /// fit in what the target leaves (see [`tail_groups`]).
    pub keep_groups: usize,
    /// The raw tail a compaction keeps, as a share of the request's
    /// tokens when it compacts…
    pub tail_share: f64,
    /// …and at most this many tokens.
    pub tail_max_tokens: u64,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        ContextPolicy {
            window: None,
            soft: 0.70,
            hard: 0.85,
            target: 0.60,
            min_reclaim: 500,
            keep_groups: 4,
            tail_share: 0.2,
            tail_max_tokens: 32_000,
        }
    }
}

/// The local estimate of a request's size in tokens, output reserved.
pub fn estimate(request: &Request) -> u64 {
    let mut counter = Counting::new(std::io::sink());
    let bytes = serde_json::to_writer(&mut counter, request).map_or(0, |()| counter.bytes);
    estimate_from_bytes(bytes, request.max_output_tokens)
}

/// The estimate for a request of `bytes` of JSON with this output limit.
pub fn estimate_from_bytes(bytes: u64, max_output_tokens: u32) -> u64 {
    rein_wire::estimate_tokens_of(bytes) + u64::from(max_output_tokens)
}

/// A value's JSON size in bytes and the blake3 hash of that JSON, in one
/// pass and without building the text.
///
/// The JSON is `serde_json`'s, not canonical (RFC 8785): rein's request
/// types always write the same bytes for the same value (struct fields in
/// declaration order, JSON maps sorted), so the hash is stable without the
/// canonical writer, which cost more than everything else in a step
/// (measured with perf on `cargo xtask bench --peers`: two canonical writes
/// of the request were ~70% of a step's CPU at 200 steps of history).
pub fn size_and_hash<T: serde::Serialize + ?Sized>(value: &T) -> (u64, blake3::Hash) {
    // Buffered: blake3 is fast on large updates and slow on the many small
    // writes serde_json makes.
    let mut counter = Counting::new(std::io::BufWriter::with_capacity(
        16 * 1024,
        blake3::Hasher::new(),
    ));
    let written = serde_json::to_writer(&mut counter, value);
    let bytes = counter.bytes;
    match (written, counter.inner.into_inner()) {
        (Ok(()), Ok(hasher)) => (bytes, hasher.finalize()),
        _ => (0, blake3::Hasher::new().finalize()),
    }
}

/// A writer that counts what passes through it.
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W> Counting<W> {
    fn new(inner: W) -> Self {
        Counting { inner, bytes: 0 }
    }
}

impl<W: std::io::Write> std::io::Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Tokens of `text` by the model's own tokenizer, where one is known
/// locally (OpenAI's o200k and cl100k families); `None` otherwise.
pub fn count_local(model: &str, text: &str) -> Option<u64> {
    let o200k = ["gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt-4o"];
    let bpe = if o200k.iter().any(|p| model.starts_with(p)) {
        tiktoken_rs::o200k_base_singleton()
    } else if model.starts_with("gpt-4") || model.starts_with("gpt-3.5") {
        tiktoken_rs::cl100k_base_singleton()
    } else {
        return None;
    };
    Some(bpe.encode_ordinary(text).len() as u64)
}

/// Events of turns on the path, in order.
pub fn on_path<'a>(events: &'a [StoredEvent], path: &[String]) -> Vec<&'a StoredEvent> {
    let path: HashSet<&str> = path.iter().map(String::as_str).collect();
    let mut current = false;
    events
        .iter()
        .filter(|e| {
            if let Event::TurnStarted { turn_id, .. } = &e.event {
                current = path.contains(turn_id.as_str());
            }
            current
        })
        .collect()
}

/// The sequence numbers at which groups (model calls) begin, on the path.
pub fn group_starts(events: &[&StoredEvent]) -> Vec<u64> {
    events
        .iter()
        .filter(|e| matches!(e.event, Event::ModelRequested { .. }))
        .map(|e| e.seq)
        .collect()
}

/// How many of the newest groups (`sizes` in tokens, oldest first) a
/// compaction keeps raw: the newest always (the model goes on from it);
/// then older ones while the tail stays within `budget` (the policy's
/// share of the request, at most its token cap); and the `keep` newest
/// whenever they fit in `floor` (what the target share leaves once the
/// prefix and the reserved output are counted). One huge group is kept
/// alone, so the rest can be compacted around it.
pub fn tail_groups(sizes: &[u64], budget: u64, floor: u64, keep: usize) -> usize {
    let mut kept = 0;
    let mut total = 0u64;
    for size in sizes.iter().rev() {
        let next = total.saturating_add(*size);
        let fits = kept == 0 || next <= budget || (kept < keep && next <= floor);
        if !fits {
            break;
        }
        total = next;
        kept += 1;
    }
    kept
}

/// What a result set aside by soft pruning still costs: its stub.
const PRUNED_STUB_TOKENS: u64 = 64;

/// Each group's size in tokens by the local estimate (its events' JSON; a
/// result soft pruning set aside — its call in `pruned` — as its stub),
/// oldest first; `starts` are the groups' first sequence numbers.
pub fn group_sizes(
    events: &[&StoredEvent],
    starts: &[u64],
    pruned: &dyn Fn(&str) -> bool,
) -> Vec<u64> {
    let mut sizes = vec![0u64; starts.len()];
    for stored in events {
        let at = starts.partition_point(|s| *s <= stored.seq);
        if at == 0 {
            continue;
        }
        sizes[at - 1] += match &stored.event {
            Event::ToolResult { call_id, .. } if pruned(call_id) => PRUNED_STUB_TOKENS,
            event => {
                let bytes = serde_json::to_vec(event).map_or(0, |b| b.len() as u64);
                rein_wire::estimate_tokens_of(bytes)
            }
        };
    }
    sizes
}

/// Read results that may be set aside: successful, read-only, not yet
/// pruned, before `before`, larger than a stub. (call id, content, tokens, seq)
pub fn prunable(
    events: &[&StoredEvent],
    before: u64,
    pruned: &HashSet<String>,
) -> Vec<(String, Value, u64, u64)> {
    let reads: HashSet<&str> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolCalled {
                call_id,
                permission,
                ..
            } if *permission == Some(rein_wire::permission::PermissionClass::Read) => {
                Some(call_id.as_str())
            }
            _ => None,
        })
        .collect();
    events
        .iter()
        .filter(|e| e.seq < before)
        .filter_map(|e| match &e.event {
            Event::ToolResult {
                call_id,
                status: ToolStatus::Ok,
                content,
                ..
            } if reads.contains(call_id.as_str()) && !pruned.contains(call_id) => {
                let size = content.to_string().len();
                (size > 400).then(|| {
                    (
                        call_id.clone(),
                        content.clone(),
                        rein_wire::estimate_tokens_of(size as u64),
                        e.seq,
                    )
                })
            }
            _ => None,
        })
        .collect()
}

/// The structured state of the covered events, derived from the log alone:
/// the prompts, files touched (in the order first touched, so a model
/// working through a list sees where it stopped), what each read showed
/// that no other did (`read_notes`), files changed (at the revisions
/// left), the
/// checks' receipts, failures, decisions, pending approvals, sub-agents and
/// artifacts.
pub fn state(
    covered: &[&StoredEvent],
    pending: &[String],
    record: &crate::claims::Record,
) -> CompactState {
    let mut prompts = Vec::new();
    let mut files: Vec<&str> = Vec::new();
    let mut seen_files = HashSet::new();
    let mut failures = Vec::new();
    let mut decisions = Vec::new();
    let mut artifacts = BTreeSet::new();
    let mut agents = BTreeSet::new();
    let mut tools_by_call = std::collections::HashMap::new();
    let mut paths_by_call = std::collections::HashMap::new();
    let mut reads = crate::read_notes::Reads::default();
    for e in covered {
        match &e.event {
            Event::TurnStarted { prompt, .. } => prompts.push(prompt.clone()),
            Event::ToolCalled {
                call_id,
                tool,
                arguments,
                ..
            } => {
                tools_by_call.insert(call_id.clone(), tool.clone());
                for key in ["path", "file", "table", "object"] {
                    if let Some(v) = arguments.get(key).and_then(Value::as_str) {
                        paths_by_call.entry(call_id.as_str()).or_insert(v);
                        if seen_files.insert(v) {
                            files.push(v);
                        }
                    }
                }
            }
            Event::ToolResult {
                call_id,
                status: ToolStatus::Error,
                content,
                artifact,
                ..
            } => {
                let code = content
                    .pointer("/error/code")
                    .and_then(Value::as_str)
                    .unwrap_or("error");
                failures.push(FailedCall {
                    tool: tools_by_call.get(call_id).cloned(),
                    code: code.to_owned(),
                });
                if let Some(a) = artifact {
                    artifacts.insert(a.clone());
                }
            }
            Event::ToolResult {
                call_id,
                content,
                artifact,
                ..
            } => {
                if let Some(path) = paths_by_call.get(call_id.as_str()) {
                    reads.saw(path, content);
                }
                if let Some(a) = artifact {
                    artifacts.insert(a.clone());
                }
            }
            Event::ApprovalDecided { decision, by, .. } => decisions.push(DecisionSeen {
                decision: *decision,
                by: by.clone(),
            }),
            Event::AgentStarted { agent_path, .. } => {
                agents.insert(agent_path.clone());
            }
            _ => {}
        }
    }
    let (changed, checks) = record.state();
    // Left out when empty: a state with no read to note stays as it was.
    let (read_notes, left_out) = reads.notes();
    CompactState {
        prompts,
        touched: files.into_iter().map(str::to_owned).collect(),
        changed,
        checks,
        failures,
        decisions,
        pending_approvals: pending.to_vec(),
        agents: agents.into_iter().collect(),
        artifacts: artifacts.into_iter().collect(),
        read_notes,
        read_notes_left_out: (left_out > 0).then_some(left_out as u64),
        rest: serde_json::Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use rein_sessions::{Event, StoredEvent};
    use serde_json::json;

    use super::{count_local, state};

    #[test]
    fn files_touched_keep_the_order_they_were_first_touched_in() {
        let reads: Vec<StoredEvent> = [2, 10, 1, 2]
            .iter()
            .enumerate()
            .map(|(i, n)| StoredEvent {
                session_id: "s".into(),
                seq: i as u64 + 1,
                at_ms: 0,
                agent_path: "main".into(),
                event: Event::ToolCalled {
                    call_id: format!("c{i}"),
                    tool: "read_file".into(),
                    arguments: json!({"path": format!("f{n}.txt")}),
                    permission: None,
                },
            })
            .collect();
        let covered: Vec<&StoredEvent> = reads.iter().collect();
        let record = crate::claims::Record::of(&covered);
        let state = state(&covered, &[], &record);
        assert_eq!(state.touched, ["f2.txt", "f10.txt", "f1.txt"]);
    }

    #[test]
    fn known_models_are_counted_by_their_tokenizer() {
        assert_eq!(count_local("gpt-4o-2024-08-06", "hello world"), Some(2));
        assert_eq!(count_local("gpt-4-turbo", "hello world"), Some(2));
        assert_eq!(count_local("claude-sonnet-4-5", "hello world"), None);
        let text = "fn main() { println!(\"{}\", 1 + 2); }\n".repeat(50);
        let counted = count_local("gpt-4.1-mini", &text).unwrap_or(0);
        assert!(counted > 100 && counted < text.len() as u64, "{counted}");
    }
}
