//! Model configurations: one wire format plus its parameters (DESIGN §1).
//!
//! A model configuration turns messages into a request body (`prepare_request`), a response
//! body into a message (`extract_result`), a stream into deltas (its [`StreamDecoder`]), and
//! validates parameter changes. It must never do I/O: moving bytes is the provider's job.

pub mod bedrock_converse;
pub mod claude_messages;
pub mod gemini;
pub mod http_template;
pub mod ollama_chat;
pub mod openai_chat;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::message::{Message, Usage};
pub use crate::provider::StreamEvent;

/// The accessors every format implements the same way, for a struct with fields
/// `model: String` and `parameters: Map<String, Value>` that is `Clone`, in a module with the
/// consts `FORMAT` and `PARAMETERS`. Used inside `impl ModelConfiguration for ...`.
macro_rules! model_accessors {
    () => {
        fn format(&self) -> &'static str {
            FORMAT
        }

        fn model(&self) -> &str {
            &self.model
        }

        fn parameter_specs(&self) -> &'static [ParameterSpec] {
            PARAMETERS
        }

        fn parameters(&self) -> &Map<String, Value> {
            &self.parameters
        }

        fn parameters_mut(&mut self) -> &mut Map<String, Value> {
            &mut self.parameters
        }

        fn clone_box(&self) -> Box<dyn ModelConfiguration> {
            Box::new(self.clone())
        }
    };
}
pub(crate) use model_accessors;

/// A prepared request: the body and what the provider needs to route it.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The format kind, so a provider serving several formats picks the endpoint.
    pub format: &'static str,
    pub model: String,
    pub body: Value,
    pub stream: bool,
}

/// What the model answered.
#[derive(Debug, Clone)]
pub struct ModelReply {
    pub message: Message,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
    /// The model that answered, as the provider reports it.
    pub model: Option<String>,
}

/// Turns a streamed response, one event at a time, into text deltas and a final reply.
pub trait StreamDecoder: Send {
    /// Takes one event (the provider removed the framing) and returns the text deltas it carries.
    fn feed(&mut self, event: &StreamEvent) -> Result<Vec<String>>;
    /// Ends the stream; an error when the stream stopped before the reply was complete.
    fn finish(self: Box<Self>) -> Result<ModelReply>;
    /// The pieces of tool calls read since the last call, in order (a format that does not
    /// stream tool calls returns none; its calls are still in the final reply).
    fn take_tool_call_deltas(&mut self) -> Vec<ToolCallDelta> {
        Vec::new()
    }
}

/// A piece of a tool call as the model streams it: which call of the reply it belongs to (a key
/// the same for every piece of one call, in the order of the calls), the call's id and wire
/// name when they arrive (usually with the first piece), and the next characters of its JSON
/// arguments.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolCallDelta {
    pub index: usize,
    pub id: Option<String>,
    pub name: Option<String>,
    pub arguments: String,
}

/// A tool as a format sends it to the model: a wire name (letters, digits, `_`, `-`: what
/// every native tool API accepts), a description and the JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// Which image parts a format can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImageSupport {
    /// Inline bytes (`mediaType` + base64 `data`).
    pub inline: bool,
    /// A URL the provider fetches itself.
    pub url: bool,
}

impl ImageSupport {
    pub const NONE: ImageSupport = ImageSupport {
        inline: false,
        url: false,
    };
    pub const INLINE: ImageSupport = ImageSupport {
        inline: true,
        url: false,
    };
    pub const ALL: ImageSupport = ImageSupport {
        inline: true,
        url: true,
    };
}

/// Refuses, before any request is sent, image parts that `format` cannot carry or whose inline
/// bytes exceed the provider's `max_bytes` per image.
pub fn check_images(
    messages: &[Message],
    format: &str,
    support: ImageSupport,
    provider: &str,
    max_bytes: Option<usize>,
) -> Result<()> {
    for part in messages.iter().flat_map(|m| &m.content) {
        let crate::message::Part::Image { url, data, .. } = part else {
            continue;
        };
        if url.is_some() && !support.url {
            let how = if support.inline {
                "send the image's bytes instead (`genai ask -a` downloads URLs)"
            } else {
                "choose a format that takes images"
            };
            return Err(Error::invalid_params(format!(
                "the {format} format cannot take images by URL: {how}"
            )));
        }
        if let Some(data) = data {
            if !support.inline {
                return Err(Error::invalid_params(format!(
                    "the {format} format cannot take images"
                )));
            }
            // base64: 4 characters carry 3 bytes.
            let bytes = data.trim_end_matches('=').len() * 3 / 4;
            if let Some(max) = max_bytes.filter(|max| bytes > *max) {
                return Err(Error::invalid_params(format!(
                    "an image of {} exceeds provider {provider}'s limit of {} per image",
                    human_bytes(bytes),
                    human_bytes(max)
                )));
            }
        }
    }
    Ok(())
}

