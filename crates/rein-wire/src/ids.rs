//! Sortable ids (UUIDv7): later ids sort after earlier ones, so logs and
//! listings order by creation without a separate timestamp.

use uuid::Uuid;

/// A new time-ordered id, as its hyphenated text.
pub fn new_id() -> String {
    Uuid::now_v7().to_string()
}

/// A new time-ordered id with a short kind prefix (`call_…`, `ses_…`).
pub fn new_prefixed(prefix: &str) -> String {
    format!("{prefix}_{}", Uuid::now_v7().simple())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_by_creation() {
        let ids: Vec<String> = (0..1000).map(|_| new_id()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        let prefixed = new_prefixed("call");
        assert!(prefixed.starts_with("call_"));
        assert_eq!(prefixed.len(), 5 + 32);
    }
}
