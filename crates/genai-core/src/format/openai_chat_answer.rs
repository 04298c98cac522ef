//! A whole Chat Completions answer read straight into types: the fields genai uses, the rest
//! skipped unread, so that no `Value` tree is built for the answer of every request (building
//! one was a tenth of a gateway request's work).
//!
//! It owns only that reading. An answer whose fields are not of the types expected (a
//! server's own extensions: content as a list, a count as text) is not refused here: [`read`]
//! says so with `None`, and the caller reads it as a tree, as every answer was before. It
//! must never decide what the reply means (`openai_chat.rs` does).

use serde::de::Deserializer;
use serde::Deserialize;
use serde_json::Value;

use super::reply::parse_arguments;
use super::ModelReply;
use crate::error::{Error, Result};
use crate::message::{Part, Usage};

/// The answer read into types; `None` when a field is not of its type (read it as a tree).
pub(super) fn read(body: &[u8]) -> Option<Result<ModelReply>> {
    // Only an object: serde would read a list into the struct by position.
    if body.trim_ascii_start().first() != Some(&b'{') {
        return None;
    }
    let answer: Answer = serde_json::from_slice(body).ok()?;
    if let Some(err) = &answer.error {
        return Some(Err(Error::provider(super::openai_chat::error_text(err))));
    }
    let Some(choice) = answer.choices.and_then(|c| c.into_iter().next()) else {
        return Some(Err(Error::provider("the provider's answer has no choices")));
    };
    let msg = choice.message.unwrap_or_default();
    let mut content = Vec::new();
    // The first of the two that is given, as the tree reads it: an empty one is none.
    let reasoning = msg.reasoning_content.or(msg.reasoning);
    if let Some(reasoning) = reasoning.filter(|r| !r.is_empty()) {
        content.push(Part::reasoning(reasoning, None));
    }
    if let Some(text) = msg.content.or(msg.refusal) {
        content.push(Part::text(text));
    }
    for call in msg.tool_calls.unwrap_or_default() {
        let f = call.function.unwrap_or_default();
        content.push(Part::ToolCall {
            id: call.id.unwrap_or_default(),
            name: f.name.unwrap_or_default(),
            arguments: parse_arguments(f.arguments.as_deref().unwrap_or("")),
            signature: None,
        });
    }
    let usage = answer.usage.map(|u| Usage {
        input_tokens: u.prompt_tokens.unwrap_or(0),
        output_tokens: u.completion_tokens.unwrap_or(0),
        cache_read_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens),
        cache_write_tokens: None,
        reasoning_tokens: u.completion_tokens_details.and_then(|d| d.reasoning_tokens),
    });
    Some(Ok(ModelReply::assistant(
        content,
        usage,
        choice.finish_reason,
        answer.model,
    )))
}

#[derive(Deserialize)]
struct Answer {
    /// Present (even `null`) means the answer is an error, as the tree reads it.
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    model: Option<String>,
}

/// `Some` for any value given, `null` included (a field left out stays `None`).
fn present<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
}

#[derive(Deserialize)]
struct WireCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize, Default)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<Details>,
    #[serde(default)]
    completion_tokens_details: Option<Details>,
}

#[derive(Deserialize)]
struct Details {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every answer reads the same through the types as through the tree, and the types
    /// leave to the tree only what they cannot read.
    #[test]
    fn the_types_read_every_answer_as_the_tree_does() {
        let typed = [
            r#"{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4,"prompt_tokens_details":{"cached_tokens":2,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":5}},"model":"m-1","system_fingerprint":"x"}"#,
            r#"{"choices":[{"message":{"content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}},{"function":{"name":"ls"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[{"message":{"reasoning_content":"","reasoning":"deep","refusal":"no"}}],"usage":null}"#,
            r#"{"choices":[{"message":{"reasoning_content":"think \u00e9","content":"a\nb"}}],"usage":{"prompt_tokens":null}}"#,
            r#"{"choices":[{"message":null,"finish_reason":null}]}"#,
            r#"{"choices":[]}"#,
            r#"{"choices":null}"#,
            r#"{}"#,
            r#"{"error":{"message":"bad key","code":"invalid_api_key"}}"#,
            r#"{"error":null,"choices":[{"message":{"content":"x"}}]}"#,
            r#"  {"choices":[{"message":{"content":"padded"}}]}"#,
        ];
        let tree_only = [
            r#"{"choices":[{"message":{"content":[{"type":"text","text":"parts"}]}}]}"#,
            r#"{"choices":[null]}"#,
            r#"{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":-1}}"#,
            r#"{"choices":{"0":{}}}"#,
            r#"{"choices":[{"message":{"tool_calls":[{"id":7,"function":{"name":"f"}}]}}]}"#,
            r#"[{"error":"a list"}]"#,
            r#"not json"#,
            r#"{"choices":[{"message":{"content":"a"},"message":{"content":"b"}}]}"#,
        ];
        let same = |body: &str| {
            let tree = super::super::openai_chat::read_tree(body.as_bytes());
            (format!("{tree:?}"), tree.is_ok())
        };
        for body in typed {
            let read = read(body.as_bytes()).unwrap_or_else(|| panic!("not typed: {body}"));
            assert_eq!((format!("{read:?}"), read.is_ok()), same(body), "{body}");
        }
        for body in tree_only {
            assert!(read(body.as_bytes()).is_none(), "{body}");
            // The tree still reads it (or says why not), as before.
            let _ = same(body);
        }
        let read = read(typed[0].as_bytes()).unwrap().unwrap();
        assert_eq!(read.message.text(), "Hi");
        let u = read.usage.unwrap();
        assert_eq!(
            (u.input_tokens, u.cache_read_tokens, u.reasoning_tokens),
            (3, Some(2), Some(5))
        );
    }
}
