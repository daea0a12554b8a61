//! Prompt-cache planning: keep the prefix stable, mark it, and check that
//! the provider really reads it.
//!
//! A prompt cache pays only while the prefix (system blocks and tools) is
//! byte-identical. A silent change — a timestamp, an unsorted map, a
//! reordered tool list — multiplies the cost of every later call without
//! failing anything. So:
//! - [`fingerprint`] names a prefix: blake3 over its canonical JSON, 16 hex
//!   characters.
//! - [`plan`] places breakpoints per provider: Anthropic gets
//!   `cache_control` at the end of the stable prefix and rolling breakpoints
//!   on the two most recent user messages (never more than four); OpenAI
//!   gets a `prompt_cache_key` (the fingerprint) so requests reach the same
//!   cache.
//! - [`CacheMonitor`] gives every call a [`Verdict`]: `cold`, `hit`, `miss`
//!   or `uncached`.
//!
//! It does not decide what goes into the prefix; `rein-runner` freezes that
//! at the start of a conversation.

use std::collections::{BTreeMap, HashMap, HashSet};

use rein_wire::{CacheBreakpoint, CacheTarget, Request, Role, SystemBlock, ToolSpec, Usage};
use rein_wire::{CachingStyle, Capabilities};

/// Characters per token of the local estimate.
pub use rein_wire::CHARS_PER_TOKEN;
/// Share of the expected prefix a warm call must read from cache.
pub const HIT_SHARE: f64 = 0.9;
/// How far below the characters-based estimate a prefix's real token count
/// may be, before any provider-reported size is known.
pub const ESTIMATE_SLACK: f64 = 0.7;
/// Cached tokens at or under this are a chat template's opening (some
/// engines report it on every call), not a cached prefix.
pub const TEMPLATE_TOKENS: u64 = 32;

/// The prefix's canonical bytes.
pub fn prefix_bytes(system: &[SystemBlock], tools: &[ToolSpec]) -> Vec<u8> {
    rein_wire::canonical::to_vec(&(system, tools)).unwrap_or_default()
}

/// The prefix fingerprint: blake3 over the canonical system blocks and
/// tools, 16 hex characters.
pub fn fingerprint(system: &[SystemBlock], tools: &[ToolSpec]) -> String {
    PrefixFacts::of(system, tools).fingerprint
}

/// The prefix's size in tokens by the local estimate.
pub fn estimate_tokens(system: &[SystemBlock], tools: &[ToolSpec]) -> u64 {
    PrefixFacts::of(system, tools).tokens
}

/// What a request's prefix is, from one pass over its canonical bytes: a
/// prefix frozen for a conversation is measured once, not every step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixFacts {
    /// See [`fingerprint`].
    pub fingerprint: String,
    /// See [`estimate_tokens`].
    pub tokens: u64,
}

impl PrefixFacts {
    /// The facts of the prefix of `system` and `tools`.
    pub fn of(system: &[SystemBlock], tools: &[ToolSpec]) -> PrefixFacts {
        let bytes = prefix_bytes(system, tools);
        PrefixFacts {
            fingerprint: blake3::hash(&bytes).to_hex()[..16].to_owned(),
            tokens: (bytes.len() as f64 / CHARS_PER_TOKEN) as u64,
        }
    }
}

/// Place breakpoints (or the cache key) on `request` for a provider that
/// can do `caps`. Replaces any breakpoints already there.
pub fn plan(request: &mut Request, caps: &Capabilities) {
    let key = matches!(caps.caching, CachingStyle::Automatic)
        .then(|| fingerprint(&request.system, &request.tools));
    place(request, caps, key);
}

/// [`plan`] for a request whose prefix's facts are known (`prefix` must be
/// its own: the key is its fingerprint).
pub fn plan_with(request: &mut Request, caps: &Capabilities, prefix: &PrefixFacts) {
    debug_assert_eq!(*prefix, PrefixFacts::of(&request.system, &request.tools));
    place(request, caps, Some(prefix.fingerprint.clone()));
}

