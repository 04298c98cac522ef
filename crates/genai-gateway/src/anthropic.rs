//! `POST /v1/messages` and `/v1/messages/count_tokens`: Anthropic's Messages API on the core
//! (Claude Code sends it as `/v1/messages?beta=true`). A request's `system` (a string or text
//! blocks) and its `system` messages (joined to it in order: the core keeps one system
//! message), messages (text, image, tool_use, tool_result, thinking blocks), custom tools (a
//! deferred one, `defer_loading`, only once a `tool_reference` in a tool result loads it, as
//! Anthropic's tool search does), `tool_choice`, `thinking`, `output_format` and sampling
//! settings become the core's
//! [`Message`]s, [`ToolSpec`]s, [`ResponseSchema`] and the model's parameters; the turn runs as
//! any turn of genai and comes back as `anthropic_reply.rs` writes it.
//!
//! It owns reading this API's requests. It must never drop what changes an answer silently: a
//! field, block or tool genai cannot carry (server tools, documents, MCP servers, containers)
//! is refused with a 400 naming it. What it accepts and ignores is listed in [`IGNORED`], each
//! with why that is harmless.

use std::sync::Arc;

use crate::HttpResponse;
use serde_json::{json, Map, Value};

use super::anthropic_reply::Events;
use super::anthropic_request::{Block, Content, MessagesBody, WireMessage};
use super::anthropic_tools::{referenced_tools, tool_choice, tools};
use super::fields::{self, object, only, present_key, string, text_of, with_role};
use super::pipeline::{Asked, VendorApi};
use super::settings::Setting;
use super::{access, count_tokens};
use super::{Api, ApiError, Caller};
use genai_core::format::{ResponseSchema, ToolSpec};
use genai_core::message::{Message, Part, Role};
use genai_core::session::Framework;

/// Top-level fields carried to the model as its parameters of that name, beside those the
/// request's type names (`anthropic_request.rs`).
const SAMPLING: &[&str] = &["temperature", "top_p", "top_k"];

/// Top-level fields accepted and not carried, because they cannot change what the model
/// answers: `metadata` (an end-user id for the vendor's abuse checks), `service_tier` (the
/// vendor's capacity tier), `cache_control` (a prompt-cache marker: genai marks its own
/// breakpoints where the provider caches), `context_management` (the vendor clearing old tool
/// results or thinking server-side to save tokens: without it the whole history is sent, as
/// the client gave it). Claude Code sends these. Any other field is refused naming it.
const IGNORED: &[&str] = &[
    "metadata",
    "service_tier",
    "cache_control",
    "context_management",
];

/// The fields `count_tokens` takes.
const COUNTED: &[&str] = &[
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
    "output_format",
    "output_config",
    "cache_control",
    "context_management",
];

/// Anthropic's Messages API.
pub(crate) struct Messages;

impl VendorApi for Messages {
    const PATH: &'static str = "/v1/messages";
    const ERRORS: Api = Api::Anthropic;
    type Shape = Events;

    fn read(body: &[u8]) -> Result<Asked<Events>, ApiError> {
        let request = MessagesRequest::parse(body, false)?;
        let shape = Events::new(
            format!("msg_{}", ulid::Ulid::new().to_string().to_lowercase()),
            request.model.clone(),
        );
        let mut settings: Vec<Setting> = Setting::parameters(request.parameters);
        settings.extend(request.thinking.map(Setting::Thinking));
        if request.no_parallel_calls {
            settings.push(Setting::NoParallelCalls(
                "tool_choice.disable_parallel_tool_use",
            ));
        }
        Ok(Asked {
            model: request.model,
            messages: request.messages,
            tools: request.tools,
            schema: request.schema,
            settings,
            stream: request.stream,
            shape,
            headers: Vec::new(),
        })
    }
}

/// The answer to one `/v1/messages/count_tokens` request body: `{"input_tokens": N}`, an
/// estimate ([`count_tokens::estimate`]): no provider's tokenizer is at hand. The model is
/// checked as a turn's is.
pub(crate) fn count_tokens(body: &[u8], fw: &Arc<Framework>, caller: &mut Caller) -> HttpResponse {
    let counted = MessagesRequest::parse(body, true).and_then(|r| {
        access::choose(fw, caller, &r.model)?;
        Ok(count_tokens::estimate(&r.messages, &r.tools))
    });
    match counted {
        Ok(n) => super::json_response(http::StatusCode::OK, &json!({ "input_tokens": n })),
        Err(e) => e.response_in(Api::Anthropic),
    }
}

