//! What a turn cost: prices per model in US dollars per million tokens, from the config's
//! `[pricing."PROVIDER:MODEL"]` over a small built-in table of list prices (estimates, dated
//! `TABLE_DATE`), and the cost of a turn's usage at a price.
//!
//! It owns the price table and the arithmetic. It must never guess: a model with no price has
//! an unknown cost (`None`), never 0 (only the in-process `local` provider is free), and it
//! never reads the store or calls a provider.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::message::Usage;

/// When the built-in table's prices were the vendors' list prices.
pub(crate) const TABLE_DATE: &str = "2025-10";

/// `[pricing."PROVIDER:MODEL"]`: US dollars per million tokens. PROVIDER is a provider
/// instance name or kind; MODEL a model id, or `*` for every model of that provider.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PriceConfig {
    /// Input tokens read neither from nor into the prompt cache.
    pub(crate) input: f64,
    pub(crate) output: f64,
    /// Input tokens read from the prompt cache (default: the input price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cache_read: Option<f64>,
    /// Input tokens written to the prompt cache (default: the input price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cache_write: Option<f64>,
}

/// A model's prices, US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub(crate) input: f64,
    pub(crate) output: f64,
    pub(crate) cache_read: f64,
    pub(crate) cache_write: f64,
}

impl Price {
    const fn new(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Price {
        Price {
            input,
            output,
            cache_read,
            cache_write,
        }
    }

    /// The cost in US dollars of `usage`: uncached input, cache reads, cache writes and output,
    /// each at its price.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per(usage.uncached_input_tokens(), self.input)
            + per(usage.cache_read_tokens.unwrap_or(0), self.cache_read)
            + per(usage.cache_write_tokens.unwrap_or(0), self.cache_write)
            + per(usage.output_tokens, self.output)
    }
}

impl From<PriceConfig> for Price {
    fn from(c: PriceConfig) -> Price {
        Price::new(
            c.input,
            c.output,
            c.cache_read.unwrap_or(c.input),
            c.cache_write.unwrap_or(c.input),
        )
    }
}

/// A price and where it came from (for a turn's details).
#[derive(Debug, Clone, PartialEq)]
pub struct Priced {
    pub price: Price,
    /// `[pricing."anthropic:claude-sonnet-4-5"]`, or the built-in table and its date.
    pub(crate) source: PriceSource,
}

/// Where a price came from, written out only when a turn's details show it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PriceSource {
    /// The config's `[pricing."KEY"]`.
    Configured(String),
    /// The `local` kind.
    Local,
    /// The built-in table's row of this name.
    BuiltIn(&'static str),
}

impl std::fmt::Display for PriceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PriceSource::Configured(key) => write!(f, "[pricing.\"{key}\"]"),
            PriceSource::Local => f.write_str("a local model runs free"),
            PriceSource::BuiltIn(name) => {
                write!(f, "built-in estimate for {name} ({TABLE_DATE} list price)")
            }
        }
    }
}

/// Provider kinds whose built-in prices are the vendor's: Claude on Anthropic and Bedrock
/// (on-demand, same list price), OpenAI's models on OpenAI and Azure, Gemini.
const CLAUDE: &[&str] = &["anthropic", "bedrock"];
const OPENAI: &[&str] = &["openai", "azure-openai"];
const GEMINI: &[&str] = &["gemini"];

/// The built-in table: list prices for standard use (Anthropic's 5-minute cache writes,
/// prompts under 200k tokens), estimates as of [`TABLE_DATE`].
const TABLE: &[(&[&str], &str, Price)] = &[
    (
        CLAUDE,
        "claude-opus-4-1",
        Price::new(15.0, 75.0, 1.5, 18.75),
    ),
    (
        CLAUDE,
        "claude-sonnet-4-5",
        Price::new(3.0, 15.0, 0.3, 3.75),
    ),
    (CLAUDE, "claude-sonnet-4", Price::new(3.0, 15.0, 0.3, 3.75)),
    (CLAUDE, "claude-haiku-4-5", Price::new(1.0, 5.0, 0.1, 1.25)),
    (CLAUDE, "claude-3-5-haiku", Price::new(0.8, 4.0, 0.08, 1.0)),
    (OPENAI, "gpt-5", Price::new(1.25, 10.0, 0.125, 1.25)),
    (OPENAI, "gpt-5-mini", Price::new(0.25, 2.0, 0.025, 0.25)),
    (OPENAI, "gpt-4.1", Price::new(2.0, 8.0, 0.5, 2.0)),
    (OPENAI, "gpt-4.1-mini", Price::new(0.4, 1.6, 0.1, 0.4)),
    (OPENAI, "gpt-4o", Price::new(2.5, 10.0, 1.25, 2.5)),
    (OPENAI, "gpt-4o-mini", Price::new(0.15, 0.6, 0.075, 0.15)),
    (GEMINI, "gemini-2.5-pro", Price::new(1.25, 10.0, 0.31, 1.25)),
    (GEMINI, "gemini-2.5-flash", Price::new(0.3, 2.5, 0.075, 0.3)),
    // Embeddings: input only.
    (
        OPENAI,
        "text-embedding-3-small",
        Price::new(0.02, 0.0, 0.02, 0.02),
    ),
    (
        OPENAI,
        "text-embedding-3-large",
        Price::new(0.13, 0.0, 0.13, 0.13),
    ),
    (
        OPENAI,
        "text-embedding-ada-002",
        Price::new(0.1, 0.0, 0.1, 0.1),
    ),
    (
        GEMINI,
        "gemini-embedding-001",
        Price::new(0.15, 0.0, 0.15, 0.15),
    ),
];

