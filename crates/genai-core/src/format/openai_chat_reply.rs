//! The reply side of OpenAI's Chat Completions as a server writes it: a whole
//! `chat.completion`, a `chat.completion.chunk` event, a tool call and the usage. Written once
//! for both servers in genai that speak it: the gateway's `POST /v1/chat/completions` and the
//! local engine, whose answers the openai-chat decoder reads back.
//!
//! It owns those JSON shapes. It must never decide what a reply says (its callers do), nor read
//! one (`openai_chat.rs` does).

use serde::Serialize;
use serde_json::{json, Value};

use crate::message::Usage;

/// What every answer to one request says the same: its id, time and model.
#[derive(Debug, Clone)]
pub struct Envelope {
    pub(crate) id: String,
    /// Seconds since the Unix epoch.
    pub(crate) created: u64,
    pub(crate) model: String,
}

/// Seconds since the Unix epoch: the `created` of an answer in OpenAI's APIs.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Envelope {
    /// An envelope for `model` with the id `id`, made now.
    pub fn now(id: String, model: impl Into<String>) -> Envelope {
        Envelope {
            id,
            created: now_secs(),
            model: model.into(),
        }
    }

    /// A whole `chat.completion` of one choice: the assistant's `message`, why it ended, and
    /// the usage (`null` when none was counted).
    pub fn completion<'a>(
        &'a self,
        message: AssistantMessage<'a>,
        finish_reason: &'a str,
        usage: Option<&Usage>,
    ) -> Completion<'a> {
        Completion {
            id: &self.id,
            object: "chat.completion",
            created: self.created,
            model: &self.model,
            choices: [CompletionChoice {
                index: 0,
                message,
                logprobs: (),
                finish_reason,
            }],
            usage: usage.map(UsageOut::of),
        }
    }

    /// A `chat.completion.chunk` of one choice's `delta` (and, on the last, why it ended).
    pub fn chunk<'a>(&'a self, delta: Delta<'a>, finish_reason: Option<&'a str>) -> Chunk<'a> {
        Chunk {
            choice: Some(ChunkChoice {
                index: 0,
                delta,
                logprobs: (),
                finish_reason,
            }),
            ..self.chunk_of()
        }
    }

    /// The chunk after the last choice's, with no choice and the usage (as `include_usage`
    /// asks).
    pub fn usage_chunk(&self, usage: &Usage) -> Chunk<'_> {
        Chunk {
            usage: Some(Some(UsageOut::of(usage))),
            ..self.chunk_of()
        }
    }

    fn chunk_of(&self) -> Chunk<'_> {
        Chunk {
            id: &self.id,
            object: "chat.completion.chunk",
            created: self.created,
            model: &self.model,
            choice: None,
            usage: None,
        }
    }
}

/// A whole `chat.completion`, serialized straight to its JSON (as a chunk is: a tree built
/// for each answer was a tenth of the gateway's work per request).
#[derive(Debug, Serialize)]
pub struct Completion<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [CompletionChoice<'a>; 1],
    usage: Option<UsageOut>,
}

impl Completion<'_> {
    /// The JSON text (serializing these shapes cannot fail).
    pub fn to_vec(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

#[derive(Debug, Serialize)]
struct CompletionChoice<'a> {
    index: u32,
    message: AssistantMessage<'a>,
    /// Always `null`: genai gives no log probabilities.
    logprobs: (),
    finish_reason: &'a str,
}

/// The assistant's message of a whole answer: `content` is `null` only when the caller says
/// so (a reply of tool calls and no text); reasoning and tool calls only when there are some.
#[derive(Debug, Serialize)]
pub struct AssistantMessage<'a> {
    role: &'static str,
    pub content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<WholeCall<'a>>,
}

impl<'a> AssistantMessage<'a> {
    /// A message whose content is `content`, with no reasoning and no tool calls.
    pub fn new(content: Option<&'a str>) -> AssistantMessage<'a> {
        AssistantMessage {
            role: "assistant",
            content,
            reasoning_content: None,
            tool_calls: Vec::new(),
        }
    }
}

/// One whole tool call: its id, the function's name and its arguments as a JSON text.
#[derive(Debug, Serialize)]
pub struct WholeCall<'a> {
    id: &'a str,
    r#type: &'static str,
    function: WholeFunction<'a>,
}

#[derive(Debug, Serialize)]
struct WholeFunction<'a> {
    name: &'a str,
    arguments: String,
}

impl<'a> WholeCall<'a> {
    pub fn new(id: &'a str, name: &'a str, arguments: &Value) -> WholeCall<'a> {
        WholeCall {
            id,
            r#type: "function",
            function: WholeFunction {
                name,
                arguments: arguments.to_string(),
            },
        }
    }
}

/// A `chat.completion.chunk`, serialized straight to its JSON: a stream writes one per piece,
/// and building a `Value` tree for each took a tenth of a streamed request's work.
#[derive(Debug, Serialize)]
pub struct Chunk<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    /// The one choice, or none (the usage chunk): a list in the API.
    #[serde(rename = "choices", serialize_with = "as_list")]
    choice: Option<ChunkChoice<'a>>,
    /// Absent; `null` on every chunk but the last when the client asked for the usage; the
    /// usage on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Option<UsageOut>>,
}

