//! A Chat Completions request as it comes on the wire: serde types with each known field
//! typed, read straight from the body (no JSON tree of the whole request). What a type does
//! not name is kept in its `other` map, so that a field genai cannot carry is still refused
//! by name (`messages[0].audio`), and the top level's other fields are the model's parameters.
//!
//! It owns the shape only. It must never decide what a field means to the core (the API's
//! file does: `openai_chat.rs`).

use serde::Deserialize;
use serde_json::{Map, Value};

use super::fields::{self, TextOr};

/// The request body.
#[derive(Deserialize)]
pub(crate) struct ChatBody {
    pub(crate) model: Option<String>,
    pub(crate) messages: Option<Vec<ChatMessage>>,
    pub(crate) stream: Option<bool>,
    pub(crate) stream_options: Option<StreamOptions>,
    pub(crate) n: Option<Value>,
    pub(crate) tools: Option<Vec<ChatTool>>,
    pub(crate) tool_choice: Option<Value>,
    pub(crate) response_format: Option<Value>,
    pub(crate) stop: Option<Value>,
    /// Sampling settings and every field not named above, in the body's order.
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}

#[derive(Deserialize)]
pub(crate) struct StreamOptions {
    pub(crate) include_usage: Option<bool>,
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}

/// One message of the history.
#[derive(Deserialize)]
pub(crate) struct ChatMessage {
    pub(crate) role: Option<String>,
    pub(crate) content: Option<Content>,
    pub(crate) tool_calls: Option<Vec<ToolCall>>,
    pub(crate) tool_call_id: Option<String>,
    pub(crate) refusal: Option<String>,
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}

/// A message's content: a string (one text part) or an array of parts.
pub(crate) type Content = TextOr<ContentPart>;

/// One part of a content; which fields it may have depends on its `type`.
#[derive(Deserialize)]
pub(crate) struct ContentPart {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) text: Option<String>,
    pub(crate) refusal: Option<String>,
    pub(crate) image_url: Option<Map<String, Value>>,
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}

impl ContentPart {
    /// The first field present that a part of `kind` does not have.
    pub(crate) fn stray(&self, kind: &str) -> Option<&str> {
        let named = [
            ("text", self.text.is_some()),
            ("refusal", self.refusal.is_some()),
            ("image_url", self.image_url.is_some()),
        ];
        fields::stray(&named, &[kind], &self.other)
    }
}

/// A tool call of an assistant message.
#[derive(Deserialize)]
pub(crate) struct ToolCall {
    /// Which call of a stream it was; kept by some clients, read as the calls' order.
    pub(crate) index: Option<Value>,
    pub(crate) id: Option<String>,
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) function: Option<FunctionCall>,
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}

#[derive(Deserialize)]
pub(crate) struct FunctionCall {
    pub(crate) name: Option<String>,
    /// The arguments as a string of JSON.
    pub(crate) arguments: Option<String>,
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}

/// A tool the client offers.
#[derive(Deserialize)]
pub(crate) struct ChatTool {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) function: Option<FunctionTool>,
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}

#[derive(Deserialize)]
pub(crate) struct FunctionTool {
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    /// Its arguments' JSON Schema, given to the model as it is.
    pub(crate) parameters: Option<Value>,
    pub(crate) strict: Option<bool>,
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}
