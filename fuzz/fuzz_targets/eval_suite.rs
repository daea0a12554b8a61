//! An eval suite file (TOML, and JSON when the first byte is odd): refused
//! with its reason or read and checked, never a panic.

#![no_main]

use std::path::Path;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else {
        return;
    };
    let Some(text) = rein_fuzz::text(rest) else {
        return;
    };
    let path = if kind % 2 == 1 {
        "suite.json"
    } else {
        "suite.toml"
    };
    let _ = rein_eval::parse(text, Path::new(path));
});