/// What a request asks, in the core's terms.
#[derive(Debug, Default)]
pub(super) struct MessagesRequest {
    model: String,
    messages: Vec<Message>,
    tools: Vec<ToolSpec>,
    schema: Option<ResponseSchema>,
    /// The model's parameters to set: (the request's field, its value).
    parameters: Vec<(String, Value)>,
    /// Tools with `defer_loading`, given to the model once a `tool_reference` loads them.
    deferred: Vec<ToolSpec>,
    /// The `thinking` object, checked.
    thinking: Option<Value>,
    no_parallel_calls: bool,
    stream: bool,
}

impl MessagesRequest {
    /// The request of a body; `count` reads a `count_tokens` body (no `max_tokens`).
    pub(super) fn parse(body: &[u8], count: bool) -> Result<MessagesRequest, ApiError> {
        let body: MessagesBody = fields::typed(body)?;
        let refused = |key: &str| {
            ApiError::invalid(
                key,
                "genai's gateway cannot carry it (see docs/GATEWAY.md for the fields it takes)",
            )
        };
        if let Some(key) = body.given().find(|k| count && !COUNTED.contains(k)) {
            return Err(refused(key));
        }
        let others = body.other.iter().filter(|(_, v)| !v.is_null());
        for (key, _) in others {
            let known = match count {
                true => COUNTED.contains(&key.as_str()),
                false => SAMPLING.contains(&key.as_str()) || IGNORED.contains(&key.as_str()),
            };
            if !known {
                return Err(refused(key));
            }
        }
        let mut r = MessagesRequest {
            model: body.model.unwrap_or_default(),
            stream: body.stream.unwrap_or(false),
            ..MessagesRequest::default()
        };
        if r.model.trim().is_empty() {
            return Err(ApiError::invalid(
                "model",
                "is required: an agent of genai's config or PROVIDER:MODEL (GET /v1/models)",
            ));
        }
        match body.max_tokens {
            Some(n) if n.as_u64().is_none_or(|n| n < 1) => {
                return Err(ApiError::invalid(
                    "max_tokens",
                    "must be a positive integer",
                ))
            }
            Some(n) => r.parameters.push(("max_tokens".into(), n)),
            None if !count => return Err(ApiError::invalid("max_tokens", "is required")),
            None => {}
        }
        if let Some(stops) = body.stop_sequences {
            if !stops
                .as_array()
                .is_some_and(|a| a.iter().all(Value::is_string))
            {
                return Err(ApiError::invalid(
                    "stop_sequences",
                    "must be an array of strings",
                ));
            }
            r.parameters.push(("stop_sequences".into(), stops));
        }
        if let Some(tools) = body.tools {
            (r.tools, r.deferred) = self::tools(tools)?;
        }
        if let Some(choice) = body.tool_choice {
            let (choice, no_parallel) = tool_choice(choice)?;
            r.parameters.push(("tool_choice".into(), choice));
            r.no_parallel_calls = no_parallel;
        }
        r.thinking = body.thinking.map(thinking).transpose()?;
        r.schema = body
            .output_format
            .map(|f| output_format(f, "output_format"))
            .transpose()?;
        if let Some(config) = body.output_config {
            r.schema = output_config(config)?.or(r.schema);
        }
        // temperature, top_p, top_k: the model's parameters of that name, which its format
        // checks (and refuses when it has none of that name).
        let sampling = body
            .other
            .into_iter()
            .filter(|(k, v)| !v.is_null() && !IGNORED.contains(&k.as_str()));
        r.parameters.extend(sampling);
        let system = body.system.map(|s| system_text(s, "system")).transpose()?;
        let messages = body
            .messages
            .ok_or_else(|| ApiError::invalid("messages", "is required"))?;
        let loaded = referenced_tools(&messages);
        let deferred = std::mem::take(&mut r.deferred);
        r.tools
            .extend(deferred.into_iter().filter(|t| loaded.contains(&t.name)));
        let (messages, system_messages) = self::messages(messages)?;
        r.messages = messages;
        let system: Vec<String> = system
            .into_iter()
            .chain(system_messages)
            .filter(|s| !s.is_empty())
            .collect();
        if !system.is_empty() {
            r.messages.insert(0, Message::system(system.join("\n\n")));
        }
        Ok(r)
    }
}

/// `system`, or a system message's content at `at`: a string, or text blocks (joined by blank
/// lines).
fn system_text(content: Content, at: &str) -> Result<String, ApiError> {
    match content {
        Content::Text(s) => Ok(s),
        blocks => Ok(self::blocks(blocks, at, &["text"])?
            .iter()
            .map(|p| text_of(std::slice::from_ref(p)))
            .collect::<Vec<_>>()
            .join("\n\n")),
    }
}

