//! `POST /v1/responses`: OpenAI's Responses API on the core (what Codex speaks). A request's
//! `instructions`, its `input` (a string, or items: messages of any role with `input_text`,
//! `input_image`, `output_text` and `refusal` content; `function_call`, `function_call_output`
//! and `reasoning` items), its function `tools`, `tool_choice`, `parallel_tool_calls`,
//! `text.format` and sampling settings become the core's [`Message`]s, [`ToolSpec`]s,
//! [`ResponseSchema`] and the model's parameters; the turn runs as any turn of genai
//! ([`turn`](super::turn)); the reply comes back as a `response` object or streamed as the
//! API's events (`responses_reply.rs`).
//!
//! It owns reading this API's requests. It must never drop what a request asks silently: a
//! field genai cannot carry, a tool only OpenAI's servers run (web search, file search,
//! computer use, code interpreter, MCP, ...), or server-side state (`previous_response_id`,
//! `conversation`, `background`, `store: true`) is refused with a 400 naming it. Hints with no
//! effect on what the client gets back (`metadata`, `user`, `prompt_cache_key`, `include`,
//! `service_tier`, `truncation`, Codex's `client_metadata`) are accepted and not carried.

use serde_json::{json, Map, Value};

use super::fields::{object, only, string, text_of, with_role};
use super::openai_chat::image_part;
use super::pipeline::{Asked, VendorApi};
use super::responses_reply::Events;
use super::responses_request::{Content, Item, ResponsesBody};
use super::responses_tools::tools;
use super::responses_wire::NAMESPACE_SEPARATOR;
use super::settings::Setting;
use super::{fields, Api, ApiError};
use genai_core::format::{ResponseSchema, ToolSpec};
use genai_core::message::{Message, Part, Role};

/// Fields accepted and not carried: hints about storage, caching, billing and logging that
/// change nothing in the answer genai gives.
const IGNORED: &[&str] = &[
    "metadata",
    "user",
    "prompt_cache_key",
    "prompt_cache_retention",
    "safety_identifier",
    "include",
    "service_tier",
    "truncation",
    "client_metadata",
    "stream_options",
];

/// OpenAI's Responses API.
pub(crate) struct Responses;

impl VendorApi for Responses {
    const PATH: &'static str = "/v1/responses";
    const ERRORS: Api = Api::OpenAi;
    type Shape = Events;

    fn read(body: &[u8]) -> Result<Asked<Events>, ApiError> {
        let request = ResponsesRequest::parse(body)?;
        let shape = Events::new(
            format!("resp_{}", ulid::Ulid::new().to_string().to_lowercase()),
            genai_core::format::openai_chat_reply::now_secs(),
            request.echo,
        )
        .with_namespaces(request.namespaces);
        let mut settings: Vec<Setting> = Setting::parameters(request.parameters);
        settings.extend(request.effort.map(Setting::Effort));
        if request.json_object {
            settings.push(Setting::JsonObject);
        }
        if request.no_parallel_calls {
            settings.push(Setting::NoParallelCalls("parallel_tool_calls"));
        }
        let headers = match request.not_offered.is_empty() {
            true => Vec::new(),
            false => vec![(NOT_OFFERED, request.not_offered.join(", "))],
        };
        Ok(Asked {
            model: request.model,
            messages: request.messages,
            tools: request.tools,
            schema: request.schema,
            settings,
            stream: request.stream,
            shape,
            headers,
        })
    }
}

/// The header naming the hosted tools of a request that were not offered to the model.
pub(crate) const NOT_OFFERED: &str = "x-genai-tools-not-offered";

/// What a request asks, in the core's terms.
#[derive(Debug, Default)]
pub(super) struct ResponsesRequest {
    model: String,
    messages: Vec<Message>,
    tools: Vec<ToolSpec>,
    schema: Option<ResponseSchema>,
    /// The model's parameters to set: (the request's field, its value).
    parameters: Vec<(String, Value)>,
    effort: Option<String>,
    /// `text.format` asks for any JSON object: the model's own `response_format`.
    json_object: bool,
    no_parallel_calls: bool,
    stream: bool,
    /// What the `response` object says back of the request (its tools, settings, ...).
    echo: Map<String, Value>,
    /// The tool namespaces whose functions were offered as `NS__NAME`.
    namespaces: Vec<String>,
    /// Hosted tools of the request (web search) not offered to the model.
    not_offered: Vec<String>,
}

