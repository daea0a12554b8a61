//! Token usage and its cost in integer micro-USD.
//!
//! Usage is normalised so that the prompt's tokens split without overlap:
//! `input` counts tokens neither read from nor written to the prompt cache,
//! so the whole prompt is `input + cache_read + cache_write`. `reasoning` is
//! the part of `output` spent on hidden reasoning (already inside `output`).
//!
//! Cost is computed from a [`PriceTable`]; a model missing from the table has
//! no cost (`None`), never a cost of zero.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Characters per token in rein's local estimate (where no tokenizer is
/// known): one constant for the whole workspace.
pub const CHARS_PER_TOKEN: f64 = 3.5;

/// Tokens in `chars` characters (or bytes) of text, by the local estimate.
pub fn estimate_tokens_of(chars: u64) -> u64 {
    (chars as f64 / CHARS_PER_TOKEN) as u64
}

/// Tokens used by one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens neither read from nor written to the cache.
    pub input: u64,
    /// Output tokens (reasoning included).
    pub output: u64,
    /// Prompt tokens read from the cache.
    pub cache_read: u64,
    /// Prompt tokens written to the cache.
    pub cache_write: u64,
    /// Of `output`, the tokens spent on reasoning.
    pub reasoning: u64,
}

impl Usage {
    /// All prompt tokens: uncached, read from cache and written to cache.
    pub fn prompt_total(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }

    /// Add another call's usage to this one.
    pub fn accumulate(&mut self, other: &Usage) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_write = self.cache_write.saturating_add(other.cache_write);
        self.reasoning = self.reasoning.saturating_add(other.reasoning);
    }
}

/// A model's prices, in micro-USD per million tokens
/// (`$3.00 / MTok` is `3_000_000`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelPrice {
    /// Uncached prompt tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Prompt tokens read from the cache.
    pub cache_read: u64,
    /// Prompt tokens written to the cache.
    pub cache_write: u64,
}

impl ModelPrice {
    /// Prices in US dollars per million tokens, input and output; cached
    /// prompt tokens cost as input (set `cache_read` / `cache_write` for a
    /// provider that discounts them).
    pub fn usd_per_mtok(input: f64, output: f64) -> Self {
        let micro = |usd: f64| (usd.max(0.0) * 1_000_000.0).round() as u64;
        ModelPrice {
            input: micro(input),
            output: micro(output),
            cache_read: micro(input),
            cache_write: micro(input),
        }
    }

    /// Of [`ModelPrice::cost_micro_usd`], what `usage`'s reasoning tokens
    /// cost: they are billed as output (Anthropic and OpenAI alike).
    pub fn reasoning_cost_micro_usd(&self, usage: &Usage) -> u64 {
        let micro = (u128::from(usage.reasoning) * u128::from(self.output) + 500_000) / 1_000_000;
        u64::try_from(micro).unwrap_or(u64::MAX)
    }

    /// The cost of `usage` at these prices, in micro-USD, rounded half up.
    pub fn cost_micro_usd(&self, usage: &Usage) -> u64 {
        let parts = [
            (usage.input, self.input),
            (usage.output, self.output),
            (usage.cache_read, self.cache_read),
            (usage.cache_write, self.cache_write),
        ];
        let total: u128 = parts
            .iter()
            .map(|&(tokens, price)| u128::from(tokens) * u128::from(price))
            .sum();
        let micro = (total + 500_000) / 1_000_000;
        u64::try_from(micro).unwrap_or(u64::MAX)
    }
}

/// Prices by model name.
///
/// A lookup matches the exact name, else the longest entry that is a prefix
/// of the name followed by `-` (so `claude-sonnet-4-5-20250929` finds
/// `claude-sonnet-4-5`, and `gpt-4o-mini-2024-07-18` finds `gpt-4o-mini`
/// rather than `gpt-4o`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriceTable {
    /// Model name to prices.
    pub models: BTreeMap<String, ModelPrice>,
}

impl PriceTable {
    /// An empty table: every cost is unknown.
    pub fn empty() -> Self {
        PriceTable::default()
    }

