//! Prompt caching for the formats that mark it by hand (`claude-messages` on Anthropic and on
//! Bedrock's InvokeModel, `bedrock-converse`): the `cache` and `cache_ttl` parameters, whether
//! a prompt is long enough to be worth a breakpoint, and where the breakpoints go.
//!
//! Breakpoints go on the last tool, on the system prompt, and on the conversation's prefix (the
//! last message before the new turn), each only when the prompt up to it is estimated at the
//! model's minimum cacheable length or more: a shorter one would not be cached and costs nothing
//! but a wasted breakpoint (the APIs allow four). OpenAI and Gemini cache by themselves: their
//! formats only report it. This module only adds markers to a body its format built, in that
//! format's shape; it must never build a body nor do I/O.

use serde_json::{json, Map, Value};

use super::{ParameterSpec, Parameters};

/// The parameter that turns prompt caching off (`false`); on when unset.
pub(crate) const CACHE: &str = "cache";
/// The parameter naming how long a cached prefix lives: `5m` or `1h` (sent as `ttl`).
pub(crate) const CACHE_TTL: &str = "cache_ttl";

pub(crate) const CACHE_SPEC: ParameterSpec = ParameterSpec::boolean(
    CACHE,
    "Prompt caching: breakpoints on the tools, the system prompt and the \
                  conversation so far when they are long enough (default true); false sends none.",
);

pub(crate) const CACHE_TTL_SPEC: ParameterSpec = ParameterSpec::one_of(
    CACHE_TTL,
    &["5m", "1h"],
    "How long a cached prompt prefix lives: 5m (the default) or 1h (dearer writes).",
);

/// Whether `name` is a caching setting (the formats keep these out of the body).
pub(crate) fn is_setting(name: &str) -> bool {
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
pub(crate) fn min_tokens(model: &str) -> u64 {
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
pub(crate) struct Caching {
    ttl: Option<String>,
    min_tokens: u64,
}

impl Caching {
    /// The request's caching, `None` when `cache = false`.
    pub(crate) fn of(model: &str, parameters: &Parameters) -> Option<Caching> {
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
    pub(crate) fn worth(&self, json_bytes: usize) -> bool {
        estimated_tokens(json_bytes) >= self.min_tokens
    }

    /// The marker with its `ttl` when set: Anthropic's `cache_control` (`type: ephemeral`),
    /// Converse's `cachePoint` (`type: default`).
    pub(crate) fn marker(&self, kind: &str) -> Value {
        let mut m = json!({ "type": kind });
        if let Some(ttl) = &self.ttl {
            m["ttl"] = Value::from(ttl.as_str());
        }
        m
    }
}

/// The length of the JSON text of `values` together.
pub(crate) fn json_len<'a>(values: impl IntoIterator<Item = &'a Value>) -> usize {
    values.into_iter().map(|v| v.to_string().len()).sum()
}

/// The index of the conversation's prefix: the last message before the new turn (the last
/// message), when there is one.
pub(crate) fn prefix_end(messages: &[Value]) -> Option<usize> {
    messages.len().checked_sub(2)
}

/// Puts `cache_control` breakpoints in a built Messages API body: on the last tool, on the
/// system prompt (then a list of one text block), and on the last block of the conversation's
/// prefix (not a thinking block, which cannot carry one), each when the prompt up to it is
/// long enough. The API caches in that order: tools, system, messages.
pub(crate) fn mark_claude(body: &mut Map<String, Value>, model: &str, parameters: &Parameters) {
    let Some(caching) = Caching::of(model, parameters) else {
        return;
    };
    let marker = caching.marker("ephemeral");
    let mut length = 0;
    if let Some(Value::Array(tools)) = body.get_mut("tools") {
        length += json_len(tools.iter());
        match tools.last_mut() {
            Some(Value::Object(last)) if caching.worth(length) => {
                last.insert("cache_control".into(), marker.clone());
            }
            _ => {}
        }
    }
    if let Some(Value::String(system)) = body.get("system") {
        length += system.len();
        if caching.worth(length) {
            let block = json!([{"type": "text", "text": system, "cache_control": marker}]);
            body.insert("system".into(), block);
        }
    }
    let Some(Value::Array(messages)) = body.get_mut("messages") else {
        return;
    };
    let Some(end) = prefix_end(messages) else {
        return;
    };
    length += json_len(&messages[..=end]);
    if !caching.worth(length) {
        return;
    }
    let content = &mut messages[end]["content"];
    if let Some(text) = content.as_str() {
        *content = json!([{"type": "text", "text": text}]);
    }
    let last = content.as_array_mut().and_then(|blocks| {
        blocks
            .iter_mut()
            .rev()
            .find(|b| !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
    });
    if let Some(block) = last {
        block["cache_control"] = marker;
    }
}

/// Whether the model takes Converse's cache points: Claude and Amazon Nova do; other models
/// refuse them.
fn takes_cache_points(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    m.contains("claude") || m.contains("anthropic.") || m.contains("nova")
}

/// Adds Converse `cachePoint` blocks after the tools, after the system prompt, and at
/// the end of the conversation's prefix (the last message before the new turn), each when the
/// prompt up to it is long enough, for the models that take them.
pub(crate) fn mark_converse(body: &mut Map<String, Value>, model: &str, parameters: &Parameters) {
    let Some(caching) = Caching::of(model, parameters).filter(|_| takes_cache_points(model)) else {
        return;
    };
    let point = json!({ "cachePoint": caching.marker("default") });
    let mut length = 0;
    if let Some(Value::Array(tools)) = body.get_mut("toolConfig").and_then(|t| t.get_mut("tools")) {
        length += json_len(tools.iter());
        if caching.worth(length) {
            tools.push(point.clone());
        }
    }
    if let Some(Value::Array(system)) = body.get_mut("system") {
        length += json_len(system.iter());
        if caching.worth(length) {
            system.push(point.clone());
        }
    }
    if let Some(Value::Array(messages)) = body.get_mut("messages") {
        if let Some(end) = prefix_end(messages) {
            length += json_len(&messages[..=end]);
            if let Some(content) = messages[end]["content"].as_array_mut() {
                if caching.worth(length) {
                    content.push(point);
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
