//! Wire formats: how messages become a request body and an answer becomes a reply, one file
//! per format (`openai-chat`, `claude-messages`, `gemini`, `ollama-chat`, `bedrock-converse`,
//! `http-template`).
//!
//! A [`Format`] is stateless: it takes the model id, the parameter values, the messages and the
//! options of one [`Request`] as arguments, so a [`ModelConfiguration`] is plain data (a format, a model id,
//! parameters) that nobody clones and mutates per turn. Every stream decoder feeds the one
//! [`ReplyBuilder`]; a format's decoder keeps only what reads its own events. This module must
//! never do I/O nor import the providers: moving bytes is their job, and they import this.

pub(crate) mod bedrock_converse;
pub mod cache;
pub(crate) mod claude_messages;
pub(crate) mod gemini;
pub(crate) mod http_template;
pub(crate) mod ollama_chat;
pub mod openai_chat;
mod openai_chat_answer;
mod openai_chat_body;
pub mod openai_chat_reply;
pub mod parameters;
#[cfg(any(test, feature = "testing"))]
pub mod read_back;
pub(crate) mod reply;
pub mod sampling;
pub(crate) mod schema;
pub mod template;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod wire;

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::message::{Message, Part, Role, Usage};
pub use parameters::{validate_parameter, ParameterSpec, ParameterType};
pub use reply::{EventReader, ReplyBuilder, StreamDecoder};
pub use schema::{ResponseSchema, ToolChoice};

/// The built-in formats, in the order they are listed.
pub const ALL: &[&dyn Format] = &[
    &openai_chat::OpenAiChat,
    &claude_messages::ClaudeMessages,
    &ollama_chat::OllamaChat,
    &gemini::Gemini,
    &http_template::HttpTemplate,
    &bedrock_converse::BedrockConverse,
];

/// One event of a streamed answer, framing removed: an SSE event (its type, `None` for the
/// default `message`, and its data), an NDJSON line, or a decoded AWS event-stream message
/// (its `:event-type` and JSON payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamEvent {
    pub event: Option<String>,
    pub data: String,
}

impl StreamEvent {
    pub fn data(data: impl Into<String>) -> StreamEvent {
        StreamEvent {
            event: None,
            data: data.into(),
        }
    }
}

/// A prepared request: the body and what the provider needs to route it.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The format kind, so a provider serving several formats picks the endpoint.
    pub(crate) format: &'static str,
    pub(crate) model: String,
    pub(crate) body: Body,
    pub(crate) stream: bool,
}

impl ModelRequest {
    pub fn new(format: &'static str, model: &str, body: Value, stream: bool) -> ModelRequest {
        ModelRequest {
            format,
            model: model.to_string(),
            body: Body::Tree(body),
            stream,
        }
    }

    /// The model id it asks for.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Its body.
    pub fn body(&self) -> &Value {
        self.body.tree()
    }

    /// Whether the answer is asked for as a stream.
    pub fn stream(&self) -> bool {
        self.stream
    }
}

/// A request's body: the JSON tree a format built, or the bytes a format wrote straight from
/// its types (`openai-chat`, on every gateway request), whose tree is parsed from them the
/// first time a provider reads it (Azure, the HTTP connector, the local engine). Either way
/// the bytes sent are the same. It derefs to the tree.
#[derive(Clone)]
pub(crate) enum Body {
    Tree(Value),
    Written {
        bytes: bytes::Bytes,
        tree: OnceLock<Value>,
    },
}

impl Body {
    /// The body as a JSON tree.
    pub(crate) fn tree(&self) -> &Value {
        match self {
            Body::Tree(v) => v,
            Body::Written { bytes, tree } => tree.get_or_init(|| {
                serde_json::from_slice(bytes).expect("a written body is JSON genai wrote")
            }),
        }
    }
}

impl std::ops::Deref for Body {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.tree()
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.tree().fmt(f)
    }
}