    /// The list prices rein ships with (checked 2026-11; products should
    /// load their own with [`PriceTable::insert`] or serde).
    pub fn builtin() -> Self {
        const M: u64 = 1_000_000;
        let rows: [(&str, [u64; 4]); 10] = [
            // name, [input, output, cache_read, cache_write] in micro-USD / MTok
            ("claude-opus-4-1", [15 * M, 75 * M, 1_500_000, 18_750_000]),
            ("claude-sonnet-4-5", [3 * M, 15 * M, 300_000, 3_750_000]),
            ("claude-sonnet-4", [3 * M, 15 * M, 300_000, 3_750_000]),
            ("claude-haiku-4-5", [M, 5 * M, 100_000, 1_250_000]),
            ("gpt-4.1", [2 * M, 8 * M, 500_000, 2 * M]),
            ("gpt-4.1-mini", [400_000, 1_600_000, 100_000, 400_000]),
            ("gpt-4o", [2_500_000, 10 * M, 1_250_000, 2_500_000]),
            ("gpt-4o-mini", [150_000, 600_000, 75_000, 150_000]),
            ("gpt-5", [1_250_000, 10 * M, 125_000, 1_250_000]),
            ("gpt-5-mini", [250_000, 2 * M, 25_000, 250_000]),
        ];
        let mut table = PriceTable::empty();
        for (name, [input, output, cache_read, cache_write]) in rows {
            table.insert(
                name,
                ModelPrice {
                    input,
                    output,
                    cache_read,
                    cache_write,
                },
            );
        }
        table
    }

    /// This table with `model`'s prices added or replaced.
    pub fn with(mut self, model: impl Into<String>, price: ModelPrice) -> Self {
        self.insert(model, price);
        self
    }

    /// Add or replace a model's prices.
    pub fn insert(&mut self, model: impl Into<String>, price: ModelPrice) {
        self.models.insert(model.into(), price);
    }

    /// The prices for `model`, if known.
    pub fn price(&self, model: &str) -> Option<&ModelPrice> {
        if let Some(price) = self.models.get(model) {
            return Some(price);
        }
        self.models
            .iter()
            .filter(|(name, _)| {
                model.len() > name.len()
                    && model.starts_with(name.as_str())
                    && model.as_bytes()[name.len()] == b'-'
            })
            .max_by_key(|(name, _)| name.len())
            .map(|(_, price)| price)
    }

    /// The cost of `usage` on `model` in micro-USD; `None` when the model's
    /// prices are unknown.
    pub fn cost_micro_usd(&self, model: &str, usage: &Usage) -> Option<u64> {
        self.price(model).map(|p| p.cost_micro_usd(usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_price_in_dollars_per_million_tokens_costs_calls() {
        let table = PriceTable::empty().with("local", ModelPrice::usd_per_mtok(0.15, 0.6));
        let usage = Usage {
            input: 1_000_000,
            output: 500_000,
            ..Usage::default()
        };
        // $0.15 for the input, $0.30 for the output.
        assert_eq!(table.cost_micro_usd("local", &usage), Some(450_000));
        assert_eq!(table.cost_micro_usd("other", &usage), None);
    }

    #[test]
    fn cost_is_integer_micro_usd_and_unknown_is_absent() {
        let table = PriceTable::builtin();
        let usage = Usage {
            input: 1_000,
            output: 500,
            cache_read: 10_000,
            cache_write: 2_000,
            reasoning: 0,
        };
        // 1000*3 + 500*15 + 10000*0.3 + 2000*3.75 = 3000 + 7500 + 3000 + 7500
        assert_eq!(
            table.cost_micro_usd("claude-sonnet-4-5-20250929", &usage),
            Some(21_000)
        );
        assert_eq!(table.cost_micro_usd("no-such-model", &usage), None);
        assert_eq!(PriceTable::empty().cost_micro_usd("gpt-4o", &usage), None);
    }

    #[test]
    fn longest_prefix_wins() {
        let table = PriceTable::builtin();
        let mini = table.price("gpt-4o-mini-2024-07-18").map(|p| p.input);
        assert_eq!(mini, Some(150_000));
        let full = table.price("gpt-4o-2024-08-06").map(|p| p.input);
        assert_eq!(full, Some(2_500_000));
        assert!(table.price("gpt-4").is_none());
        assert!(table.price("gpt-4ox").is_none());
    }

    #[test]
    fn rounding_is_half_up() {
        let price = ModelPrice {
            input: 1_500_000,
            output: 0,
            cache_read: 0,
            cache_write: 0,
        };
        let one = Usage {
            input: 1,
            ..Usage::default()
        };
        assert_eq!(price.cost_micro_usd(&one), 2);
        assert_eq!(price.cost_micro_usd(&Usage::default()), 0);
    }
}
