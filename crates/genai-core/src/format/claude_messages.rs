//! The `claude-messages` format: Anthropic's Messages API, spoken by the Anthropic API and by
//! Amazon Bedrock's InvokeModel for Claude models, with its stream decoder beside it.
//!
//! It owns the JSON shape of that API's requests, responses and stream events, and nothing
//! else: no HTTP, no keys, no URLs, no headers. [`request_body`] is the one place a body is
//! built, so every provider sends the same shape and post-processes only what its transport
//! needs (the `anthropic` provider moves `anthropic_version`/`anthropic_beta` into headers;
//! Bedrock drops `model` and `stream` and keeps `anthropic_version` in the body).
//!
//! Wire shapes: Anthropic's documentation under <https://docs.anthropic.com/en/> (`api/messages`,
//! `docs/build-with-claude/` `streaming`, `vision`, `tool-use`, and `api/errors`).

use serde_json::{json, Map, Value};

use super::cache;
use super::parameters::{self, with_stops};
use super::reply::{body_json, event_json};
use super::sampling;
use super::schema::{ToolChoice, TOOL_CHOICE};
use super::wire::{arguments_object, content_blocks, str_field, BlockShapes, ImageFields};
use super::{
    EventReader, Format, FormatSpec, ImageSupport, ModelReply, ModelRequest, ParameterSpec,
    ReplyBuilder, Request, SpecialParameter, StreamDecoder, StreamEvent,
};
use crate::error::{Error, ErrorKind, Result};
use crate::message::{Message, Part, Role, Usage};

pub const FORMAT: &str = "claude-messages";

/// `max_tokens` is required by the API; this is sent when the parameter is unset.
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

/// The parameter naming the API version. It travels in the body built by [`request_body`]; a
/// provider that sends it as a header (the `anthropic` provider) removes it from the body.
pub const VERSION_PARAMETER: &str = "anthropic_version";

/// The parameter naming beta features, a list. Same handling as [`VERSION_PARAMETER`]: the
/// `anthropic` provider sends it as the `anthropic-beta` header, Bedrock keeps it in the body.
pub const BETA_PARAMETER: &str = "anthropic_beta";

pub const PARAMETERS: &[ParameterSpec] = &[
    sampling::MAX_TOKENS.described(
        "The most tokens the reply may have (required by the API; \
         4096 when unset).",
    ),
    sampling::TEMPERATURE.numbers_between(0.0, 1.0),
    sampling::TOP_P,
    sampling::TOP_K.described("Sample only from the K most likely tokens."),
    sampling::STOP
        .named("stop_sequences")
        .described("Sequences where generation stops (always sent as a list)."),
    ParameterSpec::string(
        VERSION_PARAMETER,
        "The API version: the anthropic-version header on the anthropic provider \
                      (default 2023-06-01), in the body on Bedrock (default bedrock-2023-05-31).",
    ),
    ParameterSpec::string_list(
        BETA_PARAMETER,
        "Beta features to enable: the anthropic-beta header on the anthropic \
                      provider, in the body on Bedrock.",
    ),
    ParameterSpec::object(
        "metadata",
        "Such as {\"user_id\":\"...\"}: an opaque end-user id.",
    ),
    ParameterSpec::object(
        "thinking",
        "Extended thinking: a budget of thinking tokens (1024 or \
         more, the same as {\"type\":\"enabled\",\"budget_tokens\":N}), false to turn it \
         off, or the API's object. The thinking comes back as reasoning; max_tokens, when \
         unset, becomes the budget plus 4096.",
    ),
    ParameterSpec::string("service_tier", "auto or standard_only."),
    TOOL_CHOICE,
    cache::CACHE_SPEC,
    cache::CACHE_TTL_SPEC,
];

/// The `claude-messages` format.
#[derive(Debug, Clone, Copy)]
pub struct ClaudeMessages;

/// What the `claude-messages` format is.
pub const SPEC: FormatSpec = FormatSpec {
    name: FORMAT,
    description: "Anthropic Messages API (Claude on Anthropic and on Amazon Bedrock)",
    parameters: PARAMETERS,
    images: ImageSupport::ALL,
    native_tools: true,
    // `thinking` also takes a budget or `false`.
    special: &[SpecialParameter {
        name: "thinking",
        check: thinking_value,
    }],
};

