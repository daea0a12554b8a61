//! A golden trace file (what `rein trace import` and the golden replay
//! read): any text is refused with a coded error or read, never a panic.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(text) = rein_fuzz::text(data) {
        let _ = rein_trace::golden::parse(text);
    }
});
