//! The `http-template` format: a request body written as a JSON template with placeholders,
//! and JSONPath filters that pick the reply out of the answer, after OpenSearch ML Commons'
//! connector blueprints (`request_body` with `${parameters.NAME}`, docs.opensearch.org,
//! ml-commons-plugin/remote-models/blueprints and connector-input-output).
//!
//! The template is the *format*, so it lives in the model configuration's parameters
//! (`request_body`, `response_filter`, `stream_filter`, `stream_done`), beside the values its
//! placeholders take; the endpoint, method, headers and credentials are the *transport* and live
//! in the `http` provider's config (`provider/http_connector.rs`).
//!
//! This module owns rendering (placeholders, escaping, defaults) and reading answers with
//! JSONPath. It must never see a credential: `${credential.NAME}` inside a JSON string is left
//! as a marker that only the provider replaces, and inserted values are scrubbed of the
//! marker's delimiter so a prompt cannot forge one.

use serde_json::{json, Map, Value};
use serde_json_path::JsonPath;

use super::parameters::{self, validate_parameter};
use super::template::{
    cut, parse_placeholder, parse_rendered, pieces, placeholder_names, render, template_error,
};
pub(crate) use super::template::{BUILT_IN, CREDENTIAL_MARK};
use super::Parameters;
use super::{
    EventReader, Format, FormatSpec, ImageSupport, ModelReply, ModelRequest, ParameterSpec,
    ReplyBuilder, Request, StreamDecoder, StreamEvent,
};
use crate::error::{Error, ErrorKind, Result};
use crate::message::{Message, Part, Role, Usage};

pub(crate) const FORMAT: &str = "http-template";

pub(crate) const PARAMETERS: &[ParameterSpec] = &[
    ParameterSpec::string("request_body", "The JSON request body as a template (text, or a TOML/JSON table). \
            ${parameters.NAME} takes a parameter (JSON-escaped inside a JSON string, raw JSON \
            elsewhere), ${parameters.NAME:-default} gives a default; built in: \
            ${parameters.messages} (OpenAI-style [{role, content}]), ${parameters.prompt} (the \
            last user text), ${parameters.system}, ${parameters.model}, ${parameters.stream}, \
            ${parameters.images} (the last user message's images as base64 strings), \
            ${parameters.image_urls} (as data: URLs), the only way images are sent, and \
            ${parameters.response_schema} (the response schema, null without one); \
            ${credential.NAME} (inside a string) takes a credential of the http provider."),
    ParameterSpec::string("response_filter", "JSONPath (RFC 9535) of the reply text in a complete answer, such as \
            $.choices[0].message.content (default $)."),
    ParameterSpec::string("stream_filter", "JSONPath of the text delta in one stream event (SSE data or NDJSON line), \
            such as $.choices[0].delta.content; without it, replies are never streamed."),
    ParameterSpec::string("stream_done", "The end of a stream: an event whose data is this text (such as [DONE]), or, \
            when it starts with $, a JSONPath that finds a value other than false or null in \
            the last event (such as $.done, or Cohere's $.delta.finish_reason). Without it, a stream ends when the connection closes."),
];

/// The `http-template` format. Template parameters (any other name) are kept beside the four
/// above.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HttpTemplate;

/// The text parameter `name`, if set.
fn text<'p>(parameters: &'p Map<String, Value>, name: &str) -> Option<&'p str> {
    parameters.get(name).and_then(Value::as_str)
}

fn template(parameters: &Map<String, Value>) -> Result<&str> {
    text(parameters, "request_body").ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidParameter,
            "the http-template format needs a `request_body` parameter (the JSON body as a \
             template): set it in [model_configurations.NAME.parameters] (docs/PROVIDERS.md)",
        )
    })
}

