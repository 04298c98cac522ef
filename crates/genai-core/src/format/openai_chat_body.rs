//! The body of an `openai-chat` request written straight from serde types into its bytes: what
//! every gateway request pays, where building it as a `Value` tree first (then serialising the
//! tree) was a sixteenth of the request's work. A parameter named like a field genai sets
//! (`model`, `stream`, ...) stands where a tree built by inserting keys in order would have it;
//! the tests hold the bytes to such a tree's.
//!
//! It owns that writing only. It must never decide what goes in a body (the format does: the
//! same messages, parameters and options, in the same order).

use std::borrow::Cow;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use super::schema::{ResponseSchema, ToolChoice, TOOL_CHOICE};
use super::wire::{chat_role, FunctionTools};
use super::{Parameters, ToolSpec};
use crate::error::{Error, Result};
use crate::message::{Message, Part};

/// The body's bytes: the model, the messages, the parameters (`tool_choice` aside, a
/// `response_format` replaced by the schema's when there is one), the tools, the tool choice,
/// the schema's `response_format`, and the stream fields.
pub(crate) fn write(
    model: &str,
    parameters: &Parameters,
    messages: &[Message],
    tools: &[ToolSpec],
    schema: Option<&ResponseSchema>,
    stream: bool,
) -> Result<Vec<u8>> {
    let mut wire = Vec::with_capacity(messages.len());
    for m in messages {
        to_wire(m, &mut wire)?;
    }
    let choice = ToolChoice::of(parameters, tools)?.map(|c| c.openai());
    let body = Body {
        model,
        messages: &wire,
        parameters,
        tools,
        choice: choice.as_ref(),
        schema,
        stream,
    };
    let mut out = Vec::with_capacity(256);
    serde_json::to_writer(&mut out, &body)
        .map_err(|e| Error::internal(format!("cannot encode the request body: {e}")))?;
    Ok(out)
}

struct Body<'a> {
    model: &'a str,
    messages: &'a [WireMessage<'a>],
    parameters: &'a Parameters,
    tools: &'a [ToolSpec],
    choice: Option<&'a Value>,
    schema: Option<&'a ResponseSchema>,
    stream: bool,
}

impl Serialize for Body<'_> {
    /// The keys in the order a tree gets them by inserting the model, the messages, each
    /// parameter, then what genai sets: a parameter named like a field genai sets keeps its
    /// place, with the parameter's value for `model` and `messages` (set before it) and genai's
    /// for the others (set after it).
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        match self.parameters.get("model") {
            Some(model) => map.serialize_entry("model", model)?,
            None => map.serialize_entry("model", self.model)?,
        }
        match self.parameters.get("messages") {
            Some(messages) => map.serialize_entry("messages", messages)?,
            None => map.serialize_entry("messages", self.messages)?,
        }
        let mut tools = !self.tools.is_empty();
        let mut schema = self.schema;
        let (mut stream, mut stream_options) = (self.stream, self.stream);
        for (k, v) in self.parameters {
            match k.as_str() {
                "model" | "messages" => {}
                k if k == TOOL_CHOICE.name => {}
                "tools" if tools => {
                    map.serialize_entry(k, &FunctionTools(self.tools))?;
                    tools = false;
                }
                "response_format" if schema.is_some() => {
                    map.serialize_entry(k, &SchemaFormat(schema.take().expect("is some")))?;
                }
                "stream" if stream => {
                    map.serialize_entry(k, &true)?;
                    stream = false;
                }
                "stream_options" if stream_options => {
                    map.serialize_entry(k, &IncludeUsage)?;
                    stream_options = false;
                }
                _ => map.serialize_entry(k, v)?,
            }
        }
        if tools {
            map.serialize_entry("tools", &FunctionTools(self.tools))?;
        }
        if let Some(choice) = self.choice {
            map.serialize_entry("tool_choice", choice)?;
        }
        if let Some(schema) = schema {
            map.serialize_entry("response_format", &SchemaFormat(schema))?;
        }
        if stream {
            map.serialize_entry("stream", &true)?;
        }
        if stream_options {
            map.serialize_entry("stream_options", &IncludeUsage)?;
        }
        map.end()
    }
}

/// `{"include_usage": true}`.
struct IncludeUsage;

impl Serialize for IncludeUsage {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("include_usage", &true)?;
        map.end()
    }
}

/// `{"type": "json_schema", "json_schema": {name, schema, strict?}}`.
struct SchemaFormat<'a>(&'a ResponseSchema);

impl Serialize for SchemaFormat<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        struct Spec<'a>(&'a ResponseSchema);
        impl Serialize for Spec<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(None)?;
                map.serialize_entry("name", &self.0.name)?;
                map.serialize_entry("schema", &self.0.schema)?;
                if self.0.strict_ok() {
                    map.serialize_entry("strict", &true)?;
                }
                map.end()
            }
        }
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("type", "json_schema")?;
        map.serialize_entry("json_schema", &Spec(self.0))?;
        map.end()
    }
}

