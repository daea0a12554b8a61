//! The one wall clock rein records times with: milliseconds since the Unix
//! epoch. One function, so every crate stamps events, leases and inbox
//! items alike (and a test clock, when one is needed, has one place to go).

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
