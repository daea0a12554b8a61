//! A config file as every part reads it: the schema check (its line and
//! field found from the parser's byte span), the agent definitions merged
//! into the default agent and each named one, and the hosted agents.
//! Refused with a reason or read, never a panic.

#![no_main]

use rein_config::{AgentSpec, Loaded, Source};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some(text) = rein_fuzz::text(data) else {
        return;
    };
    let _ = rein_host::config::AgentsConfig::parse(text);
    if let Err((line, _)) = rein_config::check(text) {
        assert!(
            line >= 1 && line <= text.lines().count().max(1) + 1,
            "line {line}"
        );
    }
    let Ok(table) = toml::from_str::<toml::Table>(text) else {
        return;
    };
    let mut loaded = Loaded::default();
    loaded.apply(table, &Source::Default);
    let _ = loaded.agent(None, &AgentSpec::default());
    if let Ok(agents) = loaded.agents() {
        for name in agents.keys() {
            let _ = loaded.agent(Some(name), &AgentSpec::default());
        }
    }
});
