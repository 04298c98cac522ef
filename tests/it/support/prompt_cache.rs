//! A provider's prompt cache as the fakes keep it: a request's prompt is a list of blocks in the
//! order the API caches them (tools, system, messages); a block marked as a breakpoint writes
//! the prefix that ends with it, and a later request whose prompt starts with a written prefix
//! reads it. Tokens are words, as everywhere in the fakes. No minimum length: the fakes cache
//! what they are told to (the product decides when a prompt is long enough). Also what the
//! Messages API refuses of `cache_control` markers.

use std::collections::HashSet;
use std::sync::Mutex;

use serde_json::Value;

use super::http1::count_words;

/// One block of a prompt: its text without the cache marker, its words, and whether it is a
/// breakpoint.
pub struct Block {
    key: String,
    words: u64,
    breakpoint: bool,
}

/// The prefixes written so far, by their text.
#[derive(Default)]
pub struct PromptCache {
    prefixes: Mutex<HashSet<String>>,
}

impl PromptCache {
    /// Serves one prompt: (words read from the cache, words written to it). Reads the longest
    /// written prefix; writes every breakpoint's prefix, counting the words past what was read.
    pub fn serve(&self, blocks: &[Block]) -> (u64, u64) {
        let mut prefixes = self.prefixes.lock().unwrap_or_else(|e| e.into_inner());
        let mut key = String::new();
        let (mut words, mut read, mut written_to) = (0, 0, 0);
        let mut ends = Vec::new();
        for b in blocks {
            key.push_str(&b.key);
            key.push('\u{1}');
            words += b.words;
            if prefixes.contains(&key) {
                read = words;
            }
            if b.breakpoint {
                written_to = words;
                ends.push(key.clone());
            }
        }
        prefixes.extend(ends);
        (read, written_to.saturating_sub(read))
    }
}

/// The words of every `text` in a JSON value.
fn words(v: &Value) -> u64 {
    match v {
        Value::String(_) => 0,
        Value::Array(items) => items.iter().map(words).sum(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match (k.as_str(), v) {
                ("text", Value::String(t)) => count_words(t),
                _ => words(v),
            })
            .sum(),
        _ => 0,
    }
}

fn block(mut v: Value, marker: &str) -> Block {
    let breakpoint = v.as_object_mut().and_then(|o| o.remove(marker)).is_some();
    Block {
        words: words(&v),
        key: v.to_string(),
        breakpoint,
    }
}

/// A Messages API body's blocks: tools, system (a string or text blocks), then each message's
/// content (a string is one text block); `cache_control` marks breakpoints.
pub fn claude_blocks(body: &Value) -> Vec<Block> {
    let text = |t: &str| serde_json::json!({"type": "text", "text": t});
    let list = |v: &Value| -> Vec<Value> {
        match v {
            Value::String(s) => vec![text(s)],
            Value::Array(items) => items.clone(),
            _ => Vec::new(),
        }
    };
    let mut out: Vec<Block> = list(&body["tools"])
        .into_iter()
        .chain(list(&body["system"]))
        .map(|b| block(b, "cache_control"))
        .collect();
    for m in body["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or_default();
        for b in list(&m["content"]) {
            let mut b = block(b, "cache_control");
            b.key = format!("{role}:{}", b.key);
            out.push(b);
        }
    }
    out
}

/// A Converse body's blocks: `toolConfig.tools`, `system`, then each message's content; a
/// `cachePoint` block marks the block before it as a breakpoint.
pub fn converse_blocks(body: &Value) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let lists = [
        ("tools", &body["toolConfig"]["tools"]),
        ("system", &body["system"]),
    ];
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let all = lists
        .into_iter()
        .map(|(n, v)| (n.to_string(), v.clone()))
        .chain(messages.iter().map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_string(),
                m["content"].clone(),
            )
        }));
    for (role, items) in all {
        for b in items.as_array().into_iter().flatten() {
            if b.get("cachePoint").is_some() {
                if let Some(last) = out.last_mut() {
                    last.breakpoint = true;
                }
                continue;
            }
            let mut b = block(b.clone(), "");
            b.key = format!("{role}:{}", b.key);
            out.push(b);
        }
    }
    out
}

/// What the API refuses of `cache_control` markers: more than four, a type other than
/// `ephemeral`, a `ttl` other than `5m` or `1h`, one on a thinking block, or a system prompt
/// given as blocks that are not text.
pub fn check_cache_control(body: &Value) -> Option<String> {
    let system = body["system"].as_array().cloned().unwrap_or_default();
    if system
        .iter()
        .any(|b| b["type"] != "text" || !b["text"].is_string())
    {
        return Some("system: Input should be a valid list of text blocks".into());
    }
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let blocks: Vec<Value> = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .collect();
    let marked: Vec<&Value> = tools
        .iter()
        .chain(&system)
        .chain(&blocks)
        .filter(|b| b.get("cache_control").is_some())
        .collect();
    if marked.len() > 4 {
        return Some(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {}.",
            marked.len()
        ));
    }
    for b in marked {
        let c = &b["cache_control"];
        let ttl_ok = matches!(
            c.get("ttl").map(Value::as_str),
            None | Some(Some("5m" | "1h"))
        );
        let keys_ok = c
            .as_object()
            .is_some_and(|o| o.keys().all(|k| k == "type" || k == "ttl"));
        if c["type"] != "ephemeral" || !ttl_ok || !keys_ok {
            return Some(format!("cache_control: invalid value {c}"));
        }
        if matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")) {
            return Some("thinking blocks cannot have cache_control".into());
        }
    }
    None
}