fn place(request: &mut Request, caps: &Capabilities, key: Option<String>) {
    request.cache_breakpoints.clear();
    match caps.caching {
        CachingStyle::Explicit => {
            let max = caps.max_cache_breakpoints.min(4);
            let mut targets = Vec::new();
            // The end of the stable prefix: tools come after the system in
            // the Anthropic request, so the last tool closes the prefix.
            if !request.tools.is_empty() {
                targets.push(CacheTarget::Tools);
            } else if !request.system.is_empty() {
                targets.push(CacheTarget::System {
                    index: request.system.len() - 1,
                });
            }
            // Rolling breakpoints: the two most recent user messages, so a
            // turn reads what the previous step wrote.
            let users: Vec<usize> = request
                .messages
                .iter()
                .enumerate()
                .filter(|(_, m)| m.role == Role::User)
                .map(|(i, _)| i)
                .collect();
            for index in users.iter().rev().take(2).rev() {
                targets.push(CacheTarget::Message { index: *index });
            }
            request.cache_breakpoints = targets
                .into_iter()
                .take(max)
                .map(|target| CacheBreakpoint { target })
                .collect();
        }
        CachingStyle::Automatic => {
            request.metadata.prompt_cache_key = key;
        }
        CachingStyle::None => {}
    }
}

/// What a call did with the prompt cache (the log's word for it).
pub use rein_wire::CacheVerdict as Verdict;

/// Gives every model call a verdict, and warns once per prefix on a miss.
#[derive(Debug, Default, Clone)]
pub struct CacheMonitor {
    seen: HashSet<String>,
    /// Verdicts so far.
    pub counts: BTreeMap<Verdict, u64>,
    /// Usage so far.
    pub usage: Usage,
    /// Per prefix: the size the provider reported reading on a first call.
    cached: HashMap<String, u64>,
    /// Prefixes the provider has reported reading or writing anything for.
    caching: HashSet<String>,
    /// Prefixes a miss was already logged for.
    warned: HashSet<String>,
}

impl CacheMonitor {
    /// A fresh monitor.
    pub fn new() -> Self {
        CacheMonitor::default()
    }

    /// The verdict of one call on prefix `fp` (estimated `prefix_tokens`)
    /// that used `usage`. `warm`: not the first call of this conversation.
    pub fn observe(&mut self, fp: &str, prefix_tokens: u64, usage: &Usage, warm: bool) -> Verdict {
        self.usage.accumulate(usage);
        let read = if usage.cache_read > TEMPLATE_TOKENS {
            usage.cache_read
        } else {
            0
        };
        let wrote = if usage.cache_write > TEMPLATE_TOKENS {
            usage.cache_write
        } else {
            0
        };
        let known = !self.seen.insert(fp.to_owned());
        let reported = self.cached.get(fp).copied().unwrap_or(0);
        let mut bar = if reported > 0 {
            HIT_SHARE * reported.min(prefix_tokens) as f64
        } else {
            HIT_SHARE * ESTIMATE_SLACK * prefix_tokens as f64
        };
        bar = bar.min(HIT_SHARE * usage.prompt_total().max(1) as f64);
        let verdict = if !warm && !known {
            Verdict::Cold
        } else if read > 0 && read as f64 >= bar {
            Verdict::Hit
        } else if !self.caching.contains(fp) && read == 0 && wrote == 0 {
            if self.counts.get(&Verdict::Uncached).copied().unwrap_or(0) == 0 {
                tracing::info!(
                    prefix = fp,
                    "prompt caching not reported on this prefix: the provider wrote and read nothing"
                );
            }
            Verdict::Uncached
        } else {
            if self.warned.insert(fp.to_owned()) {
                tracing::warn!(
                    prefix = fp,
                    read = usage.cache_read,
                    expected = if reported > 0 {
                        reported
                    } else {
                        prefix_tokens
                    },
                    "prompt-cache miss (further misses on this prefix are counted, not logged)"
                );
            }
            Verdict::Miss
        };
        if read > 0 || wrote > 0 {
            self.caching.insert(fp.to_owned());
        }
        if read > 0 && !warm {
            self.cached.insert(fp.to_owned(), reported.max(read));
        }
        *self.counts.entry(verdict).or_default() += 1;
        verdict
    }

    /// Model calls observed so far.
    pub fn calls(&self) -> u64 {
        self.counts.values().sum()
    }

    /// Cache-read tokens over all prompt tokens so far.
    pub fn read_share(&self) -> f64 {
        let total = self.usage.prompt_total();
        if total == 0 {
            0.0
        } else {
            self.usage.cache_read as f64 / total as f64
        }
    }

    /// How many misses were logged (at most one per prefix).
    pub fn warnings(&self) -> usize {
        self.warned.len()
    }
}

/// The README's snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
