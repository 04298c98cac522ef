//! Pieces of wire JSON that several formats share: a message's text, fields and arrays read
//! from an answer, tool-call names by id, arguments as an object, the object parameter the
//! sampling parameters override, the OpenAI-style tools list (written or as a tree), chat role
//! and chat message (which Ollama's chat API takes too), and the walk from a message's parts to
//! content blocks (Claude Messages and Bedrock Converse, each with its own block shapes). Each
//! is the one place for logic two formats or more had written alike; a piece only one format
//! needs stays in that format's file. It must never know a format by name nor do I/O.

use std::collections::HashMap;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{json, Map, Value};

use super::{Parameters, ToolSpec};
use crate::error::Result;
use crate::message::{Message, Part, Role};

/// The text and JSON parts of a message's content, one per line (what a format sends where
/// its API takes a plain string).
pub(crate) fn text_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.clone()),
            Part::Json { value } => Some(value.to_string()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The string field `name` of a JSON object (empty when absent).
pub(crate) fn str_field(v: &Value, name: &str) -> String {
    v.get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The function name of each tool call by call id, learnt message by message: a tool result
/// knows its call only by id, and the latest call with that id before it names it (made-up ids
/// repeat from one reply to the next).
#[derive(Default)]
pub(crate) struct CallNames<'a>(HashMap<&'a str, &'a str>);

impl<'a> CallNames<'a> {
    /// Learns the calls of `message`.
    pub(crate) fn learn(&mut self, message: &'a Message) {
        for part in &message.content {
            if let Part::ToolCall { id, name, .. } = part {
                self.0.insert(id, name);
            }
        }
    }

    /// The name of call `id`, if a message learnt so far made it.
    pub(crate) fn get(&self, id: &str) -> Option<&'a str> {
        self.0.get(id).copied()
    }
}

/// A tool call's arguments as the JSON object the Claude and Ollama APIs require: an object
/// as it is, `null` as `{}`, anything else wrapped as `{"value": ...}`.
pub(crate) fn arguments_object(arguments: &Value) -> Value {
    match arguments {
        Value::Object(_) => arguments.clone(),
        Value::Null => json!({}),
        other => json!({ "value": other }),
    }
}

/// The object parameter `name` (empty when unset), the base the sampling parameters then
/// override (Gemini's `generation_config`, Ollama's `options`).
pub(crate) fn object_parameter(parameters: &Parameters, name: &str) -> Map<String, Value> {
    match parameters.get(name) {
        Some(Value::Object(o)) => o.clone(),
        _ => Map::new(),
    }
}

/// The `tools` list of the OpenAI Chat Completions API, which Ollama's chat API takes too:
/// `{"type": "function", "function": {name, description, parameters}}` per tool, written
/// straight into a body (`openai-chat`) or made a tree ([`function_tools`]).
pub(crate) struct FunctionTools<'a>(pub(crate) &'a [ToolSpec]);

impl Serialize for FunctionTools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        struct Function<'a>(&'a ToolSpec);
        impl Serialize for Function<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(3))?;
                map.serialize_entry("name", &self.0.name)?;
                map.serialize_entry("description", &self.0.description)?;
                map.serialize_entry("parameters", &self.0.input_schema)?;
                map.end()
            }
        }
        struct Tool<'a>(&'a ToolSpec);
        impl Serialize for Tool<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("type", "function")?;
                map.serialize_entry("function", &Function(self.0))?;
                map.end()
            }
        }
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for t in self.0 {
            seq.serialize_element(&Tool(t))?;
        }
        seq.end()
    }
}

/// [`FunctionTools`] as a JSON tree.
pub(crate) fn function_tools(tools: &[ToolSpec]) -> Value {
    // Strings, and schemas that are trees already: nothing here can fail to convert.
    serde_json::to_value(FunctionTools(tools)).expect("a tools list is JSON")
}

/// The role of a chat message of the OpenAI-style APIs: a tool message's other parts go as a
/// user turn (its results travel apart, as `tool` messages).
pub(crate) fn chat_role(role: Role) -> &'static str {
    match role {
        Role::Tool => "user",
        other => other.as_str(),
    }
}

/// A chat message of the OpenAI-style APIs: its role ([`chat_role`]), its content, and its
/// `tool_calls` when it has any.
pub(crate) fn chat_message(role: Role, content: Value, tool_calls: Vec<Value>) -> Value {
    let mut msg = json!({"role": chat_role(role), "content": content});
    if !tool_calls.is_empty() {
        msg["tool_calls"] = Value::Array(tool_calls);
    }
    msg
}

/// The elements of the array at JSON pointer `at` in `v` (none when it is absent or no
/// array).
pub(crate) fn items<'a>(v: &'a Value, at: &str) -> impl Iterator<Item = &'a Value> {
    v.pointer(at)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The string at JSON pointer `at` in `v`, `None` when it is absent or empty.
pub(crate) fn str_at(v: &Value, at: &str) -> Option<String> {
    v.pointer(at)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// An image part's `url`, `mediaType` and `data`.
pub(crate) type ImageFields<'a> = (&'a Option<String>, &'a Option<String>, &'a Option<String>);

/// How a format writes each kind of content block; [`content_blocks`] decides which parts
/// become blocks.
pub(crate) trait BlockShapes {
    /// Signed reasoning (`redacted`: the signature is the encrypted reasoning).
    fn reasoning(&self, text: &str, signature: &str, redacted: bool) -> Value;
    fn text(&self, text: &str) -> Value;
    fn image(&self, image: ImageFields<'_>) -> Result<Value>;
    fn tool_call(&self, id: &str, name: &str, arguments: &Value) -> Value;
    fn tool_result(&self, tool_call_id: &str, content: &[Part], is_error: bool) -> Result<Value>;
}

/// The content blocks of a message's parts in a format's `shapes`. Signed reasoning goes back
/// only where `with_reasoning` (a message that calls tools, where extended thinking requires
/// it before the call); unsigned reasoning and empty text (which the APIs refuse) never do;
/// JSON goes as its text.
pub(crate) fn content_blocks(
    parts: &[Part],
    with_reasoning: bool,
    shapes: &impl BlockShapes,
) -> Result<Vec<Value>> {
    let mut blocks = Vec::new();
    for part in parts {
        match part {
            Part::Reasoning {
                text,
                signature: Some(signature),
                redacted,
            } if with_reasoning => blocks.push(shapes.reasoning(text, signature, *redacted)),
            Part::Reasoning { .. } => {}
            Part::Text { text } if text.is_empty() => {}
            Part::Text { text } => blocks.push(shapes.text(text)),
            Part::Json { value } => blocks.push(shapes.text(&value.to_string())),
            Part::Image {
                url,
                media_type,
                data,
            } => blocks.push(shapes.image((url, media_type, data))?),
            Part::ToolCall {
                id,
                name,
                arguments,
                ..
            } => blocks.push(shapes.tool_call(id, name, arguments)),
            Part::ToolResult {
                tool_call_id,
                content,
                is_error,
            } => blocks.push(shapes.tool_result(tool_call_id, content, *is_error)?),
        }
    }
    Ok(blocks)
}
