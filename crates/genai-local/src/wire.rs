//! The local provider's interface is the `openai-chat` format: this module reads an
//! openai-chat request body into messages and generation settings, and writes what the engine
//! produced back as openai-chat JSON (`chat.completion.chunk` events for a stream, one
//! `chat.completion` body otherwise, in the shapes of
//! [`openai_chat_reply`](genai_core::format::openai_chat_reply), which the gateway writes too), so
//! the existing openai-chat decoder reads it unchanged.
//!
//! It owns that mapping and nothing else: it must never touch llama.cpp or a channel.

use serde_json::{json, Value};

use super::grammar::{Call, Choice, Convention, Grammar, Tool, ToolOffer};
use super::template::ChatMessage;
use genai_core::error::{Error, Result};
use genai_core::format::openai_chat_reply::{
    tool_call, AssistantMessage, Chunk, Delta, Envelope, WholeCall,
};
use genai_core::message::Usage;

/// Sampling and length settings taken from the request body. `None` means the engine's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct GenerationSettings {
    pub(crate) max_tokens: Option<u32>,
    pub(crate) temperature: Option<f32>,
    pub(crate) top_p: Option<f32>,
    pub(crate) top_k: Option<i32>,
    pub(crate) seed: Option<u32>,
    pub(crate) repeat_penalty: Option<f32>,
    pub(crate) presence_penalty: Option<f32>,
    pub(crate) frequency_penalty: Option<f32>,
    pub(crate) stop: Vec<String>,
    /// What the reply must match (a response schema, or the tool-call grammar), if anything.
    pub(crate) grammar: Option<Grammar>,
    /// A raw completion (fill-in-the-middle): the reply's leading whitespace is kept.
    pub(crate) raw: bool,
    /// Run to `max_tokens`: end-of-generation tokens are never sampled and a reply that
    /// repeats itself is not stopped (llama-server's `ignore_eos`, for benchmarks).
    pub(crate) ignore_eos: bool,
}

/// An openai-chat request as the engine needs it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChatRequest {
    pub(crate) messages: Vec<ChatMessage>,
    pub(crate) settings: GenerationSettings,
    /// The tools offered (none with `tool_choice: none`), in the model's calling convention.
    pub(crate) tools: Option<(ToolOffer, Convention)>,
}

/// Reads an openai-chat request body. Images are refused (the local engine is text only).
/// Tools (`tools`, `tool_choice`) are described in the system prompt in the model's calling
/// `convention` and constrained by a grammar, which a `response_format` JSON Schema gives
/// too; earlier calls are written back in that convention and their results go as user text.
pub(crate) fn parse_request(body: &Value, convention: Convention) -> Result<ChatRequest> {
    let list = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::invalid_params("the request has no `messages` list"))?;
    let mut messages = Vec::with_capacity(list.len());
    for m in list {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        let role = match role {
            "system" | "developer" => "system",
            "assistant" => "assistant",
            _ => "user",
        };
        let mut content = text_of(m.get("content").unwrap_or(&Value::Null))?;
        if m.get("role").and_then(Value::as_str) == Some("tool") {
            content = format!("<tool_response>\n{content}\n</tool_response>");
        }
        for call in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let f = call.get("function").unwrap_or(&Value::Null);
            let arguments = match f.get("arguments") {
                Some(Value::String(a)) => serde_json::from_str(a).unwrap_or(Value::Null),
                Some(a) => a.clone(),
                None => Value::Null,
            };
            let call = json!({"name": f.get("name"), "arguments": arguments});
            if !content.is_empty() {
                content.push('\n');
            }
            content.push_str(&match convention {
                Convention::Hermes => format!("<tool_call>\n{call}\n</tool_call>"),
                Convention::PlainJson => json!({ "tool_call": call }).to_string(),
            });
        }
        // llama.cpp takes C strings: a NUL would cut the message.
        let content = content.replace('\0', "");
        messages.push(ChatMessage::new(role, &content));
    }
    if messages.is_empty() {
        return Err(Error::invalid_params("the request has no messages"));
    }
    let tools = tool_offer(body)?;
    let mut grammar = match body.pointer("/response_format/json_schema/schema") {
        Some(schema) => Some(Grammar::for_schema(schema)?),
        None if body
            .pointer("/response_format/type")
            .and_then(Value::as_str)
            == Some("json_object") =>
        {
            Some(Grammar::for_schema(&json!({"type": "object"}))?)
        }
        None => None,
    };
    if let Some(offer) = &tools {
        // A schema and tools at once: the tools win (the schema is asked of the final reply).
        grammar = Some(offer.grammar(convention)?);
        let text = offer.instructions(convention);
        match messages.first_mut() {
            Some(first) if first.role == "system" => {
                first.content = format!("{}\n\n{text}", first.content)
            }
            _ => messages.insert(0, ChatMessage::new("system", &text)),
        }
    }
    let f = |k: &str| body.get(k).and_then(Value::as_f64).map(|v| v as f32);
    let int = |k: &str| body.get(k).and_then(Value::as_i64);
    let stop = match body.get("stop") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    let settings = GenerationSettings {
        max_tokens: int("max_completion_tokens")
            .or_else(|| int("max_tokens"))
            .map(|n| n.clamp(1, u32::MAX as i64) as u32),
        temperature: f("temperature"),
        top_p: f("top_p"),
        top_k: int("top_k").map(|n| n.clamp(0, i32::MAX as i64) as i32),
        // A 64-bit seed is folded to the 32 bits llama.cpp takes.
        seed: int("seed").map(|n| (n as u64 ^ ((n as u64) >> 32)) as u32),
        repeat_penalty: f("repeat_penalty"),
        presence_penalty: f("presence_penalty"),
        frequency_penalty: f("frequency_penalty"),
        stop,
        grammar,
        raw: false,
        ignore_eos: body.get("ignore_eos").and_then(Value::as_bool) == Some(true),
    };
    let tools = tools.map(|t| (t, convention));
    Ok(ChatRequest {
        messages,
        settings,
        tools,
    })
}