impl PartialEq<Value> for Body {
    fn eq(&self, other: &Value) -> bool {
        self.tree() == other
    }
}

/// What the model answered.
#[derive(Debug, Clone)]
pub struct ModelReply {
    pub message: Message,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
    /// The model that answered, as the provider reports it.
    pub(crate) model: Option<String>,
    /// The request's stop sequence the reply ended at, where the provider says which
    /// (Anthropic's `stop_sequence`).
    pub stop_sequence: Option<String>,
}

impl ModelReply {
    /// An assistant reply with these parts.
    pub fn assistant(
        content: Vec<Part>,
        usage: Option<Usage>,
        finish_reason: Option<String>,
        model: Option<String>,
    ) -> ModelReply {
        ModelReply {
            message: Message {
                role: Role::Assistant,
                content,
                from: None,
            },
            usage,
            finish_reason,
            model,
            stop_sequence: None,
        }
    }
}

/// The finish reason of a reply that genai's local engine stopped because it kept repeating
/// itself (`genai-local`'s `repetition.rs`). The agent reports it as `length`, the reason
/// clients know for a reply cut short, with a note saying why (`ModelReply::cut_short`).
pub const REPEATED: &str = "repetition";

/// How the note on a reply cut short starts, in a turn's details.
pub(crate) const CUT: &str = "the reply was cut: ";

/// Whether a finish reason says the reply was cut at its token limit, in each API's words.
pub fn at_token_limit(finish_reason: &str) -> bool {
    matches!(
        finish_reason,
        "length" | "max_tokens" | "MAX_TOKENS" | "max_output_tokens"
    )
}

impl ModelReply {
    /// Why this reply was cut short, as a note for the user (`None`: it ended on its own);
    /// the local engine's [`REPEATED`] becomes `length`.
    pub(crate) fn cut_short(&mut self) -> Option<String> {
        let why = match self.finish_reason.as_deref()? {
            REPEATED => {
                self.finish_reason = Some("length".to_string());
                "it repeated itself"
            }
            r if at_token_limit(r) => "it reached its token limit (max_tokens)",
            _ => return None,
        };
        Some(format!("{CUT}{why}"))
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

/// Parameter values by name.
pub(crate) type Parameters = Map<String, Value>;

/// One request to prepare: the model id, the parameter values, the messages (system message
/// first, if any) and the options.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub(crate) model: &'a str,
    pub(crate) parameters: &'a Parameters,
    pub(crate) messages: &'a [Message],
    pub(crate) options: RequestOptions<'a>,
}

impl<'a> Request<'a> {
    /// The model id, parameters, messages and options.
    pub(crate) fn parts(&self) -> (&'a str, &'a Parameters, &'a [Message], RequestOptions<'a>) {
        (self.model, self.parameters, self.messages, self.options)
    }

    /// The prepared request with this body.
    pub(crate) fn prepared(&self, format: &'static str, body: Map<String, Value>) -> ModelRequest {
        ModelRequest::new(format, self.model, Value::Object(body), self.options.stream)
    }

    /// The prepared request with this body, written as bytes.
    pub(crate) fn written(&self, format: &'static str, bytes: Vec<u8>) -> ModelRequest {
        ModelRequest {
            format,
            model: self.model.to_string(),
            body: Body::Written {
                bytes: bytes.into(),
                tree: OnceLock::new(),
            },
            stream: self.options.stream,
        }
    }
}

/// What one request asks beyond the messages: streaming, the tools offered (native tool calls
/// only), stop sequences added to the ones the parameters set (ReAct's `Observation:`), and
/// the JSON Schema the reply must match (structured output).
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestOptions<'a> {
    pub(crate) stream: bool,
    pub(crate) tools: &'a [ToolSpec],
    pub(crate) stop: &'a [&'a str],
    pub(crate) schema: Option<&'a ResponseSchema>,
}