impl Format for ClaudeMessages {
    fn spec(&self) -> &'static FormatSpec {
        &SPEC
    }

    fn prepare(&self, request: &Request<'_>) -> Result<ModelRequest> {
        let (model, parameters, messages, options) = request.parts();
        let parameters = with_stops(PARAMETERS, parameters, options.stop);
        let mut body = request_body(model, &parameters, messages, options.stream)?;
        let answer = options.schema.map(|s| s.forced_tool()).transpose()?;
        let choice = ToolChoice::of(&parameters, options.tools)?;
        let tools = options.tools.iter().chain(answer.as_ref());
        let tools: Vec<Value> = tools
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(c) = ToolChoice::with_answer(answer.as_ref(), options.tools, choice) {
            body.insert("tool_choice".into(), c.claude());
        }
        cache::mark_claude(&mut body, model, &parameters);
        Ok(request.prepared(FORMAT, body))
    }

    fn extract(&self, _: &Map<String, Value>, body: &[u8]) -> Result<ModelReply> {
        extract_result(body)
    }

    fn decoder(&self, _: &Map<String, Value>) -> StreamDecoder {
        StreamDecoder::new(Events, ReplyBuilder::with_strict_arguments())
    }
}

/// The fewest thinking tokens the API accepts.
pub const MIN_THINKING_BUDGET: u64 = 1024;

/// `thinking` as the API takes it: a budget (a number, or numeric text) becomes
/// `{"type":"enabled","budget_tokens":N}`, `false` (or "off", "disabled") `{"type":"disabled"}`;
/// an object (or its JSON text) needs a `type`, and an enabled one a budget of at least
/// [`MIN_THINKING_BUDGET`].
fn thinking_value(value: Value) -> Result<Value> {
    let bad = |why: String| {
        Error::new(
            ErrorKind::InvalidParameter,
            format!("{FORMAT} parameter `thinking`: {why}"),
        )
    };
    let text = value.as_str().map(|t| t.trim().to_string());
    let object = match (value, text.as_deref()) {
        (Value::Bool(false), _) | (_, Some("false" | "off" | "disabled")) => {
            return Ok(json!({"type": "disabled"}))
        }
        (Value::Number(n), _) => json!({"type": "enabled", "budget_tokens": n}),
        (_, Some(t)) if t.parse::<u64>().is_ok() => {
            json!({"type": "enabled", "budget_tokens": t.parse::<u64>().unwrap_or_default()})
        }
        (Value::Object(o), _) => Value::Object(o),
        (_, Some(t)) => match serde_json::from_str::<Value>(t) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                return Err(bad(format!(
                    "expected a budget of thinking tokens, false, or a JSON object, got {t:?}"
                )))
            }
        },
        (other, None) => {
            return Err(bad(format!(
                "expected a budget of thinking tokens, false, or a JSON object, got {other}"
            )))
        }
    };
    match object["type"].as_str() {
        Some("enabled") => match object["budget_tokens"].as_u64() {
            Some(n) if n >= MIN_THINKING_BUDGET => Ok(object),
            _ => Err(bad(format!(
                "the budget_tokens of enabled thinking must be an integer of at least {MIN_THINKING_BUDGET}"
            ))),
        },
        Some(_) => Ok(object),
        None => Err(bad("the object needs a `type`, such as \"enabled\"".into())),
    }
}

/// The thinking budget of enabled thinking, if any.
fn thinking_budget(parameters: &Map<String, Value>) -> Option<u64> {
    let thinking = parameters.get("thinking")?;
    (thinking["type"] == "enabled")
        .then(|| thinking["budget_tokens"].as_u64())
        .flatten()
}

