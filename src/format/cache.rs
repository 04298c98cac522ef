//! Prompt caching for the formats that mark it by hand (`claude-messages` on Anthropic and on
//! Bedrock's InvokeModel, `bedrock-converse`): the `cache` and `cache_ttl` parameters, whether
//! a prompt is long enough to be worth a breakpoint, and where the breakpoints go.
//!
//! Breakpoints go on the last tool, on the system prompt, and on the conversation's prefix (the
//! last message before the new turn), each only when the prompt up to it is estimated at the
//! model's minimum cacheable length or more: a shorter one would not be cached and costs nothing
//! but a wasted breakpoint (the APIs allow four). OpenAI and Gemini cache by themselves: their
//! formats only report it. This module builds no body and must never do I/O; each format places
//! the markers in its own shape.

use serde_json::{json, Value};

use super::{ParameterSpec, ParameterType, Parameters};

/// The parameter that turns prompt caching off (`false`); on when unset.
pub const CACHE: &str = "cache";
/// The parameter naming how long a cached prefix lives: `5m` or `1h` (sent as `ttl`).
pub const CACHE_TTL: &str = "cache_ttl";

pub const CACHE_SPEC: ParameterSpec = ParameterSpec {
    name: CACHE,
    kind: ParameterType::Boolean,
    description: "Prompt caching: breakpoints on the tools, the system prompt and the \
                  conversation so far when they are long enough (default true); false sends none.",
};

pub const CACHE_TTL_SPEC: ParameterSpec = ParameterSpec {
    name: CACHE_TTL,
    kind: ParameterType::OneOf {
        values: &["5m", "1h"],
    },
    description: "How long a cached prompt prefix lives: 5m (the default) or 1h (dearer writes).",
};

/// Whether `name` is a caching setting (the formats keep these out of the body).
pub fn is_setting(name: &str) -> bool {
    name == CACHE || name == CACHE_TTL
}

/// Tokens estimated from the length of the JSON text that carries them: about 4 characters per
/// token, the usual rule of thumb for English prose and code with Claude's and OpenAI's
/// tokenizers. Counting UTF-8 bytes keeps it from undercounting scripts whose characters are
/// tokens of their own (a CJK character is 3 bytes); the JSON punctuation around the text
/// counts too. It is an estimate: a breakpoint below the real minimum is only ignored.
pub fn estimated_tokens(json_bytes: usize) -> u64 {
    json_bytes as u64 / 4
}

/// The fewest tokens a cached prefix may have on this model (Anthropic's documented minimums:
/// 4096 for Claude Opus 4.5 and Haiku 4.5, 2048 for the older Haiku models, 1024 for the
/// rest; Amazon Nova also 1024).
pub fn min_tokens(model: &str) -> u64 {
    let m = model.to_ascii_lowercase();
    if m.contains("opus-4-5") || m.contains("haiku-4-5") || m.contains("opus-4-6") {
        4096
    } else if m.contains("haiku") {
        2048
    } else {
        1024
    }
}

/// Caching as one request asks it: on, with a TTL when one is set, for this model's minimum.
#[derive(Debug, Clone, PartialEq)]
pub struct Caching {
    ttl: Option<String>,
    min_tokens: u64,
}

impl Caching {
    /// The request's caching, `None` when `cache = false`.
    pub fn of(model: &str, parameters: &Parameters) -> Option<Caching> {
        if parameters.get(CACHE) == Some(&Value::Bool(false)) {
            return None;
        }
        Some(Caching {
            ttl: parameters
                .get(CACHE_TTL)
                .and_then(Value::as_str)
                .map(str::to_string),
            min_tokens: min_tokens(model),
        })
    }

    /// Whether a prefix of `json_bytes` is long enough to cache.
    pub fn worth(&self, json_bytes: usize) -> bool {
        estimated_tokens(json_bytes) >= self.min_tokens
    }

    /// The marker with its `ttl` when set: Anthropic's `cache_control` (`type: ephemeral`),
    /// Converse's `cachePoint` (`type: default`).
    pub fn marker(&self, kind: &str) -> Value {
        let mut m = json!({ "type": kind });
        if let Some(ttl) = &self.ttl {
            m["ttl"] = Value::from(ttl.as_str());
        }
        m
    }
}

/// The length of the JSON text of `values` together.
pub fn json_len<'a>(values: impl IntoIterator<Item = &'a Value>) -> usize {
    values.into_iter().map(|v| v.to_string().len()).sum()
}

/// The index of the conversation's prefix: the last message before the new turn (the last
/// message), when there is one.
pub fn prefix_end(messages: &[Value]) -> Option<usize> {
    messages.len().checked_sub(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caching_is_on_unless_turned_off_and_keeps_its_ttl() {
        let mut p = Parameters::new();
        let c = Caching::of("claude-sonnet-4-5", &p).unwrap();
        assert_eq!(c.marker("ephemeral"), json!({"type": "ephemeral"}));
        assert!(!c.worth(4 * 1023) && c.worth(4 * 1024));
        p.insert(CACHE_TTL.into(), json!("1h"));
        let c = Caching::of("us.anthropic.claude-haiku-4-5-20251001-v1:0", &p).unwrap();
        assert_eq!(c.marker("default"), json!({"type": "default", "ttl": "1h"}));
        assert!(
            !c.worth(4 * 4095) && c.worth(4 * 4096),
            "Haiku 4.5 needs 4096"
        );
        assert_eq!(min_tokens("claude-3-5-haiku-latest"), 2048);
        p.insert(CACHE.into(), json!(false));
        assert!(Caching::of("claude-sonnet-4-5", &p).is_none());
        assert!(is_setting("cache_ttl") && !is_setting("temperature"));
    }
}