impl RequestOptions<'_> {
    /// A request with no tools and no extra stop sequence.
    pub fn plain(stream: bool) -> RequestOptions<'static> {
        RequestOptions {
            stream,
            ..RequestOptions::default()
        }
    }
}

/// What a format is: its name, a line describing it, its parameters, the images it carries
/// (unless its parameters decide), and whether it has native tool calls.
#[derive(Debug, Clone, Copy)]
pub struct FormatSpec {
    /// The format kind name, such as `openai-chat`.
    pub(crate) name: &'static str,
    /// One line for `genai params` and `ListComponents`.
    pub(crate) description: &'static str,
    pub parameters: &'static [ParameterSpec],
    pub(crate) images: ImageSupport,
    /// Whether the format sends tools and reads tool calls natively (else the caller uses a
    /// text protocol, and `prepare` refuses tools).
    pub(crate) native_tools: bool,
    /// The parameters that take more than one JSON type, which `parameters` cannot say: each
    /// is checked by its own function instead.
    pub(crate) special: &'static [SpecialParameter],
}

/// A parameter checked by its format's own function, which turns a value into the one stored.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpecialParameter {
    pub(crate) name: &'static str,
    pub(crate) check: fn(Value) -> Result<Value>,
}

/// One wire format. Implementations are unit structs: everything a request needs comes in as
/// arguments.
pub trait Format: Send + Sync {
    /// What this format is.
    fn spec(&self) -> &'static FormatSpec;
    /// The format kind name, such as `openai-chat`.
    fn name(&self) -> &'static str {
        self.spec().name
    }
    /// Sets `name` in `parameters` after checking its name (case-insensitively), type and
    /// range, or by its own check when it is special; `null` removes it. The error names the
    /// accepted parameters.
    fn set_parameter(&self, parameters: &mut Parameters, name: &str, value: Value) -> Result<()> {
        let spec = self.spec();
        match spec
            .special
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
        {
            Some(special) if !value.is_null() => {
                parameters::store(parameters, special.name, (special.check)(value)?);
                Ok(())
            }
            _ => parameters::set_checked(spec.name, spec.parameters, parameters, name, value),
        }
    }
    /// Which image parts this format carries with these parameters.
    fn images(&self, _parameters: &Parameters) -> ImageSupport {
        self.spec().images
    }
    /// Builds the request body for these messages (system message first, if any).
    fn prepare(&self, request: &Request<'_>) -> Result<ModelRequest>;
    /// Turns a complete response body into a reply.
    fn extract(&self, parameters: &Map<String, Value>, body: &[u8]) -> Result<ModelReply>;
    /// A decoder for one streamed response.
    fn decoder(&self, parameters: &Map<String, Value>) -> StreamDecoder;
    /// What of a response schema this format cannot send, one line each (for the details).
    fn schema_notes(&self, _schema: &ResponseSchema) -> Vec<String> {
        Vec::new()
    }
}

/// The refusal of tools by a format without native tool calls.
pub(crate) fn no_native_tools(format: &str) -> Error {
    Error::invalid_params(format!(
        "the {format} format has no native tool calls in genai yet"
    ))
}

/// A model configuration: one wire format, a model id and parameter values.
#[derive(Clone)]
pub struct ModelConfiguration {
    pub format: &'static dyn Format,
    pub model: String,
    pub(crate) parameters: Map<String, Value>,
}

impl std::fmt::Debug for ModelConfiguration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelConfiguration")
            .field("format", &self.format.name())
            .field("model", &self.model)
            .field("parameters", &self.parameters)
            .finish()
    }
}

impl ModelConfiguration {
    /// A configuration with no parameter set.
    pub(crate) fn new(format: &'static dyn Format, model: impl Into<String>) -> ModelConfiguration {
        ModelConfiguration {
            format,
            model: model.into(),
            parameters: Map::new(),
        }
    }

