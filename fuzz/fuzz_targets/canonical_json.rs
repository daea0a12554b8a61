//! Canonical JSON (what digests and golden traces hash): any text is
//! refused or canonicalised, and the canonical form is a fixed point.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some(text) = rein_fuzz::text(data) else {
        return;
    };
    if let Ok(canonical) = rein_wire::canonical::canonicalize_str(text) {
        let again = rein_wire::canonical::canonicalize_str(&canonical);
        assert_eq!(again.as_deref().ok(), Some(canonical.as_str()));
    }
});
