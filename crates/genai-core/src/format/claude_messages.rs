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

pub(crate) const FORMAT: &str = "claude-messages";

/// `max_tokens` is required by the API; this is sent when the parameter is unset.
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 4096;

/// The parameter naming the API version. It travels in the body built by [`request_body`]; a
/// provider that sends it as a header (the `anthropic` provider) removes it from the body.
pub(crate) const VERSION_PARAMETER: &str = "anthropic_version";

/// The parameter naming beta features, a list. Same handling as [`VERSION_PARAMETER`]: the
/// `anthropic` provider sends it as the `anthropic-beta` header, Bedrock keeps it in the body.
pub(crate) const BETA_PARAMETER: &str = "anthropic_beta";

pub(crate) const PARAMETERS: &[ParameterSpec] = &[
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
pub(crate) struct ClaudeMessages;

/// What the `claude-messages` format is.
pub(crate) const SPEC: FormatSpec = FormatSpec {
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
pub(crate) const MIN_THINKING_BUDGET: u64 = 1024;

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
pub(crate) fn request_body(
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
pub(crate) fn extract_result(body: &[u8]) -> Result<ModelReply> {
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
pub(crate) fn error_text(err: &Value) -> String {
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
#[path = "claude_messages_tests.rs"]
mod tests;