/// The Messages API body for these messages: `model`, `max_tokens` (default
/// [`DEFAULT_MAX_TOKENS`]), top-level `system`, `messages` (consecutive same-role messages
/// merged), every parameter set (`stop_sequences` always a list; `anthropic_version` and
/// `anthropic_beta` included when set), and `stream: true` when streaming.
pub fn request_body(
    model: &str,
    parameters: &Map<String, Value>,
    messages: &[Message],
    stream: bool,
) -> Result<Map<String, Value>> {
    let mut system = Vec::new();
    let mut wire: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in messages {
        if m.role == Role::System {
            for part in &m.content {
                match part {
                    Part::Text { text } if !text.is_empty() => system.push(text.clone()),
                    Part::Text { .. } => {}
                    Part::Json { value } => system.push(value.to_string()),
                    _ => {
                        return Err(Error::invalid_params(
                            "a system message of the claude-messages format takes only text",
                        ))
                    }
                }
            }
            continue;
        }
        // Tool results go back to the model in a user turn.
        let role = if m.role == Role::Assistant {
            "assistant"
        } else {
            "user"
        };
        let blocks = content_blocks(&m.content, m.has_tool_calls(), &Blocks)?;
        if blocks.is_empty() {
            continue;
        }
        // The API wants user and assistant turns to alternate: merge neighbours.
        match wire.last_mut() {
            Some((last, prev)) if *last == role => prev.extend(blocks),
            _ => wire.push((role, blocks)),
        }
    }
    let messages: Vec<Value> = wire
        .into_iter()
        .map(|(role, mut blocks)| {
            // In a user turn, tool results must come before anything else.
            blocks.sort_by_key(|b| b["type"] != "tool_result");
            // A lone text block goes as a plain string, the API's documented short form.
            let content = match blocks.as_slice() {
                [only] if only["type"] == "text" => only["text"].clone(),
                _ => Value::Array(blocks),
            };
            json!({"role": role, "content": content})
        })
        .collect();

    let mut body = Map::new();
    body.insert("model".into(), Value::from(model));
    // The reply's tokens include the thinking: with a budget, the default leaves room for it.
    let budget = thinking_budget(parameters);
    body.insert(
        "max_tokens".into(),
        Value::from(DEFAULT_MAX_TOKENS + budget.unwrap_or(0)),
    );
    if let (Some(budget), Some(max)) =
        (budget, parameters.get("max_tokens").and_then(Value::as_u64))
    {
        if max <= budget {
            return Err(Error::new(
                ErrorKind::InvalidParameter,
                format!("{FORMAT}: max_tokens ({max}) must be more than the thinking budget ({budget}), which it includes"),
            ));
        }
    }
    if !system.is_empty() {
        body.insert("system".into(), Value::from(system.join("\n\n")));
    }
    body.insert("messages".into(), Value::Array(messages));
    for (k, v) in parameters
        .iter()
        .filter(|(k, _)| !parameters::is_genai_setting(k))
    {
        let v = match (k.as_str(), v) {
            ("stop_sequences" | BETA_PARAMETER, Value::String(s)) => json!([s]),
            _ => v.clone(),
        };
        body.insert(k.clone(), v);
    }
    if stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    Ok(body)
}

/// The shapes of the Messages API's content blocks.
struct Blocks;

impl BlockShapes for Blocks {
    fn reasoning(&self, text: &str, signature: &str, redacted: bool) -> Value {
        if redacted {
            json!({"type": "redacted_thinking", "data": signature})
        } else {
            json!({"type": "thinking", "thinking": text, "signature": signature})
        }
    }

    fn text(&self, text: &str) -> Value {
        json!({"type": "text", "text": text})
    }

    /// Inline bytes as a `base64` source, a `data:` URL likewise, any other URL as a `url`
    /// source.
    fn image(&self, (url, media_type, data): ImageFields<'_>) -> Result<Value> {
        let source = match (url, media_type, data) {
            (Some(url), _, _) => match parse_data_url(url) {
                Some((media_type, data)) => {
                    json!({"type": "base64", "media_type": media_type, "data": data})
                }
                None => json!({"type": "url", "url": url}),
            },
            (None, Some(media_type), Some(data)) => {
                json!({"type": "base64", "media_type": media_type, "data": data})
            }
            _ => {
                return Err(Error::invalid_params(
                    "an image part needs `url`, or `mediaType` and `data`",
                ))
            }
        };
        Ok(json!({"type": "image", "source": source}))
    }

    fn tool_call(&self, id: &str, name: &str, arguments: &Value) -> Value {
        // `input` must be an object.
        let input = arguments_object(arguments);
        json!({"type": "tool_use", "id": id, "name": name, "input": input})
    }

    /// Only text and images go back inside a result.
    fn tool_result(&self, tool_call_id: &str, content: &[Part], is_error: bool) -> Result<Value> {
        let inner: Vec<Value> = content_blocks(content, false, self)?
            .into_iter()
            .filter(|b| b["type"] == "text" || b["type"] == "image")
            .collect();
        let mut block = json!({"type": "tool_result", "tool_use_id": tool_call_id});
        if !inner.is_empty() {
            block["content"] = Value::Array(inner);
        }
        if is_error {
            block["is_error"] = Value::Bool(true);
        }
        Ok(block)
    }
}

/// `data:image/png;base64,AAAA` → (`image/png`, `AAAA`).
fn parse_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let media_type = meta.strip_suffix(";base64")?;
    Some((media_type, data))
}

