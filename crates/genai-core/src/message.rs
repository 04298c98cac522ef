//! The message model shared by every layer: roles, content parts, messages and token usage.
//!
//! This module owns the wire shape of a message and its JSON Schema. It must never
//! know about a provider's wire format: model configurations translate to and from these types.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::file_context::FileInput;

/// Who speaks in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Part {
    /// Plain text.
    Text { text: String },
    /// An image, either by URL or inline as base64 data with its media type.
    #[serde(rename_all = "camelCase")]
    Image {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<String>,
    },
    /// A call of a tool by the model; several in one message are parallel calls.
    #[serde(rename_all = "camelCase")]
    ToolCall {
        id: String,
        name: String,
        #[serde(default)]
        arguments: Value,
        /// Opaque data the provider gave with the call and wants back with it (Gemini's
        /// `thoughtSignature`, which thinking models require on the next request).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// The result of a tool call.
    #[serde(rename_all = "camelCase")]
    ToolResult {
        tool_call_id: String,
        #[serde(default, deserialize_with = "content_parts")]
        #[schemars(with = "Vec<PartInput>")]
        content: Vec<Part>,
        #[serde(default)]
        is_error: bool,
    },
    /// Structured data.
    Json { value: Value },
    /// What the model thought before it answered, kept apart from the answer. `signature` is
    /// the opaque proof some providers give with it and want back with a tool call (Claude's
    /// thinking signature, Gemini's thought signature); a `redacted` part has no readable text
    /// and carries the provider's encrypted thinking in `signature`.
    Reasoning {
        #[serde(default)]
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
    },
}

impl Part {
    pub fn text(text: impl Into<String>) -> Part {
        Part::Text { text: text.into() }
    }

    /// Readable reasoning with its signature, if any.
    pub fn reasoning(text: impl Into<String>, signature: Option<String>) -> Part {
        Part::Reasoning {
            text: text.into(),
            signature,
            redacted: false,
        }
    }

    /// Whether this part is the model's reasoning.
    pub(crate) fn is_reasoning(&self) -> bool {
        matches!(self, Part::Reasoning { .. })
    }
}

/// What a client may send as a content part: a part object, a bare string taken as text
/// (so the seed's `{"role":"user","content":["hello"]}` works unchanged), or a file
/// (`{"type":"file","name":...,"text":...}`), which becomes the text part the model reads
/// (`file_context`), the same as `genai ask -f` sends.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum PartInput {
    Text(String),
    File(FileInput),
    Part(Part),
}

/// What a client may send as a message's content: one string, or a list of parts.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum ContentInput {
    Text(String),
    Parts(Vec<PartInput>),
}

pub fn content_parts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Part>, D::Error> {
    Ok(match ContentInput::deserialize(d)? {
        ContentInput::Text(text) => vec![Part::Text { text }],
        ContentInput::Parts(parts) => parts
            .into_iter()
            .map(|p| match p {
                PartInput::Text(text) => Ok(Part::Text { text }),
                // A file attached by name follows the secret rules `-f` follows; a client that
                // means to send such a file sends its text as a text part.
                PartInput::File(file) if crate::permission::is_secret(&file.name) => {
                    Err(serde::de::Error::custom(format!(
                        "the file part `{}` holds secrets (.env files, private keys and \
                         credentials are not sent as files): send its text as a text part if \
                         you mean to",
                        file.name
                    )))
                }
                PartInput::File(file) => Ok(Part::Text {
                    text: file.render(),
                }),
                PartInput::Part(p) => Ok(p),
            })
            .collect::<Result<_, _>>()?,
    })
}

/// A message: a role and its content parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    pub role: Role,
    #[serde(default, deserialize_with = "content_parts")]
    #[schemars(with = "ContentInput")]
    pub content: Vec<Part>,
    /// The agent or tool that produced the message, when it matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// Every string of a JSON value with the known secrets masked.
fn mask_value(v: &mut Value) {
    match v {
        Value::String(s) => {
            crate::redact::mask_known(s);
        }
        Value::Array(items) => items.iter_mut().for_each(mask_value),
        Value::Object(map) => map.values_mut().for_each(mask_value),
        _ => {}
    }
}

/// The parts with every known secret masked (see [`Message::mask_secrets`]).
fn mask_parts(parts: &mut [Part]) {
    for part in parts {
        match part {
            Part::Text { text } => {
                crate::redact::mask_known(text);
            }
            Part::Reasoning {
                text, signature, ..
            } => {
                // The provider's signature no longer matches a changed text: it goes, and the
                // block is not sent back as the provider's own.
                if crate::redact::mask_known(text) {
                    *signature = None;
                }
            }
            Part::ToolCall { arguments, .. } => mask_value(arguments),
            Part::ToolResult { content, .. } => mask_parts(content),
            Part::Json { value } => mask_value(value),
            Part::Image { .. } => {}
        }
    }
}