/// The conversation in OpenAI's plain shape, `[{role, content}]`, content as text.
fn messages_json(messages: &[Message]) -> Value {
    Value::Array(
        messages
            .iter()
            .filter_map(|m| {
                let text = text_of(m);
                let role = match m.role {
                    Role::Tool => "user",
                    other => other.as_str(),
                };
                (!text.is_empty()).then(|| json!({"role": role, "content": text}))
            })
            .collect(),
    )
}

fn text_of(m: &Message) -> String {
    let mut out = Vec::new();
    for part in &m.content {
        match part {
            Part::Text { text } => out.push(text.clone()),
            Part::Json { value } => out.push(value.to_string()),
            Part::ToolResult { content, .. } => {
                for p in content {
                    if let Part::Text { text } = p {
                        out.push(text.clone());
                    }
                }
            }
            _ => {}
        }
    }
    out.join("\n")
}

fn compile(name: &str, path: &str) -> Result<JsonPath> {
    JsonPath::parse(path).map_err(|e| {
        Error::new(
            ErrorKind::InvalidParameter,
            format!("http-template parameter `{name}`: `{path}` is not a JSONPath: {e}"),
        )
    })
}

/// The first text `path` finds in `v`: a string as is, another value as its JSON text.
fn first_text(path: &JsonPath, v: &Value) -> Option<String> {
    path.query(v).first().and_then(|found| match found {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    })
}

/// Usage in the common shapes (OpenAI's and Anthropic's names, Cohere's `meta.tokens`).
fn usage_of(v: &Value) -> Option<Usage> {
    let u = v
        .get("usage")
        .or_else(|| v.get("meta").and_then(|m| m.get("tokens")))
        .filter(|u| u.is_object())?;
    let n = |keys: &[&str]| keys.iter().find_map(|k| u.get(*k).and_then(Value::as_u64));
    let input = n(&["prompt_tokens", "input_tokens"]);
    let output = n(&["completion_tokens", "output_tokens"]);
    (input.is_some() || output.is_some()).then(|| Usage {
        input_tokens: input.unwrap_or(0),
        output_tokens: output.unwrap_or(0),
        ..Usage::default()
    })
}

fn error_in(v: &Value) -> Option<String> {
    let e = v.get("error")?;
    Some(match e {
        Value::String(s) => s.clone(),
        Value::Object(_) => super::openai_chat::error_text(e),
        other => other.to_string(),
    })
}

/// What the `http-template` format is.
pub(crate) const SPEC: FormatSpec = FormatSpec {
    name: FORMAT,
    description: "A JSON request body template with placeholders and JSONPath filters for the reply (OpenSearch-style connector)",
    parameters: PARAMETERS,
    images: ImageSupport::NONE,
    native_tools: false,
    special: &[],
};