/// The reply of a complete (non-streamed) Messages API response body.
pub fn extract_result(body: &[u8]) -> Result<ModelReply> {
    let v = body_json(body)?;
    if v.get("type").and_then(Value::as_str) == Some("error") || v.get("error").is_some() {
        return Err(Error::provider(format!(
            "{}{}",
            error_text(v.get("error").unwrap_or(&Value::Null)),
            request_id(&v)
        )));
    }
    let blocks = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::provider("the provider's answer has no content"))?;
    let mut content = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = block.get("text").and_then(Value::as_str) {
                    content.push(Part::text(text));
                }
            }
            Some("tool_use") => content.push(Part::ToolCall {
                id: str_field(block, "id"),
                name: str_field(block, "name"),
                arguments: block.get("input").cloned().unwrap_or_else(|| json!({})),
                signature: None,
            }),
            Some("thinking") => content.push(Part::reasoning(
                str_field(block, "thinking"),
                block
                    .get("signature")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            )),
            Some("redacted_thinking") => content.push(Part::Reasoning {
                text: String::new(),
                signature: Some(str_field(block, "data")),
                redacted: true,
            }),
            // Server tool blocks: not part of the chat reply.
            _ => {}
        }
    }
    let mut reply = ModelReply::assistant(
        content,
        v.get("usage").and_then(|u| {
            let mut usage = Usage::default();
            update_usage(&mut usage, u).then_some(usage)
        }),
        v.get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
        v.get("model").and_then(Value::as_str).map(str::to_string),
    );
    reply.stop_sequence = stop_sequence(&v);
    Ok(reply)
}

