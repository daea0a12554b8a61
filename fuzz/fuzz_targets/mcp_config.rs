//! The `[mcp]` section of a config file: refused with a coded error or
//! read, never a panic.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(text) = rein_fuzz::text(data) {
        let _ = rein_mcp::McpConfig::parse(text);
    }
});
