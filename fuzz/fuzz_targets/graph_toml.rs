//! A task graph's TOML (`rein run GRAPH.toml`): refused with a coded error
//! or read and checked, never a panic.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(text) = rein_fuzz::text(data)
        && let Ok(spec) = rein_orchestrator::GraphSpec::from_toml(text)
    {
        let _ = spec.check();
    }
});