/// The request's tools and the choice among them; `None` without tools or with
/// `tool_choice: none`.
fn tool_offer(body: &Value) -> Result<Option<ToolOffer>> {
    let tools: Vec<Tool> = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("function"))
        .filter_map(|f| {
            Some(Tool {
                name: f.get("name")?.as_str()?.to_string(),
                description: f
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                parameters: f.get("parameters").cloned().unwrap_or(Value::Null),
            })
        })
        .collect();
    if tools.is_empty() {
        return Ok(None);
    }
    let choice = match body.get("tool_choice") {
        None => Choice::Auto,
        Some(Value::String(c)) => match c.as_str() {
            "auto" => Choice::Auto,
            "required" => Choice::Required,
            "none" => return Ok(None),
            other => {
                return Err(Error::invalid_params(format!(
                    "tool_choice `{other}` is not auto, required, none or a function"
                )))
            }
        },
        Some(c) => match c.pointer("/function/name").and_then(Value::as_str) {
            Some(name) => Choice::Tool(name.to_string()),
            None => return Err(Error::invalid_params("tool_choice names no function")),
        },
    };
    Ok(Some(ToolOffer { tools, choice }))
}

fn text_of(content: &Value) -> Result<String> {
    match content {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => {
            let mut texts = Vec::new();
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        texts.push(p.get("text").and_then(Value::as_str).unwrap_or_default())
                    }
                    Some("image_url") | Some("image") => {
                        return Err(Error::invalid_params(
                            "the local provider runs text-only models: remove the image",
                        ))
                    }
                    _ => {}
                }
            }
            Ok(texts.join("\n"))
        }
        other => Ok(other.to_string()),
    }
}

/// Token counts of one generation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TokenCounts {
    /// Tokens of the whole prompt.
    pub(crate) prompt: u32,
    /// Prompt tokens found in the KV cache (not evaluated again).
    pub(crate) cached: u32,
    /// Tokens generated.
    pub(crate) completion: u32,
}

impl TokenCounts {
    fn usage(self) -> Usage {
        Usage {
            input_tokens: self.prompt.into(),
            output_tokens: self.completion.into(),
            cache_read_tokens: Some(self.cached.into()),
            ..Default::default()
        }
    }
}

/// Identifies one answer in its chunks.
#[derive(Debug, Clone)]
pub(crate) struct Answer(Envelope);

impl Answer {
    pub(crate) fn new(model: &str) -> Answer {
        Answer(Envelope::now(
            format!("chatcmpl-local-{}", ulid::Ulid::new()),
            model,
        ))
    }

    /// The first chunk: the assistant role with empty content.
    pub(crate) fn role_chunk(&self) -> String {
        self.chunk(Delta::role(), None)
    }

    /// A chunk carrying text.
    pub(crate) fn text_chunk(&self, text: &str) -> String {
        self.chunk(Delta::text(text), None)
    }

