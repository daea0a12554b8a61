//! A `result` record: checked, counted, costed, and the turn it closes.
//!
//! Not here: which turn a record belongs to (`mod.rs`).

use rein_wire::Usage;
use serde_json::{Map, Value, json};

use super::ClaudeStream;
use crate::progress::{MAX_REASON_CHARS, MAX_VALUE_CHARS, clean, clean_value};
use crate::reducer::{MAX_COUNT, RefusalKind, TurnResult, count, micro_usd};

impl ClaudeStream {
    pub(super) fn take_result(&mut self, record: &Value) {
        let index = self.results;
        self.results += 1;
        let subtype = record.get("subtype").and_then(Value::as_str);
        let is_error = record.get("is_error").and_then(Value::as_bool);
        let mut last = Map::new();
        last.insert(
            "result_subtype".into(),
            json!(clean_value(record.get("subtype"), MAX_VALUE_CHARS)),
        );
        last.insert("is_error".into(), json!(is_error == Some(true)));
        for key in ["terminal_reason", "stop_reason"] {
            last.insert(
                key.into(),
                json!(clean_value(record.get(key), MAX_VALUE_CHARS)),
            );
        }
        let turn_duration = count(record.get("duration_ms"));
        self.num_turns = sum(self.num_turns, count(record.get("num_turns")));
        self.duration_ms = sum(self.duration_ms, turn_duration);
        let total = micro_usd(record.get("total_cost_usd"));
        let turn_cost = total.map(|t| t.saturating_sub(self.last_known_cost));
        if let Some(t) = total {
            self.last_known_cost = t;
        }
        self.last_total_cost = total;
        if let Some(denials) = record.get("permission_denials").and_then(Value::as_array) {
            last.insert("permission_denials".into(), json!(denials.len()));
            for denial in denials.iter().filter(|d| d.is_object()) {
                let name = denial
                    .get("tool_name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let detail = self.detail(&name, denial.get("tool_input"));
                let id = denial.get("tool_use_id").and_then(Value::as_str);
                self.core
                    .refuse(RefusalKind::Permission, id, &name, &detail);
            }
        }
        self.last = last;
        let result = record.get("result");
        let mut turn = TurnResult {
            index,
            model: self.model_of(index),
            usage: usage(record.get("usage")),
            cost_micro_usd: turn_cost,
            duration_ms: turn_duration,
            ..TurnResult::default()
        };
        let failed = if is_error == Some(true) {
            let mut facts = vec![format!("subtype {}", subtype.map_or("-", |s| s))];
            if let Some(reason) = record.get("terminal_reason").and_then(Value::as_str) {
                facts.push(format!("terminal_reason {reason}"));
            }
            if let Some(status) = count(record.get("api_error_status")) {
                facts.push(format!("api_error_status {status}"));
            }
            let excerpt = clean_value(result, MAX_VALUE_CHARS * 2);
            let mut reason = format!("claude: the run ended in an error ({})", facts.join(", "));
            if !excerpt.is_empty() {
                reason.push_str(": ");
                reason.push_str(&excerpt);
            }
            Some(reason)
        } else if is_error.is_none() {
            Some("claude: stream-json protocol violation: the result event has no boolean 'is_error'".to_owned())
        } else if subtype != Some("success") {
            Some(format!(
                "claude: the run did not succeed (subtype {})",
                clean(subtype.unwrap_or("-"), 60)
            ))
        } else if let Some(text) = result.and_then(Value::as_str) {
            turn.text = Some(text.to_owned());
            if self.core.failure.is_none() {
                self.core.text = Some(text.to_owned());
            }
            None
        } else {
            Some(
                "claude: stream-json protocol violation: the result event has no string 'result'"
                    .to_owned(),
            )
        };
        if let Some(reason) = failed {
            self.core.fail(&reason);
            turn.failure = Some(clean(&reason, MAX_REASON_CHARS));
        }
        self.core.close_turn(turn);
    }
}

/// Two partial sums: unknown once either part is.
fn sum(total: Option<u64>, part: Option<u64>) -> Option<u64> {
    Some(total?.saturating_add(part?).min(MAX_COUNT))
}

/// A result's `usage` in rein's terms, when it has one.
fn usage(value: Option<&Value>) -> Option<Usage> {
    let value = value.filter(|v| v.is_object())?;
    Some(Usage {
        input: count(value.get("input_tokens")).unwrap_or(0),
        output: count(value.get("output_tokens")).unwrap_or(0),
        cache_read: count(value.get("cache_read_input_tokens")).unwrap_or(0),
        cache_write: count(value.get("cache_creation_input_tokens")).unwrap_or(0),
        reasoning: 0,
    })
}