impl ResponsesRequest {
    pub(super) fn parse(body: &[u8]) -> Result<ResponsesRequest, ApiError> {
        let body: ResponsesBody = fields::typed(body)?;
        let mut r = ResponsesRequest {
            model: body.model.unwrap_or_default(),
            stream: body.stream.unwrap_or(false),
            ..ResponsesRequest::default()
        };
        match body.store {
            Some(Value::Bool(false)) => {
                r.echo.insert("store".into(), Value::Bool(false));
            }
            None | Some(Value::Null) => {}
            Some(_) => {
                return Err(ApiError::invalid(
                    "store",
                    "genai keeps no responses on the server: send false or leave it out",
                ))
            }
        }
        if body
            .background
            .is_some_and(|b| !matches!(b, Value::Null | Value::Bool(false)))
        {
            return Err(ApiError::invalid(
                "background",
                "genai runs no background responses: leave it out",
            ));
        }
        if let Some(tools) = body.tools {
            (r.tools, r.namespaces, r.not_offered) = self::tools(tools.clone())?;
            r.echo.insert("tools".into(), tools);
        }
        if let Some(choice) = body.tool_choice {
            r.parameters.push((
                "tool_choice".into(),
                fields::tool_choice(&choice, &["name"])?,
            ));
            r.echo.insert("tool_choice".into(), choice);
        }
        if let Some(parallel) = body.parallel_tool_calls {
            r.no_parallel_calls = !parallel;
            r.echo
                .insert("parallel_tool_calls".into(), Value::Bool(parallel));
        }
        if let Some(t) = body.text {
            r.schema = text(t.clone(), &mut r.json_object)?;
            r.echo.insert("text".into(), t);
        }
        if let Some(reasoning) = body.reasoning {
            r.effort = self::reasoning(reasoning.clone())?;
            r.echo.insert("reasoning".into(), reasoning);
        }
        // The sampling settings after the tool choice: the named fields' parameters first.
        for (key, value) in body.other {
            match key.as_str() {
                _ if value.is_null() => {}
                "previous_response_id" | "conversation" | "prompt" => {
                    return Err(ApiError::invalid(
                        key,
                        "genai keeps no responses nor conversations on the server: send the whole history in `input`",
                    ))
                }
                "temperature" | "top_p" | "max_output_tokens" => {
                    r.echo.insert(key.clone(), value.clone());
                    r.parameters.push((key, value));
                }
                k if IGNORED.contains(&k) => {
                    r.echo.insert(key, value);
                }
                _ => return Err(ApiError::invalid(key, "genai's gateway cannot carry it")),
            }
        }
        if r.model.trim().is_empty() {
            return Err(ApiError::invalid(
                "model",
                "is required: an agent of genai's config or PROVIDER:MODEL (GET /v1/models)",
            ));
        }
        if let Some(instructions) = &body.instructions {
            r.echo.insert("instructions".into(), json!(instructions));
        }
        let Some(input) = body.input else {
            return Err(ApiError::invalid("input", "is required"));
        };
        r.messages = messages(body.instructions, input)?;
        r.echo.insert("model".into(), json!(r.model));
        Ok(r)
    }
}