/// One message of the `messages` list.
enum WireMessage<'a> {
    /// `{"role", "content", "tool_calls"?}`.
    Chat {
        role: &'static str,
        content: Content<'a>,
        tool_calls: Vec<ToolCall<'a>>,
    },
    /// `{"role": "tool", "tool_call_id", "content"}`.
    Result { tool_call_id: &'a str, text: String },
}

/// A message's content: its text parts joined by lines (a string: every OpenAI-compatible
/// server accepts that form), or the parts as an array when one is an image.
enum Content<'a> {
    Text(Vec<Cow<'a, str>>),
    Parts(Vec<WirePart<'a>>),
}

enum WirePart<'a> {
    Text(Cow<'a, str>),
    Image(Cow<'a, str>),
}

struct ToolCall<'a> {
    id: &'a str,
    name: &'a str,
    arguments: String,
}

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            WireMessage::Chat {
                role,
                content,
                tool_calls,
            } => {
                let mut map = s.serialize_map(None)?;
                map.serialize_entry("role", role)?;
                match content {
                    Content::Text(texts) if texts.len() == 1 => {
                        map.serialize_entry("content", &*texts[0])?
                    }
                    Content::Text(texts) => map.serialize_entry("content", &texts.join("\n"))?,
                    Content::Parts(parts) => map.serialize_entry("content", parts)?,
                }
                if !tool_calls.is_empty() {
                    map.serialize_entry("tool_calls", tool_calls)?;
                }
                map.end()
            }
            WireMessage::Result { tool_call_id, text } => {
                let mut map = s.serialize_map(Some(3))?;
                map.serialize_entry("role", "tool")?;
                map.serialize_entry("tool_call_id", tool_call_id)?;
                map.serialize_entry("content", text)?;
                map.end()
            }
        }
    }
}

impl Serialize for WirePart<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        struct Url<'a>(&'a str);
        impl Serialize for Url<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("url", self.0)?;
                map.end()
            }
        }
        let mut map = s.serialize_map(Some(2))?;
        match self {
            WirePart::Text(text) => {
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", &**text)?;
            }
            WirePart::Image(url) => {
                map.serialize_entry("type", "image_url")?;
                map.serialize_entry("image_url", &Url(url))?;
            }
        }
        map.end()
    }
}

impl Serialize for ToolCall<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        struct Function<'a>(&'a ToolCall<'a>);
        impl Serialize for Function<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("name", self.0.name)?;
                map.serialize_entry("arguments", &self.0.arguments)?;
                map.end()
            }
        }
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("id", self.id)?;
        map.serialize_entry("type", "function")?;
        map.serialize_entry("function", &Function(self))?;
        map.end()
    }
}

/// One message in OpenAI's shape (reasoning is never sent back: servers that give it refuse or
/// ignore it in requests); a message with tool results becomes one `tool` message each.
fn to_wire<'a>(m: &'a Message, out: &mut Vec<WireMessage<'a>>) -> Result<()> {
    let mut parts = Vec::new();
    let mut tool_calls = Vec::new();
    let mut results = Vec::new();
    for part in &m.content {
        match part {
            Part::Reasoning { .. } => {}
            Part::Text { text } => parts.push(WirePart::Text(Cow::Borrowed(text))),
            Part::Json { value } => parts.push(WirePart::Text(Cow::Owned(value.to_string()))),
            Part::Image {
                url,
                media_type,
                data,
            } => {
                let url = match (url, media_type, data) {
                    (Some(url), _, _) => Cow::Borrowed(url.as_str()),
                    (None, Some(mt), Some(data)) => Cow::Owned(format!("data:{mt};base64,{data}")),
                    _ => {
                        return Err(Error::invalid_params(
                            "an image part needs `url`, or `mediaType` and `data`",
                        ))
                    }
                };
                parts.push(WirePart::Image(url));
            }
            Part::ToolCall {
                id,
                name,
                arguments,
                ..
            } => tool_calls.push(ToolCall {
                id,
                name,
                arguments: arguments.to_string(),
            }),
            Part::ToolResult {
                tool_call_id,
                content,
                ..
            } => {
                let mut text = String::new();
                for p in content {
                    match p {
                        Part::Text { text: t } => text.push_str(t),
                        Part::Json { value } => text.push_str(&value.to_string()),
                        _ => {}
                    }
                }
                results.push(WireMessage::Result { tool_call_id, text });
            }
        }
    }
    if !parts.is_empty() || !tool_calls.is_empty() {
        let content = if parts.iter().all(|p| matches!(p, WirePart::Text(_))) {
            let texts = parts
                .into_iter()
                .map(|p| match p {
                    WirePart::Text(t) | WirePart::Image(t) => t,
                })
                .collect();
            Content::Text(texts)
        } else {
            Content::Parts(parts)
        };
        out.push(WireMessage::Chat {
            role: chat_role(m.role),
            content,
            tool_calls,
        });
    }
    out.extend(results);
    Ok(())
}