impl Format for HttpTemplate {
    fn spec(&self) -> &'static FormatSpec {
        &SPEC
    }

    /// The four format parameters are checked as usual (a table given as `request_body` is kept
    /// as its JSON text; filters must parse as JSONPath). Any other name is a template parameter:
    /// refused when it is built in, or when the template is known and does not use it.
    fn set_parameter(&self, parameters: &mut Parameters, name: &str, value: Value) -> Result<()> {
        let name = name.trim();
        if let Some(spec) = PARAMETERS
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
        {
            let value = match value {
                Value::Object(_) | Value::Array(_) if spec.name == "request_body" => {
                    Value::String(value.to_string())
                }
                other => other,
            };
            let (canonical, value) = validate_parameter(FORMAT, PARAMETERS, name, value)?;
            match value.as_str() {
                Some(t) if canonical == "request_body" => {
                    pieces(t)?;
                }
                Some(t) if canonical != "stream_done" || t.starts_with('$') => {
                    compile(canonical, t)?;
                }
                _ => {}
            }
            parameters::store(parameters, canonical, value);
            return Ok(());
        }
        if BUILT_IN.contains(&name) {
            return Err(Error::new(
                ErrorKind::InvalidParameter,
                format!("`{name}` is filled by genai in an http-template and cannot be set"),
            ));
        }
        if parse_placeholder(&format!("parameters.{name}")).is_none() {
            return Err(Error::new(
                ErrorKind::InvalidParameter,
                format!("`{name}` is not a parameter name (letters, digits, _ - .)"),
            ));
        }
        if let Some(template) = text(parameters, "request_body") {
            let used = placeholder_names(template);
            if !used.iter().any(|u| u == name) {
                let mut accepted: Vec<String> =
                    PARAMETERS.iter().map(|s| s.name.to_string()).collect();
                accepted.extend(used.into_iter().filter(|u| !BUILT_IN.contains(&u.as_str())));
                return Err(Error::new(
                    ErrorKind::InvalidParameter,
                    format!(
                        "`{name}` is not a parameter of this http-template (its request_body does \
                         not use ${{parameters.{name}}}); accepted: {}",
                        accepted.join(", ")
                    ),
                ));
            }
        }
        parameters::store(parameters, name, value);
        Ok(())
    }

    /// No stop parameter and no native tools: `options` only says whether to stream (when
    /// the template can).
    fn prepare(&self, request: &Request<'_>) -> Result<ModelRequest> {
        let (model, parameters, messages, options) = request.parts();
        if !options.tools.is_empty() {
            return Err(super::no_native_tools(FORMAT));
        }
        let template = template(parameters)?;
        let used = placeholder_names(template);
        let unused: Vec<&String> = parameters
            .keys()
            .filter(|k| !PARAMETERS.iter().any(|s| s.name == k.as_str()) && !used.contains(k))
            .collect();
        if !unused.is_empty() {
            return Err(template_error(format!(
                "parameter {} is set but the request_body template does not use it; it uses: {}",
                unused
                    .iter()
                    .map(|u| format!("`{u}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                used.join(", ")
            )));
        }
        let stream = options.stream && text(parameters, "stream_filter").is_some();
        let mut values = parameters.clone();
        for spec in PARAMETERS {
            values.remove(spec.name);
        }
        let system = messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(text_of)
            .collect::<Vec<_>>()
            .join("\n");
        let prompt = messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(text_of)
            .unwrap_or_default();
        values.insert("messages".into(), messages_json(messages));
        values.insert("prompt".into(), Value::from(prompt));
        values.insert("system".into(), Value::from(system));
        values.insert("model".into(), Value::from(model));
        values.insert("stream".into(), Value::Bool(stream));
        let (images, image_urls) = last_images(messages);
        values.insert("images".into(), Value::from(images));
        values.insert("image_urls".into(), Value::from(image_urls));
        let schema = options.schema.map(|s| s.schema.clone());
        values.insert("response_schema".into(), schema.unwrap_or(Value::Null));
        let body = parse_rendered(&render(template, &values)?)?;
        Ok(ModelRequest::new(FORMAT, model, body, stream))
    }

    fn extract(&self, parameters: &Map<String, Value>, body: &[u8]) -> Result<ModelReply> {
        let v: Value = serde_json::from_slice(body).map_err(|e| {
            Error::provider(format!(
                "the endpoint answered with invalid JSON ({e}): `{}`",
                cut(&String::from_utf8_lossy(body), 200)
            ))
        })?;
        let filter = text(parameters, "response_filter").unwrap_or("$");
        let path = compile("response_filter", filter)?;
        let text = match first_text(&path, &v) {
            Some(text) => text,
            None => {
                if let Some(e) = error_in(&v) {
                    return Err(Error::provider(e));
                }
                return Err(Error::provider(format!(
                    "response_filter `{filter}` matched nothing in the answer: `{}`",
                    cut(&v.to_string(), 300)
                )));
            }
        };
        Ok(ModelReply::assistant(
            vec![Part::text(text)],
            usage_of(&v),
            ["finish_reason", "stop_reason", "done_reason"]
                .iter()
                .find_map(|k| v.get(*k).and_then(Value::as_str))
                .map(str::to_string),
            v.get("model").and_then(Value::as_str).map(str::to_string),
        ))
    }

    fn decoder(&self, parameters: &Map<String, Value>) -> StreamDecoder {
        let path = |name: &str| text(parameters, name).and_then(|t| JsonPath::parse(t).ok());
        let done = match text(parameters, "stream_done") {
            Some(t) if t.starts_with('$') => path("stream_done").map(Done::Path),
            Some(t) => Some(Done::Marker(t.to_string())),
            None => None,
        };
        let events = Events {
            filter: path("stream_filter"),
            done,
            finished: false,
            events: 0,
        };
        StreamDecoder::new(events, ReplyBuilder::new())
    }

    /// Inline images, when the template places them (`${parameters.images}` or
    /// `${parameters.image_urls}`); none otherwise.
    fn images(&self, parameters: &Map<String, Value>) -> ImageSupport {
        let uses = text(parameters, "request_body").is_some_and(|t| {
            placeholder_names(t)
                .iter()
                .any(|n| n == "images" || n == "image_urls")
        });
        if uses {
            ImageSupport::INLINE
        } else {
            ImageSupport::NONE
        }
    }
}

/// The inline images of the last user message: base64 strings, and the same as data URLs.
fn last_images(messages: &[Message]) -> (Vec<String>, Vec<String>) {
    let mut images = Vec::new();
    let mut urls = Vec::new();
    if let Some(m) = messages.iter().rev().find(|m| m.role == Role::User) {
        for part in &m.content {
            if let Part::Image {
                media_type: Some(mt),
                data: Some(data),
                ..
            } = part
            {
                urls.push(format!("data:{mt};base64,{data}"));
                images.push(data.clone());
            }
        }
    }
    (images, urls)
}

enum Done {
    Marker(String),
    Path(JsonPath),
}

/// Reads a stream with the configuration's filters: the text delta of each event, and its end
/// (a marker event or a JSONPath that finds a true value; without one, any event).
struct Events {
    filter: Option<JsonPath>,
    done: Option<Done>,
    finished: bool,
    events: usize,
}

impl EventReader for Events {
    fn read(&mut self, event: &StreamEvent, reply: &mut ReplyBuilder) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if let Some(Done::Marker(m)) = &self.done {
            if data == m.as_str() {
                self.finished = true;
                return Ok(());
            }
        }
        self.events += 1;
        let v: Value = serde_json::from_str(data).map_err(|e| {
            Error::provider(format!(
                "the endpoint's stream sent an event that is not JSON ({e}): `{}`",
                cut(data, 200)
            ))
        })?;
        if event.event.as_deref() == Some("error") || v.get("error").is_some() {
            return Err(Error::provider(format!(
                "the endpoint's stream reported an error: {}",
                error_in(&v).unwrap_or_else(|| cut(data, 300))
            )));
        }
        if let Some(u) = usage_of(&v) {
            reply.usage = Some(u);
        }
        if let Some(m) = v.get("model").and_then(Value::as_str) {
            reply.model = Some(m.to_string());
        }
        if let Some(delta) = self.filter.as_ref().and_then(|p| first_text(p, &v)) {
            reply.text(&delta);
        }
        if let Some(Done::Path(p)) = &self.done {
            if matches!(p.query(&v).first(), Some(found) if !matches!(found, Value::Null | Value::Bool(false)))
            {
                self.finished = true;
            }
        }
        Ok(())
    }

    /// The reply has one text part, empty when nothing came; a stream without an end rule is
    /// complete after one event.
    fn finish(self: Box<Self>, reply: ReplyBuilder) -> Result<ModelReply> {
        let complete = match self.done {
            Some(_) => self.finished,
            None => self.events > 0,
        };
        if !complete {
            return Err(Error::provider(
                "the stream ended before the reply was complete",
            ));
        }
        let mut reply = reply.into_reply()?;
        if reply.message.content.is_empty() {
            reply.message.content.push(Part::text(""));
        }
        Ok(reply)
    }
}

#[cfg(test)]
#[path = "http_template_tests.rs"]
mod tests;
