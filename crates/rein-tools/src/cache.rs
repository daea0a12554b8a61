//! The tool-result cache: cacheable reads remembered per (tool, canonical
//! arguments, revision token). A new revision makes old entries unreachable;
//! the cache is bounded and forgets the oldest entries first.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

/// A bounded cache of read results.
#[derive(Debug)]
pub struct ResultCache {
    capacity: usize,
    entries: HashMap<String, Value>,
    order: VecDeque<String>,
}

impl Default for ResultCache {
    fn default() -> Self {
        ResultCache::new(256)
    }
}

fn key(tool: &str, args: &Value, revision: &str) -> String {
    let args = rein_wire::canonical::to_string(args).unwrap_or_else(|_| args.to_string());
    format!("{tool}\u{0}{revision}\u{0}{args}")
}

impl ResultCache {
    /// A cache holding at most `capacity` results.
    pub fn new(capacity: usize) -> Self {
        ResultCache {
            capacity: capacity.max(1),
            entries: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// A remembered result.
    pub fn get(&self, tool: &str, args: &Value, revision: &str) -> Option<&Value> {
        self.entries.get(&key(tool, args, revision))
    }

    /// Remember a result.
    pub fn put(&mut self, tool: &str, args: &Value, revision: &str, result: Value) {
        let k = key(tool, args, revision);
        if self.entries.insert(k.clone(), result).is_none() {
            self.order.push_back(k);
        }
        while self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.entries.remove(&old);
            }
        }
    }

    /// How many results it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_canonical_and_revisioned_and_the_cache_is_bounded() {
        let mut c = ResultCache::new(2);
        c.put("read", &json!({"b": 1, "a": 2}), "r1", json!("x"));
        assert_eq!(
            c.get("read", &json!({"a": 2, "b": 1}), "r1"),
            Some(&json!("x"))
        );
        assert_eq!(c.get("read", &json!({"a": 2, "b": 1}), "r2"), None);
        c.put("read", &json!(1), "r1", json!("y"));
        c.put("read", &json!(2), "r1", json!("z"));
        assert_eq!(c.len(), 2);
        assert_eq!(c.get("read", &json!({"a": 2, "b": 1}), "r1"), None);
    }
}