/// The messages, and the text of each `system` message among them. A user message's
/// `tool_result` blocks become the core's tool message (one per round of calls), its other
/// blocks a user message after it.
///
/// A `system` message (Claude Code 2.1 sends its environment note so, after the first user
/// message, for a model name it does not know) cannot stay between the turns: the core keeps
/// one system message, first (an agent takes the last one it is given as the whole system
/// prompt), as genai's Claude, Gemini and Bedrock formats send one system prompt. So its text
/// joins the system prompt, after `system` and the system messages before it: every word
/// reaches the model as system text, in the order sent, none of it put in the user's mouth.
fn messages(items: Vec<WireMessage>) -> Result<(Vec<Message>, Vec<String>), ApiError> {
    if items.is_empty() {
        return Err(ApiError::invalid("messages", "must not be empty"));
    }
    let mut out: Vec<Message> = Vec::new();
    let mut system = Vec::new();
    for (i, m) in items.into_iter().enumerate() {
        let at = format!("messages[{i}]");
        fields::carried(&at, present_key(&m.other))?;
        let content_at = format!("{at}.content");
        let content = m
            .content
            .ok_or_else(|| ApiError::invalid(&content_at, "is required"))?;
        let role = m
            .role
            .ok_or_else(|| ApiError::invalid(format!("{at}.role"), "is required"))?;
        let (role, kinds): (Role, &[&str]) = match role.as_str() {
            "user" => (Role::User, &["text", "image", "tool_result"][..]),
            "assistant" => (
                Role::Assistant,
                &["text", "thinking", "redacted_thinking", "tool_use"][..],
            ),
            "system" => {
                system.push(system_text(content, &content_at)?);
                continue;
            }
            other => {
                return Err(ApiError::invalid(
                    format!("{at}.role"),
                    format!("`{other}` is not user, assistant or system"),
                ))
            }
        };
        for part in blocks(content, &content_at, kinds)? {
            let role = match part {
                Part::ToolResult { .. } => Role::Tool,
                _ => role,
            };
            // Consecutive blocks of one role are one message, as the core keeps them.
            match out.last_mut() {
                Some(last) if last.role == role => last.content.push(part),
                _ => out.push(with_role(role, vec![part])),
            }
        }
    }
    if out.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "must hold a user or assistant message with content",
        ));
    }
    Ok((out, system))
}

/// A content: a string, or blocks of the `kinds` this place may hold.
fn blocks(content: Content, at: &str, kinds: &[&str]) -> Result<Vec<Part>, ApiError> {
    let blocks = match content {
        Content::Text(text) => return Ok(vec![Part::text(text)]),
        Content::List(blocks) => blocks,
    };
    let mut parts = Vec::with_capacity(blocks.len());
    for (j, b) in blocks.into_iter().enumerate() {
        let at = format!("{at}[{j}]");
        let kind = fields::kind_of(b.kind.as_deref(), &at, "content block", kinds)?.to_string();
        parts.push(block(&kind, b, &at)?);
    }
    Ok(parts)
}

/// One content block `b` of type `kind`. Its `cache_control` (a prompt-cache breakpoint) is
/// dropped: genai places its own where the provider caches; so are a text block's
/// `citations`, the vendor's references into documents of an earlier answer.
fn block(kind: &str, b: Block, at: &str) -> Result<Part, ApiError> {
    fields::carried(at, b.stray(kind))?;
    let given = |v: Option<String>, name: &str| {
        v.ok_or_else(|| ApiError::invalid(format!("{at}.{name}"), "must be a string"))
    };
    let part = match kind {
        "text" => Part::text(given(b.text, "text")?),
        "image" => {
            let at = format!("{at}.source");
            let source = b
                .source
                .ok_or_else(|| ApiError::invalid(&at, "must be an object"))?;
            image(source, &at)?
        }
        "thinking" => {
            let signature = match b.signature {
                Some(Value::String(s)) if !s.is_empty() => Some(s),
                _ => None,
            };
            Part::reasoning(given(b.thinking, "thinking")?, signature)
        }
        "redacted_thinking" => Part::Reasoning {
            text: String::new(),
            signature: Some(given(b.data, "data")?),
            redacted: true,
        },
        "tool_use" => {
            let id = given(b.id, "id")?;
            let name = given(b.name, "name")?;
            let Some(input @ Value::Object(_)) = b.input else {
                return Err(ApiError::invalid(
                    format!("{at}.input"),
                    "must be an object",
                ));
            };
            Part::ToolCall {
                id,
                name,
                arguments: input,
                signature: None,
            }
        }
        "tool_reference" => {
            let name = given(b.tool_name, "tool_name")?;
            Part::text(format!("The tool {name} is loaded: it can be called now."))
        }
        _ => {
            // tool_result
            let tool_call_id = given(b.tool_use_id, "tool_use_id")?;
            let content = match b.content {
                None => Vec::new(),
                Some(c) => {
                    let kinds = ["text", "image", "tool_reference"];
                    blocks(c, &format!("{at}.content"), &kinds)?
                }
            };
            Part::ToolResult {
                tool_call_id,
                content,
                is_error: b.is_error.unwrap_or(false),
            }
        }
    };
    Ok(part)
}