impl Message {
    /// Masks every secret genai knows (`redact::redact_known`: the keys it has read or sent)
    /// in the text, reasoning, tool calls and results, as the history and every front-end
    /// keep and show them.
    pub(crate) fn mask_secrets(&mut self) {
        mask_parts(&mut self.content);
    }

    pub fn new(role: Role, text: impl Into<String>) -> Message {
        Message {
            role,
            content: vec![Part::text(text)],
            from: None,
        }
    }

    pub fn user(text: impl Into<String>) -> Message {
        Message::new(Role::User, text)
    }

    pub fn system(text: impl Into<String>) -> Message {
        Message::new(Role::System, text)
    }

    pub fn assistant(text: impl Into<String>) -> Message {
        Message::new(Role::Assistant, text)
    }

    /// The tool calls in this message, borrowed: id, name, arguments.
    pub fn calls(&self) -> impl Iterator<Item = (&str, &str, &serde_json::Value)> {
        self.content.iter().filter_map(|p| match p {
            Part::ToolCall {
                id,
                name,
                arguments,
                ..
            } => Some((id.as_str(), name.as_str(), arguments)),
            _ => None,
        })
    }

    /// The tool calls in this message: id, name, arguments.
    pub fn tool_calls(&self) -> Vec<(String, String, serde_json::Value)> {
        self.calls()
            .map(|(id, name, arguments)| (id.to_string(), name.to_string(), arguments.clone()))
            .collect()
    }

    /// The text parts joined together, the form a chat bubble shows (reasoning left out).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            if let Part::Text { text } = part {
                out.push_str(text);
            }
        }
        out
    }

    /// The readable reasoning parts joined together (empty when there is none).
    pub fn reasoning(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            if let Part::Reasoning { text, .. } = part {
                out.push_str(text);
            }
        }
        out
    }

    /// Whether this message calls a tool.
    pub fn has_tool_calls(&self) -> bool {
        self.content
            .iter()
            .any(|p| matches!(p, Part::ToolCall { .. }))
    }
}

/// Token counts reported by a provider for one request (or added up over the requests of one
/// turn). Every format reports `input_tokens` the same way: every prompt token, those read
/// from or written to the provider's prompt cache included (Anthropic and Bedrock count them
/// apart; their formats add them back).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Every prompt token, cache reads and writes included.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of the input tokens, those read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Of the input tokens, those written to the provider's prompt cache (Anthropic and
    /// Bedrock report them; OpenAI and Gemini cache without saying so).
    #[serde(
        default,
        alias = "cacheCreationTokens",
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_write_tokens: Option<u64>,
    /// Of the output tokens, those the model spent reasoning before it answered (OpenAI's
    /// `reasoning_tokens`, Gemini's `thoughtsTokenCount`; Anthropic and Bedrock do not count
    /// them apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Input tokens neither read from nor written to the cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cache_read_tokens.unwrap_or(0))
            .saturating_sub(self.cache_write_tokens.unwrap_or(0))
    }

    /// The counts of two requests (or turns) added up; a cache or reasoning count stays
    /// absent when neither reports it.
    pub(crate) fn plus(self, other: Usage) -> Usage {
        let add = |x: Option<u64>, y: Option<u64>| match (x, y) {
            (None, None) => None,
            (x, y) => Some(x.unwrap_or(0) + y.unwrap_or(0)),
        };
        Usage {
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            cache_read_tokens: add(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens: add(self.cache_write_tokens, other.cache_write_tokens),
            reasoning_tokens: add(self.reasoning_tokens, other.reasoning_tokens),
        }
    }

    /// One line for a turn's details: `usage: 1200 input (1000 cached, 200 written to the
    /// cache) + 30 output (20 reasoning) = 1230 tokens`.
    pub(crate) fn describe(&self) -> String {
        let mut cache = Vec::new();
        if let Some(n) = self.cache_read_tokens.filter(|n| *n > 0) {
            cache.push(format!("{n} cached"));
        }
        if let Some(n) = self.cache_write_tokens.filter(|n| *n > 0) {
            cache.push(format!("{n} written to the cache"));
        }
        let cache = match cache.is_empty() {
            true => String::new(),
            false => format!(" ({})", cache.join(", ")),
        };
        let reasoning = match self.reasoning_tokens.filter(|n| *n > 0) {
            Some(n) => format!(" ({n} reasoning)"),
            None => String::new(),
        };
        format!(
            "usage: {} input{cache} + {} output{reasoning} = {} tokens",
            self.input_tokens,
            self.output_tokens,
            self.total()
        )
    }
}

#[cfg(test)]
#[path = "message_tests.rs"]
mod tests;
