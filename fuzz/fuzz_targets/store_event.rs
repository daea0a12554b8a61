//! The store's event decoder: a stored kind, version and data (a log
//! written by another rein, or tampered with) become an event without a
//! panic, and an event rebuilt from its own parts is the same event —
//! nothing is lost on the way through the store.
//!
//! Input: the kind on the first line, the version on the second, the data
//! (JSON) after.

#![no_main]

use rein_sessions::Event;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some(text) = rein_fuzz::text(data) else {
        return;
    };
    let mut parts = text.splitn(3, '\n');
    let (Some(kind), Some(version), Some(json)) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    let Ok(version) = version.trim().parse::<u32>() else {
        return;
    };
    let Ok(value) = serde_json::from_str(json) else {
        return;
    };
    let event = Event::from_parts(kind, version, value);
    let again = Event::from_parts(event.kind(), event.version(), event.data());
    assert_eq!(event, again);
});
