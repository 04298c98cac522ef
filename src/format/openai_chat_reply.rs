//! The reply side of OpenAI's Chat Completions as a server writes it: a whole
//! `chat.completion`, a `chat.completion.chunk` event, a tool call and the usage. Written once
//! for both servers in genai that speak it: the gateway's `POST /v1/chat/completions` and the
//! local engine, whose answers the openai-chat decoder reads back.
//!
//! It owns those JSON shapes. It must never decide what a reply says (its callers do), nor read
//! one (`openai_chat.rs` does).

use serde_json::{json, Value};

use crate::message::Usage;

/// What every answer to one request says the same: its id, time and model.
#[derive(Debug, Clone)]
pub struct Envelope {
    pub id: String,
    /// Seconds since the Unix epoch.
    pub created: u64,
    pub model: String,
}

impl Envelope {
    /// An envelope for `model` with the id `id`, made now.
    pub fn now(id: String, model: &str) -> Envelope {
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Envelope {
            id,
            created,
            model: model.to_string(),
        }
    }

    /// A whole `chat.completion` of one choice: the assistant's `message`, why it ended, and
    /// the usage (`null` when none was counted).
    pub fn completion(&self, message: Value, finish_reason: &str, usage: Option<&Usage>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": message,
                "logprobs": null,
                "finish_reason": finish_reason,
            }],
            "usage": usage.map(self::usage),
        })
    }

    /// A `chat.completion.chunk` of one choice's `delta` (and, on the last, why it ended).
    pub fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        self.chunk_of(json!([{
            "index": 0,
            "delta": delta,
            "logprobs": null,
            "finish_reason": finish_reason,
        }]))
    }

    /// The chunk after the last choice's, with no choice and the usage (as `include_usage`
    /// asks).
    pub fn usage_chunk(&self, usage: &Usage) -> Value {
        let mut chunk = self.chunk_of(json!([]));
        chunk["usage"] = self::usage(usage);
        chunk
    }

    fn chunk_of(&self, choices: Value) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        })
    }
}

/// A usage in Chat Completions' words: the cached prompt tokens always (0 when none), the
/// reasoning tokens where they were counted.
pub fn usage(u: &Usage) -> Value {
    let mut v = json!({
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.total(),
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens.unwrap_or(0)},
    });
    if let Some(n) = u.reasoning_tokens {
        v["completion_tokens_details"] = json!({ "reasoning_tokens": n });
    }
    v
}

/// One whole tool call: its id, the function's name and its arguments as a JSON text.
pub fn tool_call(id: &str, name: &str, arguments: &Value) -> Value {
    json!({
        "id": id,
        "type": "function",
        "function": {"name": name, "arguments": arguments.to_string()},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shapes_carry_the_envelope_and_the_usage_says_only_what_was_counted() {
        let e = Envelope {
            id: "chatcmpl-1".into(),
            created: 7,
            model: "m".into(),
        };
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 4,
            cache_read_tokens: Some(3),
            ..Default::default()
        };
        let whole = e.completion(
            json!({"role": "assistant", "content": "hi"}),
            "stop",
            Some(&usage),
        );
        assert_eq!(whole["object"], "chat.completion");
        assert_eq!(whole["choices"][0]["finish_reason"], "stop");
        assert_eq!(
            whole["usage"],
            json!({"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14,
                   "prompt_tokens_details": {"cached_tokens": 3}})
        );
        assert_eq!(e.completion(json!({}), "stop", None)["usage"], Value::Null);
        let chunk = e.chunk(json!({"content": "h"}), None);
        assert_eq!(
            (&chunk["object"], &chunk["id"], &chunk["created"]),
            (
                &json!("chat.completion.chunk"),
                &json!("chatcmpl-1"),
                &json!(7)
            )
        );
        assert_eq!(chunk["choices"][0]["finish_reason"], Value::Null);
        let thought = Usage {
            reasoning_tokens: Some(2),
            ..usage
        };
        let last = e.usage_chunk(&thought);
        assert_eq!(last["choices"], json!([]));
        assert_eq!(
            last["usage"]["completion_tokens_details"]["reasoning_tokens"],
            2
        );
        assert_eq!(
            tool_call("call_1", "read", &json!({"path": "a"})),
            json!({"id": "call_1", "type": "function",
                   "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}})
        );
    }
}