    /// Sets a parameter, checked by the format (`null` removes it).
    pub(crate) fn set_parameter(&mut self, name: &str, value: Value) -> Result<()> {
        self.format.set_parameter(&mut self.parameters, name, value)
    }

    /// Which image parts this configuration carries.
    pub(crate) fn images(&self) -> ImageSupport {
        self.format.images(&self.parameters)
    }

    /// The request for these messages.
    pub(crate) fn prepare(
        &self,
        messages: &[Message],
        options: &RequestOptions<'_>,
    ) -> Result<ModelRequest> {
        self.format.prepare(&Request {
            model: &self.model,
            parameters: &self.parameters,
            messages,
            options: *options,
        })
    }

    /// The reply of a complete response body.
    pub(crate) fn extract(&self, body: &[u8]) -> Result<ModelReply> {
        self.format.extract(&self.parameters, body)
    }

    /// A decoder for one streamed response.
    pub(crate) fn decoder(&self) -> StreamDecoder {
        self.format.decoder(&self.parameters)
    }

    /// `prepare` without tools or extra stop sequences (what most tests need).
    #[cfg(test)]
    pub fn prepare_request(&self, messages: &[Message], stream: bool) -> Result<ModelRequest> {
        self.prepare(messages, &RequestOptions::plain(stream))
    }

    /// `prepare`, not streamed, offering these tools (what the tool tests need).
    #[cfg(test)]
    pub(crate) fn prepare_with_tools(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<ModelRequest> {
        self.prepare(
            messages,
            &RequestOptions {
                tools,
                ..RequestOptions::plain(false)
            },
        )
    }
}

/// Which image parts a format can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImageSupport {
    /// Inline bytes (`mediaType` + base64 `data`).
    pub(crate) inline: bool,
    /// A URL the provider fetches itself.
    pub(crate) url: bool,
}

impl ImageSupport {
    pub(crate) const NONE: ImageSupport = ImageSupport {
        inline: false,
        url: false,
    };
    pub(crate) const INLINE: ImageSupport = ImageSupport {
        inline: true,
        url: false,
    };
    pub(crate) const ALL: ImageSupport = ImageSupport {
        inline: true,
        url: true,
    };
}

/// Refuses, before any request is sent, image parts that `format` cannot carry or whose inline
/// bytes exceed the provider's `max_bytes` per image.
pub(crate) fn check_images(
    messages: &[Message],
    format: &str,
    support: ImageSupport,
    provider: &str,
    max_bytes: Option<usize>,
) -> Result<()> {
    for part in messages.iter().flat_map(|m| &m.content) {
        let Part::Image { url, data, .. } = part else {
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

#[cfg(test)]
mod tests {
    use super::testing::assert_mentions;
    use super::*;

    #[test]
    fn images_are_checked_before_sending() {
        let image = |url: Option<&str>, data: Option<String>| Message {
            role: crate::message::Role::User,
            content: vec![Part::Image {
                url: url.map(str::to_string),
                media_type: data.as_ref().map(|_| "image/png".to_string()),
                data,
            }],
            from: None,
        };
        let small = vec![image(None, Some("A".repeat(400)))];
        assert!(check_images(&small, "f", ImageSupport::INLINE, "p", Some(300)).is_ok());
        let e = check_images(&small, "f", ImageSupport::INLINE, "p", Some(200)).unwrap_err();
        assert_mentions(&e, "limit of 0.2 KiB");
        let e = check_images(&small, "f", ImageSupport::NONE, "p", None).unwrap_err();
        assert_mentions(&e, "cannot take images");
        let by_url = vec![image(Some("https://x/y.png"), None)];
        assert!(check_images(&by_url, "f", ImageSupport::ALL, "p", None).is_ok());
        let e = check_images(&by_url, "f", ImageSupport::INLINE, "p", None).unwrap_err();
        assert_mentions(&e, "by URL");
    }
}