/// A model id as the built-in table names it: a vendor prefix (`anthropic/...`, Bedrock's
/// `us.anthropic.`) and Bedrock's version suffix (`-v1:0`) removed.
fn table_name(model: &str) -> &str {
    let model = model.rsplit('/').next().unwrap_or(model);
    let model = match model.find("anthropic.") {
        Some(at) => &model[at + "anthropic.".len()..],
        None => model,
    };
    match model.rfind("-v") {
        Some(at) if model[at + 2..].contains(':') => &model[..at],
        _ => model,
    }
}

/// Whether `model` is the table's `name`, or `name` with a date (`-20250929`, `-2024-08-06`).
fn names(model: &str, name: &str) -> bool {
    match model.strip_prefix(name) {
        Some("") => true,
        Some(rest) => rest
            .strip_prefix('-')
            .is_some_and(|d| d.len() >= 4 && d.bytes().take(4).all(|b| b.is_ascii_digit())),
        None => false,
    }
}

/// The prices of the config over the built-in table.
#[derive(Debug, Clone, Default)]
pub(crate) struct Prices {
    configured: BTreeMap<String, Price>,
}

impl Prices {
    /// The config's `[pricing]`; checked: keys are `PROVIDER:MODEL`, prices finite and not
    /// negative.
    pub(crate) fn new(pricing: &BTreeMap<String, PriceConfig>) -> Result<Prices> {
        let mut configured = BTreeMap::new();
        for (key, c) in pricing {
            let bad =
                |why: &str| Error::new(ErrorKind::Config, format!("pricing.\"{key}\": {why}"));
            match key.split_once(':') {
                Some((p, m)) if !p.is_empty() && !m.is_empty() => {}
                _ => return Err(bad("name it PROVIDER:MODEL, such as \"anthropic:claude-sonnet-4-5\" or \"ollama:*\"")),
            }
            let all = [Some(c.input), Some(c.output), c.cache_read, c.cache_write];
            if all.iter().flatten().any(|p| !p.is_finite() || *p < 0.0) {
                return Err(bad("prices are US dollars per million tokens, 0 or more"));
            }
            configured.insert(key.clone(), Price::from(*c));
        }
        Ok(Prices { configured })
    }

    /// The price of `model` on provider instance `provider` of kind `kind`, the kind's own
    /// service ([`Prices::lookup_at`]).
    #[cfg(test)]
    pub(crate) fn lookup(&self, provider: &str, kind: &str, model: &str) -> Option<Priced> {
        self.lookup_at(provider, kind, model, true)
    }

    /// The price of `model` on provider instance `provider` of kind `kind`: the config's
    /// `provider:model`, `kind:model`, `provider:*`, `kind:*`, then the built-in table when
    /// `vendor` (the instance is the kind's own service, not another server speaking its API,
    /// whose models are not the vendor's); the `local` kind is free; else none.
    pub(crate) fn lookup_at(
        &self,
        provider: &str,
        kind: &str,
        model: &str,
        vendor: bool,
    ) -> Option<Priced> {
        // The config's keys, most particular first; none built when the config prices nothing
        // (every turn looks its price up).
        if !self.configured.is_empty() {
            let keys = [
                (provider, model),
                (kind, model),
                (provider, "*"),
                (kind, "*"),
            ];
            let mut key = String::new();
            for (owner, name) in keys {
                key.clear();
                key.push_str(owner);
                key.push(':');
                key.push_str(name);
                if let Some(price) = self.configured.get(&key) {
                    return Some(Priced {
                        price: *price,
                        source: PriceSource::Configured(key),
                    });
                }
            }
        }
        if kind == "local" {
            return Some(Priced {
                price: Price::new(0.0, 0.0, 0.0, 0.0),
                source: PriceSource::Local,
            });
        }
        if !vendor {
            return None;
        }
        let name = table_name(model);
        TABLE
            .iter()
            .filter(|(kinds, n, _)| kinds.contains(&kind) && names(name, n))
            .max_by_key(|(_, n, _)| n.len())
            .map(|(_, n, price)| Priced {
                price: *price,
                source: PriceSource::BuiltIn(n),
            })
    }
}

/// What one turn cost (US dollars, `None`: unknown) and the line of its details that says so
/// and why: the price's source, or what to set in the config.
pub(crate) fn turn_cost(
    priced: Option<&Priced>,
    usage: Option<&Usage>,
    provider: &str,
    model: &str,
) -> (Option<f64>, String) {
    match (priced, usage) {
        (_, None) => (None, "cost: unknown (the provider reported no usage)".into()),
        (None, Some(_)) => (
            None,
            format!(
                "cost: unknown (no price for {provider}:{model}: set [pricing.\"{provider}:{model}\"])"
            ),
        ),
        (Some(p), Some(u)) => {
            let cost = p.price.cost(u);
            (Some(cost), format!("cost: {} ({})", show(Some(cost)), p.source))
        }
    }
}

/// A cost in US dollars as people read it: `$0.0123`, `$1.20`, `unknown`.
pub fn show(cost: Option<f64>) -> String {
    match cost {
        None => "unknown".into(),
        Some(0.0) => "$0".into(),
        Some(c) if c < 0.01 => format!("${c:.6}"),
        Some(c) if c < 1.0 => format!("${c:.4}"),
        Some(c) => format!("${c:.2}"),
    }
}

#[cfg(test)]
#[path = "pricing_tests.rs"]
mod tests;