/// The conversation: `instructions` and the system and developer messages joined into one
/// system message first, then the input's items. Consecutive assistant-side items (reasoning,
/// an assistant message, function calls) are one assistant message and consecutive call
/// outputs one tool message, as the core keeps a round of calls.
fn messages(instructions: Option<String>, input: Content) -> Result<Vec<Message>, ApiError> {
    let mut system: Vec<String> = instructions.into_iter().filter(|i| !i.is_empty()).collect();
    let mut out: Vec<Message> = Vec::new();
    let items = match input {
        Content::Text(text) => {
            out.push(with_role(Role::User, vec![Part::text(text)]));
            Vec::new()
        }
        Content::List(items) if items.is_empty() => {
            return Err(ApiError::invalid("input", "must not be empty"))
        }
        Content::List(items) => items,
    };
    for (i, item) in items.into_iter().enumerate() {
        let at = format!("input[{i}]");
        let kind = item.kind.clone().unwrap_or_else(|| "message".into());
        if !matches!(
            kind.as_str(),
            "message" | "function_call" | "function_call_output" | "reasoning"
        ) {
            return Err(ApiError::invalid(
                format!("{at}.type"),
                format!(
                    "a `{kind}` item cannot be carried (only message, function_call, function_call_output and reasoning)"
                ),
            ));
        }
        fields::carried(&at, item.stray(&kind))?;
        let given = |v: Option<String>, name: &str| {
            v.ok_or_else(|| ApiError::invalid(format!("{at}.{name}"), "must be a string"))
        };
        match kind.as_str() {
            "message" => {
                let role = given(item.role, "role")?;
                let content_at = format!("{at}.content");
                let content = item.content.ok_or_else(|| {
                    ApiError::invalid(&content_at, "must be a string or an array of parts")
                })?;
                match role.as_str() {
                    "system" | "developer" => {
                        let parts = content_parts(content, &content_at, &["input_text"])?;
                        system.push(text_of(&parts));
                    }
                    "user" => {
                        let kinds = ["input_text", "input_image"];
                        let parts = content_parts(content, &content_at, &kinds)?;
                        out.push(with_role(Role::User, parts));
                    }
                    "assistant" => {
                        let kinds = ["output_text", "refusal", "input_text"];
                        let parts = content_parts(content, &content_at, &kinds)?;
                        assistant(&mut out).content.extend(parts);
                    }
                    other => {
                        return Err(ApiError::invalid(
                            format!("{at}.role"),
                            format!("`{other}` is not user, assistant, system or developer"),
                        ))
                    }
                }
            }
            "function_call" => {
                let id = given(item.call_id, "call_id")?;
                let name = given(item.name, "name")?;
                // A call of a namespace's tool is sent as the name it was offered under.
                let name = match item.namespace {
                    Some(ns) => format!("{ns}{NAMESPACE_SEPARATOR}{name}"),
                    None => name,
                };
                let arguments = arguments(item.arguments, &format!("{at}.arguments"))?;
                assistant(&mut out).content.push(Part::ToolCall {
                    id,
                    name,
                    arguments,
                    signature: None,
                });
            }
            "function_call_output" => {
                let call_id = given(item.call_id, "call_id")?;
                let output_at = format!("{at}.output");
                let content = match item.output {
                    Some(Content::Text(s)) => vec![Part::text(s)],
                    Some(list) => content_parts(list, &output_at, &["input_text", "input_image"])?,
                    None => {
                        return Err(ApiError::invalid(
                            output_at,
                            "must be a string or an array of input_text and input_image parts",
                        ))
                    }
                };
                let result = Part::ToolResult {
                    tool_call_id: call_id,
                    content,
                    is_error: false,
                };
                match out.last_mut() {
                    Some(last) if last.role == Role::Tool => last.content.push(result),
                    _ => out.push(with_role(Role::Tool, vec![result])),
                }
            }
            _ => {
                let part = reasoning_item(item, &at)?;
                assistant(&mut out).content.push(part);
            }
        }
    }
    if !system.is_empty() {
        out.insert(0, Message::system(system.join("\n\n")));
    }
    Ok(out)
}

/// The assistant message the next assistant-side item joins: the last one when it is the
/// assistant's, else a new one.
fn assistant(out: &mut Vec<Message>) -> &mut Message {
    if out.last().is_none_or(|m| m.role != Role::Assistant) {
        out.push(with_role(Role::Assistant, Vec::new()));
    }
    let last = out.len() - 1;
    &mut out[last]
}

/// A message's content: a string, or an array of parts of the `kinds` this role may send.
fn content_parts(content: Content, at: &str, kinds: &[&str]) -> Result<Vec<Part>, ApiError> {
    let parts = match content {
        Content::Text(text) => return Ok(vec![Part::text(text)]),
        Content::List(parts) => parts,
    };
    let mut out = Vec::with_capacity(parts.len());
    for (j, p) in parts.into_iter().enumerate() {
        let at = format!("{at}[{j}]");
        let kind = fields::kind_of(p.kind.as_deref(), &at, "part", kinds)?;
        fields::carried(&at, p.stray(kind))?;
        let given = |v: Option<String>, name: &str| {
            v.ok_or_else(|| ApiError::invalid(format!("{at}.{name}"), "must be a string"))
        };
        out.push(match kind {
            "input_image" => {
                let mut image = Map::new();
                image.insert("url".into(), json!(given(p.image_url, "image_url")?));
                if let Some(detail) = p.detail {
                    image.insert("detail".into(), detail);
                }
                image_part(image, &at)?
            }
            "refusal" => Part::text(given(p.refusal, "refusal")?),
            // Text: a model's `output_text` may come back with its annotations and log
            // probabilities, which say nothing the text does not.
            _ => Part::text(given(p.text, "text")?),
        });
    }
    Ok(out)
}

