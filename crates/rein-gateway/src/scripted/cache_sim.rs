//! [`AnthropicCache`]: a model of Anthropic's prompt cache, for measuring
//! how well breakpoint planning pays.
//!
//! The prompt is read in cache order (tools, system, messages, block by
//! block). Every block carrying `cache_control` is a checkpoint: the hash of
//! everything up to it (markers left out). A request reads the longest
//! checkpoint written before, writes the rest up to its last checkpoint, and
//! pays the remainder as uncached input. Tokens are characters / 3.5. It is
//! a model, not the service: good enough to tell a plan that pays from one
//! that does not.

use std::collections::HashSet;
use std::sync::Mutex;

use rein_wire::Usage;
use serde_json::Value;

/// A simulated Anthropic prompt cache.
#[derive(Debug, Default)]
pub struct AnthropicCache {
    written: Mutex<HashSet<String>>,
}

fn tokens(bytes: usize) -> u64 {
    rein_wire::estimate_tokens_of(bytes as u64)
}

impl AnthropicCache {
    /// An empty cache.
    pub fn new() -> Self {
        AnthropicCache::default()
    }

    /// The usage a Messages request body would report (output left at 0).
    pub fn usage(&self, body: &Value) -> Usage {
        let mut blocks: Vec<Value> = Vec::new();
        for tool in body["tools"].as_array().into_iter().flatten() {
            blocks.push(tool.clone());
        }
        for block in body["system"].as_array().into_iter().flatten() {
            blocks.push(block.clone());
        }
        for message in body["messages"].as_array().into_iter().flatten() {
            for block in message["content"].as_array().into_iter().flatten() {
                let mut b = block.clone();
                if let Some(map) = b.as_object_mut() {
                    map.insert("role".into(), message["role"].clone());
                }
                blocks.push(b);
            }
        }
        let mut hasher = blake3::Hasher::new();
        let mut bytes = 0usize;
        let mut checkpoints: Vec<(String, u64)> = Vec::new();
        for mut block in blocks {
            let marked = block
                .as_object_mut()
                .and_then(|m| m.remove("cache_control"))
                .is_some();
            let text = block.to_string();
            hasher.update(text.as_bytes());
            bytes += text.len();
            if marked {
                checkpoints.push((hasher.finalize().to_hex().to_string(), tokens(bytes)));
            }
        }
        let total = tokens(bytes);
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        let read = checkpoints
            .iter()
            .filter(|(hash, _)| written.contains(hash))
            .map(|(_, t)| *t)
            .max()
            .unwrap_or(0);
        let last = checkpoints.last().map_or(0, |(_, t)| *t);
        let write = last.saturating_sub(read);
        for (hash, _) in checkpoints {
            written.insert(hash);
        }
        Usage {
            input: total.saturating_sub(read).saturating_sub(write),
            output: 0,
            cache_read: read,
            cache_write: write,
            reasoning: 0,
        }
    }
}