fn human_bytes(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.1} KiB", n as f64 / 1024.0)
    }
}

/// The type of a parameter, with its range.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ParameterType {
    Number {
        min: f64,
        max: f64,
    },
    Integer {
        min: i64,
        max: i64,
    },
    String,
    /// A string or a list of strings (stop sequences).
    StringList,
    Boolean,
    Object,
}

/// One parameter a format accepts.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ParameterSpec {
    pub name: &'static str,
    #[serde(flatten)]
    pub kind: ParameterType,
    pub description: &'static str,
}

/// One wire format with its model id and parameter values.
pub trait ModelConfiguration: Send + Sync {
    /// The format kind name, such as `openai-chat`.
    fn format(&self) -> &'static str;
    /// The model id sent to the provider.
    fn model(&self) -> &str;
    /// The parameters this format accepts.
    fn parameter_specs(&self) -> &'static [ParameterSpec];
    /// The parameter values set so far.
    fn parameters(&self) -> &Map<String, Value>;
    fn parameters_mut(&mut self) -> &mut Map<String, Value>;
    /// Builds the request body for these messages (system message first, if any).
    fn prepare_request(&self, messages: &[Message], stream: bool) -> Result<ModelRequest>;
    /// Turns a complete response body into a reply.
    fn extract_result(&self, body: &[u8]) -> Result<ModelReply>;
    /// A decoder for one streamed response.
    fn stream_decoder(&self) -> Box<dyn StreamDecoder>;
    /// Offers tools to the model in every request from now on. A format without native tool
    /// calls refuses a non-empty list (the caller then falls back to a text protocol).
    fn set_tools(&mut self, tools: &[ToolSpec]) -> Result<()> {
        if tools.is_empty() {
            return Ok(());
        }
        Err(Error::invalid_params(format!(
            "the {} format has no native tool calls in genai yet",
            self.format()
        )))
    }
    /// Which image parts this format carries (none unless it says so).
    fn images(&self) -> ImageSupport {
        ImageSupport::NONE
    }
    fn clone_box(&self) -> Box<dyn ModelConfiguration>;

    /// Sets a parameter after checking its name (case-insensitively), type and range;
    /// `null` removes it. The error names the accepted parameters.
    fn set_parameter(&mut self, name: &str, value: Value) -> Result<()> {
        let (canonical, value) =
            validate_parameter(self.format(), self.parameter_specs(), name, value)?;
        if value.is_null() {
            self.parameters_mut().remove(canonical);
        } else {
            self.parameters_mut().insert(canonical.to_string(), value);
        }
        Ok(())
    }
}