/// A `function_call`'s arguments: a string of JSON (none or blank: no arguments).
fn arguments(given: Option<Value>, at: &str) -> Result<Value, ApiError> {
    match given {
        None | Some(Value::Null) => Ok(json!({})),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(json!({})),
        Some(Value::String(s)) => {
            serde_json::from_str(&s).map_err(|e| ApiError::invalid(at, format!("is not JSON: {e}")))
        }
        Some(_) => Err(ApiError::invalid(at, "must be a string of JSON")),
    }
}

/// A `reasoning` item sent back: its summary and content as the reasoning's text, its
/// `encrypted_content` as the signature genai gave it (a reasoning item without text is the
/// provider's redacted reasoning).
fn reasoning_item(item: Item, at: &str) -> Result<Part, ApiError> {
    let content = match item.content {
        None => Vec::new(),
        Some(Content::List(parts)) => parts,
        Some(Content::Text(_)) => {
            return Err(ApiError::invalid(
                format!("{at}.content"),
                "must be an array",
            ))
        }
    };
    let mut text = String::new();
    let lists = [
        ("summary", item.summary.unwrap_or_default()),
        ("content", content),
    ];
    for (key, list) in lists {
        for (j, part) in list.into_iter().enumerate() {
            let part_at = format!("{at}.{key}[{j}]");
            fields::carried(&part_at, part.stray("reasoning_part"))?;
            let piece = part
                .text
                .ok_or_else(|| ApiError::invalid(format!("{part_at}.text"), "must be a string"))?;
            if !text.is_empty() && !piece.is_empty() {
                text.push('\n');
            }
            text.push_str(&piece);
        }
    }
    let signature = item.encrypted_content;
    let redacted = text.is_empty() && signature.is_some();
    Ok(Part::Reasoning {
        text,
        signature,
        redacted,
    })
}

/// `text`: its `format` a JSON Schema (the core's structured output), `json_object` (the
/// model's own `response_format`) or plain text; its `verbosity` a hint not carried.
fn text(value: Value, json_object: &mut bool) -> Result<Option<ResponseSchema>, ApiError> {
    let mut m = object(value, "text")?;
    only(&m, "text", &["format", "verbosity"])?;
    let Some(format) = m.remove("format").filter(|f| !f.is_null()) else {
        return Ok(None);
    };
    let at = "text.format";
    let mut f = object(format, at)?;
    match f.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_object") => {
            *json_object = true;
            Ok(None)
        }
        Some("json_schema") => {
            only(&f, at, &["type", "name", "schema", "strict", "description"])?;
            let name = f.get("name").and_then(Value::as_str).map(str::to_string);
            let schema = f
                .remove("schema")
                .ok_or_else(|| ApiError::invalid(format!("{at}.schema"), "is required"))?;
            ResponseSchema::new(name.as_deref(), schema)
                .map(Some)
                .map_err(|e| ApiError::invalid(at, e.message))
        }
        _ => Err(ApiError::invalid(
            "text.format.type",
            "must be text, json_object or json_schema",
        )),
    }
}

/// `reasoning`: its `effort`, when given; its `summary` (how much of the reasoning to show)
/// is accepted, and the reasoning the model gives is shown whole.
fn reasoning(value: Value) -> Result<Option<String>, ApiError> {
    let m = object(value, "reasoning")?;
    only(&m, "reasoning", &["effort", "summary", "generate_summary"])?;
    match m.get("effort") {
        None | Some(Value::Null) => Ok(None),
        Some(e) => string(e.clone(), "reasoning.effort").map(Some),
    }
}

#[cfg(test)]
#[path = "responses_tests.rs"]
mod tests;
