//! The cache monitor's verdicts and the breakpoint planner.

use rein_cache::{CacheMonitor, Verdict, fingerprint, plan};
use rein_wire::{CacheTarget, Message, Request, SystemBlock, ToolSpec, Usage};
use rein_wire::{CachingStyle, Capabilities};

fn usage(input: u64, cache_read: u64, cache_write: u64) -> Usage {
    Usage {
        input,
        output: 10,
        cache_read,
        cache_write,
        reasoning: 0,
    }
}

#[test]
fn verdicts_follow_the_rules() {
    let mut m = CacheMonitor::new();
    // First call: cold (it writes the prefix).
    assert_eq!(
        m.observe("fp", 1000, &usage(50, 0, 1000), false),
        Verdict::Cold
    );
    // A warm call reading the prefix: hit (bar 0.9 * 0.7 * 1000 = 630 before any reported size).
    assert_eq!(
        m.observe("fp", 1000, &usage(50, 700, 0), true),
        Verdict::Hit
    );
    // Reading too little: miss, warned once.
    assert_eq!(
        m.observe("fp", 1000, &usage(900, 100, 0), true),
        Verdict::Miss
    );
    assert_eq!(
        m.observe("fp", 1000, &usage(900, 0, 0), true),
        Verdict::Miss
    );
    assert_eq!(
        m.warnings(),
        1,
        "a miss is logged once per prefix, then counted"
    );
    assert_eq!(m.counts[&Verdict::Miss], 2);
    // Reads of the chat template's opening only (<= 32 tokens) count as nothing.
    let mut t = CacheMonitor::new();
    assert_eq!(
        t.observe("p", 2000, &usage(2000, 16, 0), false),
        Verdict::Cold
    );
    assert_eq!(
        t.observe("p", 2000, &usage(2000, 32, 0), true),
        Verdict::Uncached,
        "template tokens are not a cache"
    );
    assert_eq!(
        t.observe("p", 2000, &usage(2000, 0, 0), true),
        Verdict::Uncached
    );
    // A provider that never caches: uncached, not a miss.
    let mut u = CacheMonitor::new();
    u.observe("q", 500, &usage(500, 0, 0), false);
    assert_eq!(
        u.observe("q", 500, &usage(600, 0, 0), true),
        Verdict::Uncached
    );
    assert_eq!(u.warnings(), 0);
}

#[test]
fn the_first_reported_read_replaces_the_estimate_as_the_bar() {
    let mut m = CacheMonitor::new();
    // The estimate says 1000 tokens, but the provider reads 400 on a first
    // (not warm) call of another worker: 400 becomes the bar.
    assert_eq!(
        m.observe("fp", 1000, &usage(100, 400, 0), false),
        Verdict::Cold
    );
    // 0.9 * 400 = 360: reading 370 is a hit though far under the estimate's bar (630).
    assert_eq!(
        m.observe("fp", 1000, &usage(100, 370, 0), true),
        Verdict::Hit
    );
    assert_eq!(
        m.observe("fp", 1000, &usage(100, 300, 0), true),
        Verdict::Miss
    );
    let share = m.read_share();
    assert!((share - (1070.0 / 1370.0)).abs() < 1e-9, "{share}");
}

#[test]
fn anthropic_gets_at_most_four_breakpoints_and_openai_a_cache_key() {
    let mut r = Request::new(
        "m",
        vec![
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
            Message::assistant("d"),
            Message::user("e"),
        ],
    );
    r.system = vec![SystemBlock { text: "s".into() }];
    r.tools = vec![ToolSpec {
        name: "t".into(),
        description: "d".into(),
        input_schema: serde_json_object(),
        strict: false,
    }];
    let explicit = Capabilities {
        caching: CachingStyle::Explicit,
        max_cache_breakpoints: 4,
        context_window: 1,
        structured_output: false,
        token_counting: false,
    };
    plan(&mut r, &explicit);
    let targets: Vec<CacheTarget> = r.cache_breakpoints.iter().map(|b| b.target).collect();
    assert_eq!(
        targets,
        [
            CacheTarget::Tools,
            CacheTarget::Message { index: 2 },
            CacheTarget::Message { index: 4 }
        ]
    );
    let mut no_tools = r.clone();
    no_tools.tools.clear();
    plan(&mut no_tools, &explicit);
    assert_eq!(
        no_tools.cache_breakpoints[0].target,
        CacheTarget::System { index: 0 }
    );
    let automatic = Capabilities {
        caching: CachingStyle::Automatic,
        max_cache_breakpoints: 0,
        ..explicit
    };
    let mut o = r.clone();
    plan(&mut o, &automatic);
    assert!(o.cache_breakpoints.is_empty());
    assert_eq!(
        o.metadata.prompt_cache_key.as_deref(),
        Some(fingerprint(&o.system, &o.tools).as_str())
    );
    assert_eq!(fingerprint(&o.system, &o.tools).len(), 16);
}

fn serde_json_object() -> serde_json::Value {
    serde_json::json!({"type": "object"})
}