/// Checks one parameter against a format's specs; strings are converted to the spec's type,
/// so `-p temperature=0.2` works from a shell.
pub fn validate_parameter(
    format: &str,
    specs: &'static [ParameterSpec],
    name: &str,
    value: Value,
) -> Result<(&'static str, Value)> {
    let Some(spec) = specs.iter().find(|s| s.name.eq_ignore_ascii_case(name)) else {
        let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
        return Err(Error::new(
            ErrorKind::InvalidParameter,
            format!(
                "`{name}` is not a parameter of {format}; accepted: {}",
                names.join(", ")
            ),
        ));
    };
    if value.is_null() {
        return Ok((spec.name, value));
    }
    let bad = |why: String| {
        Error::new(
            ErrorKind::InvalidParameter,
            format!("{format} parameter `{}`: {why}", spec.name),
        )
    };
    let text_value = value.as_str().map(|t| t.trim().to_string());
    let as_text = text_value.as_deref();
    let value = match spec.kind {
        ParameterType::Number { min, max } => {
            let n = match (&value, as_text) {
                (Value::Number(n), _) => n.as_f64(),
                (_, Some(t)) => t.parse::<f64>().ok(),
                _ => None,
            }
            .filter(|n| n.is_finite())
            .ok_or_else(|| bad(format!("expected a number, got {value}")))?;
            if n < min || n > max {
                return Err(bad(format!("{n} is outside {min}..={max}")));
            }
            Value::from(n)
        }
        ParameterType::Integer { min, max } => {
            let n = match (&value, as_text) {
                (Value::Number(n), _) => n.as_i64(),
                (_, Some(t)) => t.parse::<i64>().ok(),
                _ => None,
            }
            .ok_or_else(|| bad(format!("expected an integer, got {value}")))?;
            if n < min || n > max {
                return Err(bad(format!("{n} is outside {min}..={max}")));
            }
            Value::from(n)
        }
        ParameterType::String => match value {
            Value::String(_) => value,
            other => return Err(bad(format!("expected a string, got {other}"))),
        },
        ParameterType::StringList => match value {
            Value::String(s) => Value::from(vec![s]),
            Value::Array(items) if items.iter().all(Value::is_string) => Value::Array(items),
            other => {
                return Err(bad(format!(
                    "expected a string or a list of strings, got {other}"
                )))
            }
        },
        ParameterType::Boolean => match (&value, as_text) {
            (Value::Bool(_), _) => value,
            (_, Some("true")) => Value::Bool(true),
            (_, Some("false")) => Value::Bool(false),
            _ => return Err(bad(format!("expected true or false, got {value}"))),
        },
        ParameterType::Object => match (value, text_value) {
            (Value::Object(o), _) => Value::Object(o),
            (_, Some(t)) => match serde_json::from_str::<Value>(&t) {
                Ok(Value::Object(o)) => Value::Object(o),
                _ => return Err(bad("expected a JSON object".into())),
            },
            (other, None) => return Err(bad(format!("expected a JSON object, got {other}"))),
        },
    };
    Ok((spec.name, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[ParameterSpec] = &[
        ParameterSpec {
            name: "temperature",
            kind: ParameterType::Number { min: 0.0, max: 2.0 },
            description: "",
        },
        ParameterSpec {
            name: "max_tokens",
            kind: ParameterType::Integer { min: 1, max: 1000 },
            description: "",
        },
        ParameterSpec {
            name: "stop",
            kind: ParameterType::StringList,
            description: "",
        },
    ];

    #[test]
    fn names_match_case_insensitively_and_values_keep_their_case() {
        let (n, v) = validate_parameter("f", SPECS, "Temperature", Value::from("0.5")).unwrap();
        assert_eq!((n, v), ("temperature", Value::from(0.5)));
        let (_, v) = validate_parameter("f", SPECS, "STOP", Value::from("END")).unwrap();
        assert_eq!(v, serde_json::json!(["END"]));
    }

    #[test]
    fn refusals_name_the_accepted_parameters() {
        let e = validate_parameter("f", SPECS, "temp", Value::from(1)).unwrap_err();
        assert!(
            e.message.contains("temperature, max_tokens, stop"),
            "{}",
            e.message
        );
        let e = validate_parameter("f", SPECS, "temperature", Value::from(3)).unwrap_err();
        assert!(e.message.contains("outside"), "{}", e.message);
        assert!(validate_parameter("f", SPECS, "max_tokens", Value::from(1.5)).is_err());
    }

    #[test]
    fn images_are_checked_before_sending() {
        let image = |url: Option<&str>, data: Option<String>| Message {
            role: crate::message::Role::User,
            content: vec![crate::message::Part::Image {
                url: url.map(str::to_string),
                media_type: data.as_ref().map(|_| "image/png".to_string()),
                data,
            }],
            from: None,
        };
        let small = vec![image(None, Some("A".repeat(400)))];
        assert!(check_images(&small, "f", ImageSupport::INLINE, "p", Some(300)).is_ok());
        let e = check_images(&small, "f", ImageSupport::INLINE, "p", Some(200)).unwrap_err();
        assert!(e.message.contains("limit of 0.2 KiB"), "{}", e.message);
        let e = check_images(&small, "f", ImageSupport::NONE, "p", None).unwrap_err();
        assert!(e.message.contains("cannot take images"), "{}", e.message);
        let by_url = vec![image(Some("https://x/y.png"), None)];
        assert!(check_images(&by_url, "f", ImageSupport::ALL, "p", None).is_ok());
        let e = check_images(&by_url, "f", ImageSupport::INLINE, "p", None).unwrap_err();
        assert!(e.message.contains("by URL"), "{}", e.message);
    }
}