/// An image's `source`: base64 data with its media type, or a URL.
fn image(mut source: Map<String, Value>, at: &str) -> Result<Part, ApiError> {
    let field = |s: &mut Map<String, Value>, name: &str| {
        string(s.remove(name).unwrap_or_default(), &format!("{at}.{name}"))
    };
    match source.remove("type").as_ref().and_then(Value::as_str) {
        Some("base64") => {
            let media_type = field(&mut source, "media_type")?;
            let data = field(&mut source, "data")?;
            only(&source, at, &[])?;
            Ok(Part::Image {
                url: None,
                media_type: Some(media_type),
                data: Some(data),
            })
        }
        Some("url") => {
            let url = field(&mut source, "url")?;
            only(&source, at, &[])?;
            Ok(Part::Image {
                url: Some(url),
                media_type: None,
                data: None,
            })
        }
        _ => Err(ApiError::invalid(
            format!("{at}.type"),
            "must be base64 or url (a file id cannot be carried)",
        )),
    }
}

/// `thinking`: `{"type":"enabled","budget_tokens":N}` (N of at least 1024), `{"type":
/// "disabled"}` or `{"type":"adaptive"}`; an enabled or adaptive one may say how its thoughts
/// come back (`display`: summarized, or omitted as Claude Code asks), which Claude is given and
/// other models, whose thoughts come back as they give them, need not be.
fn thinking(value: Value) -> Result<Value, ApiError> {
    let m = object(value.clone(), "thinking")?;
    if !matches!(
        m.get("display").and_then(Value::as_str),
        None | Some("summarized" | "omitted")
    ) {
        return Err(ApiError::invalid(
            "thinking.display",
            "must be summarized or omitted",
        ));
    }
    match m.get("type").and_then(Value::as_str) {
        Some("enabled") => {
            only(&m, "thinking", &["type", "budget_tokens", "display"])?;
            match m.get("budget_tokens").and_then(Value::as_u64) {
                Some(n) if n >= 1024 => Ok(value),
                _ => Err(ApiError::invalid(
                    "thinking.budget_tokens",
                    "must be an integer of at least 1024",
                )),
            }
        }
        Some("disabled") => {
            only(&m, "thinking", &["type"])?;
            Ok(value)
        }
        Some("adaptive") => {
            only(&m, "thinking", &["type", "display"])?;
            Ok(value)
        }
        _ => Err(ApiError::invalid(
            "thinking.type",
            "must be enabled, disabled or adaptive",
        )),
    }
}

/// `output_format` (`{"type":"json_schema","schema":...}`): genai's structured output.
fn output_format(value: Value, at: &str) -> Result<ResponseSchema, ApiError> {
    let mut m = object(value, at)?;
    only(&m, at, &["type", "schema"])?;
    if m.get("type").and_then(Value::as_str) != Some("json_schema") {
        return Err(ApiError::invalid(
            format!("{at}.type"),
            "must be json_schema",
        ));
    }
    let schema = m
        .remove("schema")
        .ok_or_else(|| ApiError::invalid(format!("{at}.schema"), "is required"))?;
    ResponseSchema::new(None, schema).map_err(|e| ApiError::invalid(at, e.message))
}

/// `output_config`: its `format` is as `output_format`; its `effort` (`low`, `medium`, `high`,
/// ...: how much the model may spend on an answer), a string, is not carried. Claude Code 2.1
/// sends `high` with every model name it does not know, whether or not that model reasons, and
/// the one setting of its kind genai has, OpenAI's `reasoning_effort`, is refused by OpenAI's
/// models that do not reason (gpt-4o-mini among them): carried, it would fail those requests.
/// The model reasons as it is configured to (its model configuration's `reasoning_effort`).
fn output_config(value: Value) -> Result<Option<ResponseSchema>, ApiError> {
    let at = "output_config";
    let mut m = object(value, at)?;
    only(&m, at, &["format", "effort"])?;
    if m.get("effort")
        .is_some_and(|e| !e.is_null() && !e.is_string())
    {
        return Err(ApiError::invalid(
            "output_config.effort",
            "must be a string (low, medium, high, ...)",
        ));
    }
    m.remove("format")
        .filter(|f| !f.is_null())
        .map(|f| output_format(f, "output_config.format"))
        .transpose()
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;