/// The stop sequence a message or a `message_delta`'s delta says the reply ended at.
fn stop_sequence(v: &Value) -> Option<String> {
    v.get("stop_sequence")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// `{"type":"overloaded_error","message":"Overloaded"}` → `overloaded_error: Overloaded`.
pub fn error_text(err: &Value) -> String {
    let message = err.get("message").and_then(Value::as_str);
    match (err.get("type").and_then(Value::as_str), message) {
        (Some(t), Some(m)) => format!("{t}: {m}"),
        (None, Some(m)) => m.to_string(),
        (Some(t), None) => t.to_string(),
        (None, None) => format!("an error without details: {err}"),
    }
}

/// ` [request req_...]` when an error body names its request (as `status_error` shows it).
fn request_id(v: &Value) -> String {
    v.get("request_id")
        .and_then(Value::as_str)
        .map(|id| format!(" [request {id}]"))
        .unwrap_or_default()
}

/// Reads the counts present in an API `usage` object into `usage` (fields absent are left as
/// they were, since `message_delta` may carry only `output_tokens`). False if `u` is no object.
fn update_usage(usage: &mut Usage, u: &Value) -> bool {
    if !u.is_object() {
        return false;
    }
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    if let Some(n) = n("output_tokens") {
        usage.output_tokens = n;
    }
    if let Some(n) = n("cache_creation_input_tokens") {
        usage.cache_write_tokens = Some(n);
    }
    if let Some(n) = n("cache_read_input_tokens") {
        usage.cache_read_tokens = Some(n);
    }
    // The API's `input_tokens` leaves the cached ones out; genai's input counts them all.
    if let Some(n) = n("input_tokens") {
        usage.input_tokens =
            n + usage.cache_read_tokens.unwrap_or(0) + usage.cache_write_tokens.unwrap_or(0);
    }
    true
}

/// Reads the events of a streamed Messages API answer: `message_start`,
/// `content_block_start/delta/stop`, `message_delta`, `message_stop` (the terminal event),
/// `ping` (ignored) and `error`. Unknown event types are ignored, as Anthropic's versioning
/// policy asks. The type is read from the event's JSON `type` (so Bedrock's event-stream
/// payloads, which have no SSE `event:` line, decode the same way). Content blocks keep their
/// index as their key: text and tool calls stay in the order the model wrote them.
struct Events;

impl EventReader for Events {
    fn read(&mut self, event: &StreamEvent, reply: &mut ReplyBuilder) -> Result<()> {
        let Some(v) = event_json(event)? else {
            return Ok(());
        };
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default();
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        match kind {
            "message_start" => {
                let message = v.get("message").cloned().unwrap_or(Value::Null);
                if let Some(model) = message.get("model").and_then(Value::as_str) {
                    reply.model = Some(model.to_string());
                }
                if let Some(u) = message.get("usage") {
                    update_usage(reply.usage.get_or_insert_with(Usage::default), u);
                }
            }
            "content_block_start" => {
                let block = v.get("content_block").cloned().unwrap_or(Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => reply.start_text(index, &str_field(&block, "text")),
                    Some("tool_use") => reply.start_call(
                        index,
                        &str_field(&block, "id"),
                        &str_field(&block, "name"),
                        block.get("input").filter(|i| i.is_object()).cloned(),
                    ),
                    Some("thinking") => reply.start_reasoning(
                        index,
                        &str_field(&block, "thinking"),
                        block.get("signature").and_then(Value::as_str),
                    ),
                    Some("redacted_thinking") => {
                        reply.redacted_reasoning(index, &str_field(&block, "data"))
                    }
                    _ => reply.skip_block(index),
                }
            }
            "content_block_delta" => {
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => reply.block_text(index, &str_field(&delta, "text")),
                    Some("input_json_delta") if reply.has_call(index) => {
                        let piece = str_field(&delta, "partial_json");
                        if !piece.is_empty() {
                            reply.call_piece(index, None, None, &piece);
                        }
                    }
                    Some("thinking_delta") => {
                        reply.block_reasoning(index, &str_field(&delta, "thinking"))
                    }
                    Some("signature_delta") => {
                        reply.block_signature(index, &str_field(&delta, "signature"))
                    }
                    // citations_delta and delta types added later.
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    reply.finish_reason = Some(reason.to_string());
                }
                if let Some(s) = v.get("delta").and_then(stop_sequence) {
                    reply.stop_sequence = Some(s);
                }
                if let Some(u) = v.get("usage") {
                    update_usage(reply.usage.get_or_insert_with(Usage::default), u);
                }
            }
            "message_stop" => reply.complete(),
            "error" => {
                return Err(Error::provider(format!(
                    "the stream reported an error: {}{}",
                    error_text(v.get("error").unwrap_or(&Value::Null)),
                    request_id(&v)
                )))
            }
            // ping, content_block_stop, and event types added later.
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::testing::*;
    use crate::format::ModelConfiguration;

    // https://docs.anthropic.com/en/api/messages: the documented minimal request.
    #[test]
    fn golden_basic_request() {
        let mut m = ModelConfiguration::new(&ClaudeMessages, "claude-sonnet-4-5");
        m.set_parameter("max_tokens", json!(1024)).unwrap();
        let req = m
            .prepare_request(&[Message::user("Hello, world")], false)
            .unwrap();
        assert_eq!(
            req.body,
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 1024,
                "messages": [{"role": "user", "content": "Hello, world"}]
            })
        );
        assert!(!req.stream);
        assert_eq!(req.format, FORMAT);
    }

    #[test]
    fn defaults_system_parameters_and_stream() {
        let mut m = ModelConfiguration::new(&ClaudeMessages, "claude-sonnet-4-5");
        m.set_parameter("Temperature", json!("0.5")).unwrap();
        m.set_parameter("TOP_K", json!(40)).unwrap();
        m.set_parameter("top_p", json!(0.9)).unwrap();
        m.set_parameter("stop_sequences", json!("END")).unwrap();
        m.set_parameter("anthropic_version", json!("2023-06-01"))
            .unwrap();
        m.set_parameter("metadata", json!("{\"user_id\":\"U-1\"}"))
            .unwrap();
        let req = m
            .prepare_request(
                &[
                    Message::system("You are a pirate."),
                    Message::user("Hi"),
                    Message::user("Who are you?"),
                    Message::assistant("Arr,"),
                ],
                true,
            )
            .unwrap();
        assert_eq!(
            req.body,
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 4096,
                "system": "You are a pirate.",
                "messages": [
                    {"role": "user", "content": [
                        {"type": "text", "text": "Hi"},
                        {"type": "text", "text": "Who are you?"}
                    ]},
                    {"role": "assistant", "content": "Arr,"}
                ],
                "temperature": 0.5,
                "top_k": 40,
                "top_p": 0.9,
                "stop_sequences": ["END"],
                "anthropic_version": "2023-06-01",
                "metadata": {"user_id": "U-1"},
                "stream": true
            })
        );
        // Values keep their case; out-of-range values are refused with the accepted names.
        let e = m.set_parameter("temperature", json!(1.5)).unwrap_err();
        assert_mentions(&e, "outside");
        let e = m.set_parameter("stop", json!("x")).unwrap_err();
        assert_mentions(&e, "stop_sequences");
    }

    #[test]
    fn thinking_takes_a_budget_false_or_the_object_and_leaves_room_for_the_reply() {
        let mut m = ModelConfiguration::new(&ClaudeMessages, "claude-sonnet-4-5");
        m.set_parameter("thinking", json!("2048")).unwrap();
        let body = m
            .prepare_request(&[Message::user("Hi")], false)
            .unwrap()
            .body;
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(body["max_tokens"], 2048 + DEFAULT_MAX_TOKENS);
        m.set_parameter("max_tokens", json!(2000)).unwrap();
        let e = m
            .prepare_request(&[Message::user("Hi")], false)
            .unwrap_err();
        assert_mentions(&e, "must be more than the thinking budget (2048)");
        m.set_parameter("max_tokens", json!(8000)).unwrap();
        assert_eq!(
            m.prepare_request(&[Message::user("Hi")], false)
                .unwrap()
                .body["max_tokens"],
            8000
        );
        m.set_parameter("Thinking", json!(false)).unwrap();
        assert_eq!(m.parameters["thinking"], json!({"type": "disabled"}));
        m.set_parameter(
            "thinking",
            json!("{\"type\":\"enabled\",\"budget_tokens\":4000}"),
        )
        .unwrap();
        assert_eq!(m.parameters["thinking"]["budget_tokens"], 4000);
        for bad in [
            json!(100),
            json!({"budget_tokens": 2048}),
            json!("lots"),
            json!([1]),
        ] {
            let e = m.set_parameter("thinking", bad.clone()).unwrap_err();
            assert_mentions(&e, "parameter `thinking`");
        }
        m.set_parameter("thinking", Value::Null).unwrap();
        assert!(!m.parameters.contains_key("thinking"));
    }

    // https://docs.anthropic.com/en/docs/build-with-claude/vision: base64 and URL sources.
    #[test]
    fn golden_image_request() {
        let m = ModelConfiguration::new(&ClaudeMessages, "claude-sonnet-4-5");
        let msg = said(Role::User, vec![
            image("image/jpeg", "/9j/4AAQSkZJRg=="),
            image_url("https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg"),
            image_url("data:image/png;base64,iVBORw0KGgo="),
            Part::text("Describe this image."),
        ]);
        let body = m.prepare_request(&[msg], false).unwrap().body;
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQSkZJRg=="}},
                {"type": "image", "source": {"type": "url", "url": "https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg"}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                {"type": "text", "text": "Describe this image."}
            ]}])
        );
        assert_eq!(m.images(), ImageSupport::ALL);
        let bad = said(
            Role::User,
            vec![Part::Image {
                url: None,
                media_type: None,
                data: Some("AAAA".into()),
            }],
        );
        assert!(m.prepare_request(&[bad], false).is_err());
    }

    // https://docs.anthropic.com/en/docs/build-with-claude/tool-use: a tool_use turn and the
    // tool_result that answers it.
    #[test]
    fn golden_tool_round_trip() {
        let m = ModelConfiguration::new(&ClaudeMessages, "claude-sonnet-4-5");
        let messages = [
            Message::user("What's the weather like in San Francisco?"),
            said(
                Role::Assistant,
                vec![
                    Part::text("I'll check the weather."),
                    call(
                        "toolu_01A09q90qw90lq917835lq9",
                        "get_weather",
                        json!({"location": "San Francisco, CA", "unit": "celsius"}),
                    ),
                ],
            ),
            Message {
                role: Role::Tool,
                content: vec![result(
                    "toolu_01A09q90qw90lq917835lq9",
                    vec![Part::text("15 degrees")],
                    false,
                )],
                from: Some("get_weather".into()),
            },
            Message::user("And tomorrow?"),
        ];
        let body = m.prepare_request(&messages, false).unwrap().body;
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": "What's the weather like in San Francisco?"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "I'll check the weather."},
                    {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
                     "input": {"location": "San Francisco, CA", "unit": "celsius"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                     "content": [{"type": "text", "text": "15 degrees"}]},
                    {"type": "text", "text": "And tomorrow?"}
                ]}
            ])
        );
    }

    // https://docs.anthropic.com/en/api/messages: the documented response.
    #[test]
    fn extracts_the_documented_response() {
        let body = br#"{
          "content": [{"text": "Hi! My name is Claude.", "type": "text"}],
          "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
          "model": "claude-sonnet-4-5-20250929",
          "role": "assistant",
          "stop_reason": "end_turn",
          "stop_sequence": null,
          "type": "message",
          "usage": {"input_tokens": 2095, "output_tokens": 503,
                    "cache_creation_input_tokens": 10, "cache_read_input_tokens": 2000}
        }"#;
        let r = ModelConfiguration::new(&ClaudeMessages, "m")
            .extract(body)
            .unwrap();
        assert_eq!(r.message.text(), "Hi! My name is Claude.");
        assert_eq!(r.message.role, Role::Assistant);
        assert_eq!(
            r.usage,
            Some(Usage {
                // 2095 uncached + 2000 read + 10 written.
                input_tokens: 4105,
                output_tokens: 503,
                cache_read_tokens: Some(2000),
                cache_write_tokens: Some(10),
                reasoning_tokens: None,
            })
        );
        assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));
        assert_eq!(r.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    }

    #[test]
    fn extracts_tool_use_and_errors() {
        let body = br#"{"id":"msg_01Aq9w938a90dw8q","model":"claude-sonnet-4-5","stop_reason":"tool_use","role":"assistant","type":"message",
          "content":[{"type":"text","text":"<thinking>I need to use get_weather.</thinking>"},
                     {"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"location":"San Francisco, CA","unit":"celsius"}}],
          "usage":{"input_tokens":10,"output_tokens":20}}"#;
        let r = ModelConfiguration::new(&ClaudeMessages, "m")
            .extract(body)
            .unwrap();
        assert_eq!(r.finish_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            r.message.content[1],
            call(
                "toolu_01A09q90qw90lq917835lq9",
                "get_weather",
                json!({"location": "San Francisco, CA", "unit": "celsius"})
            )
        );
        // https://docs.anthropic.com/en/api/errors
        let e = ModelConfiguration::new(&ClaudeMessages, "m")
            .extract(br#"{"type":"error","error":{"type":"not_found_error","message":"The requested resource could not be found."}}"#)
            .unwrap_err();
        assert_eq!(
            e.message,
            "not_found_error: The requested resource could not be found."
        );
        assert!(ModelConfiguration::new(&ClaudeMessages, "m")
            .extract(b"{oops")
            .is_err());
    }

    // https://docs.anthropic.com/en/docs/build-with-claude/streaming: "Basic streaming request".
    const DOC_STREAM: &str = include_str!("testdata/claude-basic-stream.sse");

    #[test]
    fn decodes_the_documented_stream() {
        let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
        assert_eq!(feed_sse(&mut d, DOC_STREAM).unwrap(), vec!["Hello", "!"]);
        let r = d.finish().unwrap();
        assert_eq!(r.message.text(), "Hello!");
        assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));
        assert_eq!(r.model.as_deref(), Some("claude-opus-4-20250514"));
        let u = r.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (25, 15));
    }

    #[test]
    fn the_stop_sequence_it_stopped_at_is_kept_whole_and_streamed() {
        let body = br#"{"id":"msg_1","type":"message","role":"assistant","model":"m",
          "content":[{"type":"text","text":"One two "}],"stop_reason":"stop_sequence",
          "stop_sequence":"STOP","usage":{"input_tokens":3,"output_tokens":2}}"#;
        let r = ModelConfiguration::new(&ClaudeMessages, "m")
            .extract(body)
            .unwrap();
        assert_eq!(
            (r.finish_reason.as_deref(), r.stop_sequence.as_deref()),
            (Some("stop_sequence"), Some("STOP"))
        );
        let stopped = DOC_STREAM.replace(
            r#""stop_reason": "end_turn", "stop_sequence":null"#,
            r#""stop_reason": "stop_sequence", "stop_sequence": "STOP""#,
        );
        assert_ne!(stopped, DOC_STREAM);
        let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
        feed_sse(&mut d, &stopped).unwrap();
        let r = d.finish().unwrap();
        assert_eq!(
            (r.finish_reason.as_deref(), r.stop_sequence.as_deref()),
            (Some("stop_sequence"), Some("STOP"))
        );
        // The documented stream, which ended at its end, names none.
        let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
        feed_sse(&mut d, DOC_STREAM).unwrap();
        assert_eq!(d.finish().unwrap().stop_sequence, None);
    }

    #[test]
    fn a_stream_without_message_stop_is_cut() {
        let cut = DOC_STREAM.split("event: message_delta").next().unwrap();
        let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
        assert_eq!(feed_sse(&mut d, cut).unwrap(), vec!["Hello", "!"]);
        let e = d.finish().unwrap_err();
        assert!(e.message.contains("ended before the reply was complete"));
        // Even with the stop reason, the terminal event is message_stop.
        let almost = DOC_STREAM.split("event: message_stop").next().unwrap();
        let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
        feed_sse(&mut d, almost).unwrap();
        assert!(d.finish().is_err());
    }

    // https://docs.anthropic.com/en/docs/build-with-claude/streaming: "Streaming request with
    // tool use" (abridged), with the cache counts of prompt caching in message_start.
    #[test]
    fn decodes_tool_use_streams_and_cache_usage() {
        let sse = include_str!("testdata/claude-tool-use-stream.sse");
        let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
        assert_eq!(
            feed_sse(&mut d, sse).unwrap(),
            vec!["Okay, let's check the weather."]
        );
        let r = d.finish().unwrap();
        assert_eq!(r.finish_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            r.message.content[1],
            call(
                "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                "get_weather",
                json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
            )
        );
        assert_eq!(
            r.usage,
            Some(Usage {
                // 472 uncached + 300 read + 100 written.
                input_tokens: 872,
                output_tokens: 89,
                cache_read_tokens: Some(300),
                cache_write_tokens: Some(100),
                reasoning_tokens: None,
            })
        );
    }

    // https://docs.anthropic.com/en/docs/build-with-claude/streaming: "Error events".
    #[test]
    fn error_events_and_bad_json_are_errors() {
        let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
        feed_sse(
            &mut d,
            DOC_STREAM
                .split("event: content_block_stop")
                .next()
                .unwrap(),
        )
        .unwrap();
        let e = feed_sse(
            &mut d,
            "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n",
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "the stream reported an error: overloaded_error: Overloaded"
        );
        let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
        let e = d
            .feed(&StreamEvent::data(
                r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}"#,
            ))
            .unwrap_err();
        assert_eq!(
            e.message,
            "the stream reported an error: api_error: Internal server error [request req_011CSHoEeqs5C35K2UUqR7Fy]"
        );
        let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
        let e = d
            .feed(&StreamEvent {
                event: Some("content_block_delta".into()),
                data: "{\"type\": \"content_bl".into(),
            })
            .unwrap_err();
        assert_mentions(&e, "invalid JSON");
    }

    // https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking: "Streaming
    // thinking" (abridged): a thinking block, its signature_delta, then the text.
    const THINKING_STREAM: &str = include_str!("testdata/claude-thinking-stream.sse");

    #[test]
    fn thinking_streams_apart_with_its_signature_and_redacted_blocks() {
        let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
        let mut reasoning = Vec::new();
        let mut text = Vec::new();
        let mut signatures = Vec::new();
        for chunk in THINKING_STREAM.split("\n\n") {
            text.extend(feed_sse(&mut d, &format!("{chunk}\n\n")).unwrap());
            reasoning.extend(d.take_reasoning_deltas());
            // The signature is handed over when it arrives, before the text.
            signatures.extend(d.take_signature_deltas());
            if !text.is_empty() {
                assert!(!signatures.is_empty(), "the text came before the signature");
            }
        }
        assert_eq!(text, vec!["27 * 453 = 12,231"]);
        assert_eq!(reasoning.len(), 2);
        assert_eq!(
            signatures,
            vec!["EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"]
        );
        let r = d.finish().unwrap();
        assert_eq!(r.message.text(), "27 * 453 = 12,231");
        assert_eq!(
            r.message.content[0],
            Part::reasoning(
                "Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3",
                Some("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds".into())
            )
        );
        assert_eq!(
            r.message.content[1],
            Part::Reasoning {
                text: String::new(),
                signature: Some("EmwKAhgBEgy3va3pzix".into()),
                redacted: true
            }
        );
    }

    #[test]
    fn extracts_thinking_and_redacted_thinking() {
        let body = br#"{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","stop_reason":"tool_use",
          "content":[{"type":"thinking","thinking":"I should look it up.","signature":"WaUjzkypQ2mUEVM36O2T"},
                     {"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"},
                     {"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"location":"Paris"}}],
          "usage":{"input_tokens":10,"output_tokens":20}}"#;
        let r = ModelConfiguration::new(&ClaudeMessages, "m")
            .extract(body)
            .unwrap();
        assert_eq!(r.message.reasoning(), "I should look it up.");
        assert!(
            matches!(&r.message.content[1], Part::Reasoning { redacted: true, signature: Some(s), .. } if s == "EmwKAhgBEgy3va3pzix")
        );
        assert_eq!(r.message.text(), "");
    }

    // https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking: "Extended thinking
    // with tool use": the thinking blocks go back, unchanged and first, in the assistant turn
    // whose tool_use the next user turn answers; elsewhere they are left out.
    #[test]
    fn signed_thinking_goes_back_before_tool_use_and_nowhere_else() {
        let m = ModelConfiguration::new(&ClaudeMessages, "claude-sonnet-4-5");
        let messages = [
            Message::user("Hi"),
            said(
                Role::Assistant,
                vec![
                    Part::reasoning("Greet.", Some("sig0".into())),
                    Part::text("Hello!"),
                ],
            ),
            Message::user("Weather in Paris?"),
            said(
                Role::Assistant,
                vec![
                    Part::reasoning("I should look it up.", Some("sig1".into())),
                    Part::Reasoning {
                        text: String::new(),
                        signature: Some("enc".into()),
                        redacted: true,
                    },
                    Part::reasoning("unsigned, from another model", None),
                    call("toolu_01", "get_weather", json!({"location": "Paris"})),
                ],
            ),
            Message {
                role: Role::Tool,
                content: vec![result("toolu_01", vec![Part::text("18°C")], false)],
                from: None,
            },
        ];
        let body = m.prepare_request(&messages, false).unwrap().body;
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "I should look it up.", "signature": "sig1"},
                    {"type": "redacted_thinking", "data": "enc"},
                    {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"location": "Paris"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01", "content": [{"type": "text", "text": "18°C"}]}
                ]}
            ])
        );
    }

    #[test]
    fn events_without_sse_names_decode_by_their_type() {
        // Bedrock's event stream carries the same JSON without `event:` lines.
        let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
        for line in DOC_STREAM.lines().filter_map(|l| l.strip_prefix("data: ")) {
            d.feed(&StreamEvent::data(line)).unwrap();
        }
        assert_eq!(d.finish().unwrap().message.text(), "Hello!");
    }
}