    /// A chunk carrying whole tool calls.
    pub(crate) fn calls_chunk(&self, calls: &[Call]) -> String {
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut v = call_json(c);
                v["index"] = Value::from(i);
                v
            })
            .collect();
        self.chunk(Delta::calls(&calls), None)
    }

    /// The chunk that ends the choice.
    pub(crate) fn finish_chunk(&self, finish_reason: &str) -> String {
        self.chunk(Delta::default(), Some(finish_reason))
    }

    fn chunk(&self, delta: Delta<'_>, finish_reason: Option<&str>) -> String {
        text(&self.0.chunk(delta, finish_reason))
    }

    /// The usage chunk sent after the last choice chunk (as with `include_usage`).
    pub(crate) fn usage_chunk(&self, counts: TokenCounts) -> String {
        text(&self.0.usage_chunk(&counts.usage()))
    }

    /// A whole `chat.completion` body.
    pub(crate) fn completion(
        &self,
        text: &str,
        calls: &[Call],
        finish_reason: &str,
        counts: TokenCounts,
    ) -> Vec<u8> {
        let ids: Vec<String> = calls.iter().map(|_| call_id()).collect();
        let mut message = AssistantMessage::new(Some(text));
        message.tool_calls = calls
            .iter()
            .zip(&ids)
            .map(|(c, id)| WholeCall::new(id, &c.name, &c.arguments))
            .collect();
        self.0
            .completion(message, finish_reason, Some(&counts.usage()))
            .to_vec()
    }
}

/// A chunk as the text of its event's data (serializing these shapes cannot fail).
fn text(chunk: &Chunk<'_>) -> String {
    serde_json::to_string(chunk).unwrap_or_default()
}

/// One tool call as the Chat Completions API writes it, with a fresh id.
fn call_json(call: &Call) -> Value {
    tool_call(&call_id(), &call.name, &call.arguments)
}

/// A fresh tool call id.
fn call_id() -> String {
    format!("call_{}", ulid::Ulid::new())
}

/// The data of the event that ends a stream.
pub(crate) const DONE: &str = "[DONE]";

#[cfg(test)]
mod tests {
    use super::*;
    use genai_core::format::read_back;

    #[test]
    fn reads_messages_and_settings() {
        let body = json!({
            "model": "gemma",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}]},
                {"role": "tool", "tool_call_id": "1", "content": "42"},
            ],
            "max_tokens": 16, "temperature": 0.5, "top_k": 20, "top_p": 0.9,
            "seed": 7, "repeat_penalty": 1.1, "stop": "END", "stream": true, "ignore_eos": true,
        });
        let r = parse_request(&body, Convention::Hermes).unwrap();
        assert_eq!(
            r.messages,
            vec![
                ChatMessage::new("system", "Be brief."),
                ChatMessage::new("user", "Hi\nthere"),
                ChatMessage::new("user", "<tool_response>\n42\n</tool_response>"),
            ]
        );
        let s = r.settings;
        assert_eq!(s.max_tokens, Some(16));
        assert_eq!(s.temperature, Some(0.5));
        assert_eq!(s.top_k, Some(20));
        assert_eq!(s.seed, Some(7));
        assert_eq!(s.repeat_penalty, Some(1.1));
        assert_eq!(s.stop, vec!["END"]);
        assert!(s.ignore_eos);
        let plain = json!({"messages": [{"role": "user", "content": "Hi"}]});
        assert!(
            !parse_request(&plain, Convention::Hermes)
                .unwrap()
                .settings
                .ignore_eos
        );
    }

    #[test]
    fn images_are_refused() {
        let body = json!({"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]});
        let e = parse_request(&body, Convention::Hermes).unwrap_err();
        assert!(e.message.contains("text-only"), "{}", e.message);
    }

    /// What the local provider writes is read by the openai-chat decoder unchanged.
    #[test]
    fn chunks_and_bodies_decode_with_the_openai_chat_format() {
        let a = Answer::new("gemma-3-270m");
        let counts = TokenCounts {
            prompt: 30,
            cached: 20,
            completion: 2,
        };
        let events = [
            a.role_chunk(),
            a.text_chunk("Hel"),
            a.text_chunk("lo"),
            a.finish_chunk("stop"),
            a.usage_chunk(counts),
            DONE.to_string(),
        ];
        let (deltas, r) = read_back::openai_chat_stream("gemma-3-270m", &events).unwrap();
        assert_eq!(deltas, vec!["Hel", "lo"]);
        assert_eq!(r.message.text(), "Hello");
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        let u = r.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (30, 2));
        assert_eq!(u.cache_read_tokens, Some(20));

        let body = a.completion("Hello", &[], "length", counts);
        let (r, _) = read_back::openai_chat_body("gemma-3-270m", &body).unwrap();
        assert_eq!(r.message.text(), "Hello");
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        assert_eq!(r.usage.unwrap().cache_read_tokens, Some(20));

        // A reply the loop guard stopped: the agent hears why, and tells its clients `length`.
        let body = a.completion("la la", &[], genai_core::format::REPEATED, counts);
        let (r, note) = read_back::openai_chat_body("gemma-3-270m", &body).unwrap();
        assert_eq!(
            note.as_deref(),
            Some("the reply was cut: it repeated itself")
        );
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
    }
}