impl Chunk<'_> {
    /// This chunk with `"usage": null`, as each chunk before the usage chunk carries when
    /// the client asked for the usage.
    pub fn with_usage_to_come(self) -> Self {
        Chunk {
            usage: Some(None),
            ..self
        }
    }
}

#[derive(Debug, Serialize)]
struct ChunkChoice<'a> {
    index: u32,
    delta: Delta<'a>,
    /// Always `null`: genai gives no log probabilities.
    logprobs: (),
    finish_reason: Option<&'a str>,
}

/// What a chunk's choice adds: each field only when it is given (none: `{}`).
#[derive(Debug, Default, Serialize)]
pub struct Delta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) role: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_calls: Option<&'a [Value]>,
}

impl<'a> Delta<'a> {
    /// The first delta of a stream: the assistant's role, with empty content.
    pub fn role() -> Delta<'a> {
        Delta {
            role: Some("assistant"),
            content: Some(""),
            ..Delta::default()
        }
    }

    /// A piece of text.
    pub fn text(text: &'a str) -> Delta<'a> {
        Delta {
            content: Some(text),
            ..Delta::default()
        }
    }

    /// A piece of reasoning.
    pub fn reasoning(reasoning: &'a str) -> Delta<'a> {
        Delta {
            reasoning_content: Some(reasoning),
            ..Delta::default()
        }
    }

    /// Tool calls, whole or a piece of one.
    pub fn calls(calls: &'a [Value]) -> Delta<'a> {
        Delta {
            tool_calls: Some(calls),
            ..Delta::default()
        }
    }
}

fn as_list<S: serde::Serializer, T: Serialize>(one: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    one.as_slice().serialize(s)
}

/// A usage in Chat Completions' words: the cached prompt tokens always (0 when none), the
/// reasoning tokens where they were counted.
#[derive(Debug, Serialize)]
struct UsageOut {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    prompt_tokens_details: Cached,
    #[serde(skip_serializing_if = "Option::is_none")]
    completion_tokens_details: Option<Reasoning>,
}

#[derive(Debug, Serialize)]
struct Cached {
    cached_tokens: u64,
}

#[derive(Debug, Serialize)]
struct Reasoning {
    reasoning_tokens: u64,
}

impl UsageOut {
    fn of(u: &Usage) -> UsageOut {
        UsageOut {
            prompt_tokens: u.input_tokens,
            completion_tokens: u.output_tokens,
            total_tokens: u.total(),
            prompt_tokens_details: Cached {
                cached_tokens: u.cache_read_tokens.unwrap_or(0),
            },
            completion_tokens_details: u
                .reasoning_tokens
                .map(|reasoning_tokens| Reasoning { reasoning_tokens }),
        }
    }
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
        let whole = serde_json::to_value(e.completion(
            AssistantMessage::new(Some("hi")),
            "stop",
            Some(&usage),
        ))
        .unwrap();
        assert_eq!(whole["object"], "chat.completion");
        assert_eq!(whole["choices"][0]["finish_reason"], "stop");
        assert_eq!(
            whole["usage"],
            json!({"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14,
                   "prompt_tokens_details": {"cached_tokens": 3}})
        );
        let bare = e.completion(AssistantMessage::new(None), "stop", None);
        assert_eq!(
            String::from_utf8(bare.to_vec()).unwrap(),
            r#"{"id":"chatcmpl-1","object":"chat.completion","created":7,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null},"logprobs":null,"finish_reason":"stop"}],"usage":null}"#
        );
        let chunk = serde_json::to_value(e.chunk(Delta::text("h"), None)).unwrap();
        assert_eq!(chunk["choices"][0]["delta"], json!({"content": "h"}));
        assert_eq!(chunk.get("usage"), None);
        assert_eq!(
            (&chunk["object"], &chunk["id"], &chunk["created"]),
            (
                &json!("chat.completion.chunk"),
                &json!("chatcmpl-1"),
                &json!(7)
            )
        );
        assert_eq!(chunk["choices"][0]["finish_reason"], Value::Null);
        let last_choice = e.chunk(Delta::default(), Some("stop")).with_usage_to_come();
        assert_eq!(
            serde_json::to_string(&last_choice).unwrap(),
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}"#
        );
        let thought = Usage {
            reasoning_tokens: Some(2),
            ..usage
        };
        let last = serde_json::to_value(e.usage_chunk(&thought)).unwrap();
        assert_eq!(last["choices"], json!([]));
        assert_eq!(
            last["usage"]["completion_tokens_details"]["reasoning_tokens"],
            2
        );
        let call = json!({"id": "call_1", "type": "function",
                          "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}});
        assert_eq!(tool_call("call_1", "read", &json!({"path": "a"})), call);
        let whole_call = WholeCall::new("call_1", "read", &json!({"path": "a"}));
        assert_eq!(serde_json::to_value(whole_call).unwrap(), call);
    }
}
