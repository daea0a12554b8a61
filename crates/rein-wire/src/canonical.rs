//! Canonical JSON (RFC 8785, the JSON Canonicalization Scheme).
//!
//! Canonical bytes are what rein hashes and compares: prefix fingerprints,
//! tool-result cache keys, golden traces. Two values that are equal as JSON
//! have the same canonical bytes, whatever their key order or number
//! spelling. The scheme itself is `serde_json_canonicalizer`'s; this module
//! only fixes how rein calls it.

use serde::Serialize;
use serde_json::Value;

use crate::error::{AgentError, codes};

/// The canonical JSON text of `value`.
pub fn to_string<T: Serialize>(value: &T) -> Result<String, AgentError> {
    serde_json_canonicalizer::to_string(value).map_err(|err| {
        AgentError::new(
            codes::INVALID_INPUT,
            format!("value cannot be written as canonical JSON: {err}"),
        )
    })
}

/// The canonical JSON bytes of `value`.
pub fn to_vec<T: Serialize>(value: &T) -> Result<Vec<u8>, AgentError> {
    to_string(value).map(String::into_bytes)
}

/// Canonicalise JSON text: parse it and write it back canonically.
pub fn canonicalize_str(json: &str) -> Result<String, AgentError> {
    let value: Value = serde_json::from_str(json)
        .map_err(|err| AgentError::new(codes::INVALID_INPUT, format!("not valid JSON: {err}")))?;
    to_string(&value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn sorts_keys_and_normalises_numbers() {
        let v = json!({"b": 1.0, "a": [1e2, "x\u{2028}"], "c": {"z": null, "y": true}});
        assert_eq!(
            to_string(&v).ok().as_deref(),
            Some("{\"a\":[100,\"x\u{2028}\"],\"b\":1,\"c\":{\"y\":true,\"z\":null}}")
        );
    }

    #[test]
    fn rfc8785_escapes() {
        let v = json!({"s": "\u{0}\u{1f}\"\\/é\u{7f}"});
        assert_eq!(
            to_string(&v).ok().as_deref(),
            Some("{\"s\":\"\\u0000\\u001f\\\"\\\\/é\u{7f}\"}")
        );
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            (-1.0e15f64..1.0e15).prop_map(|f| json!(f)),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(".{0,8}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn canonical_text_parses_back_to_an_equal_value(v in arb_json()) {
            let text = to_string(&v).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let back: Value = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
            // Numbers may change spelling (1.0 -> 1) but not value.
            prop_assert_eq!(to_string(&back).ok(), Some(text));
        }

        #[test]
        fn canonicalisation_is_idempotent(v in arb_json()) {
            let once = to_string(&v).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let twice = canonicalize_str(&once).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(once, twice);
        }

        #[test]
        fn key_order_does_not_matter(pairs in prop::collection::btree_map("[a-z]{1,6}", any::<i32>(), 0..10)) {
            let forward: serde_json::Map<String, Value> =
                pairs.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            let mut reversed_text = String::from("{");
            for (i, (k, v)) in pairs.iter().rev().enumerate() {
                if i > 0 { reversed_text.push(','); }
                reversed_text.push_str(&format!("{}:{}", json!(k), v));
            }
            reversed_text.push('}');
            let a = to_string(&Value::Object(forward)).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let b = canonicalize_str(&reversed_text).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(a, b);
        }
    }
}
