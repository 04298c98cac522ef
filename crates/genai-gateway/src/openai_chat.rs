//! `POST /v1/chat/completions`: OpenAI's Chat Completions API on the core. A request's messages
//! (system, developer, user, assistant with its tool calls, tool results; text and image
//! parts), tools, `tool_choice`, `response_format` and sampling settings become the core's
//! [`Message`]s, [`ToolSpec`]s, [`ResponseSchema`] and the model's parameters; the turn runs
//! as any turn of genai ([`turn`](super::turn)); the reply (text, reasoning, tool calls, finish
//! reason, usage) comes back as a `chat.completion`, or streamed as `chat.completion.chunk`
//! events ending `data: [DONE]`.
//!
//! It owns translating this API both ways. It must never drop what a request asks silently:
//! a field genai cannot carry (more than one choice, audio, log probabilities, a parameter the
//! chosen model's format does not take) is refused with a 400 naming it.

use serde_json::{json, Map, Value};

use super::completion::Chunks;
use super::fields::{array, boolean, object, only, string, text_of, with_role};
use super::pipeline::{Asked, VendorApi};
use super::settings::Setting;
use super::{fields, Api, ApiError};
use genai_core::format::openai_chat_reply::Envelope;
use genai_core::format::{ResponseSchema, ToolSpec};
use genai_core::message::{Message, Part, Role};

/// OpenAI's Chat Completions API.
pub struct ChatCompletions;

impl VendorApi for ChatCompletions {
    const PATH: &'static str = "/v1/chat/completions";
    const ERRORS: Api = Api::OpenAi;
    type Shape = Chunks;

    fn read(body: &[u8]) -> Result<Asked<Chunks>, ApiError> {
        let request = ChatRequest::parse(body)?;
        let envelope = Envelope::now(
            format!("chatcmpl-{}", ulid::Ulid::new().to_string().to_lowercase()),
            request.model.clone(),
        );
        Ok(Asked {
            model: request.model,
            messages: request.messages,
            tools: request.tools,
            schema: request.schema,
            settings: request
                .parameters
                .into_iter()
                .map(|(field, value)| Setting::Parameter(field, value))
                .collect(),
            stream: request.stream,
            shape: Chunks::new(envelope, request.include_usage),
            headers: Vec::new(),
        })
    }
}

/// What a request asks, in the core's terms.
#[derive(Debug, Default)]
pub(super) struct ChatRequest {
    model: String,
    messages: Vec<Message>,
    tools: Vec<ToolSpec>,
    schema: Option<ResponseSchema>,
    /// The model's parameters to set: (the request's field, its value).
    parameters: Vec<(String, Value)>,
    stream: bool,
    include_usage: bool,
}

impl ChatRequest {
    pub(super) fn parse(body: &[u8]) -> Result<ChatRequest, ApiError> {
        let fields = fields::body(body)?;
        let mut r = ChatRequest::default();
        let mut has_messages = false;
        for (key, value) in fields {
            if value.is_null() {
                continue;
            }
            match key.as_str() {
                "model" => r.model = string(value, "model")?,
                "messages" => {
                    r.messages = messages(value)?;
                    has_messages = true;
                }
                "stream" => r.stream = boolean(value, "stream")?,
                "stream_options" => r.include_usage = stream_options(value)?,
                "n" if value == json!(1) => {}
                "n" => {
                    return Err(ApiError::invalid(
                        "n",
                        "genai gives one choice: n must be 1",
                    ))
                }
                "tools" => r.tools = tools(value)?,
                "tool_choice" => {
                    let choice = fields::tool_choice(&value, &["function", "name"])?;
                    r.parameters.push((key, choice));
                }
                "response_format" => match response_format(value)? {
                    Format::Text => {}
                    Format::Schema(s) => r.schema = Some(s),
                    Format::Parameter(v) => r.parameters.push((key, v)),
                },
                "stop" => r.parameters.push((key, stop(value)?)),
                "functions" | "function_call" => {
                    return Err(ApiError::invalid(
                        key,
                        "the legacy functions cannot be carried: use tools and tool_choice",
                    ))
                }
                "logprobs" if value == json!(false) => {}
                "modalities" if value == json!(["text"]) => {}
                "audio" | "modalities" | "logprobs" | "top_logprobs" | "prediction"
                | "web_search_options" => {
                    return Err(ApiError::invalid(key, "genai's gateway cannot carry it"))
                }
                // Sampling and the rest: the model's parameters of that name, which its format
                // checks (and refuses when it has none of that name).
                _ => r.parameters.push((key, value)),
            }
        }
        if r.model.trim().is_empty() {
            return Err(ApiError::invalid(
                "model",
                "is required: an agent of genai's config or PROVIDER:MODEL (GET /v1/models)",
            ));
        }
        if !has_messages {
            return Err(ApiError::invalid("messages", "is required"));
        }
        Ok(r)
    }
}

fn stream_options(value: Value) -> Result<bool, ApiError> {
    let m = object(value, "stream_options")?;
    only(&m, "stream_options", &["include_usage"])?;
    match m.get("include_usage") {
        None | Some(Value::Null) => Ok(false),
        Some(v) => boolean(v.clone(), "stream_options.include_usage"),
    }
}

fn stop(value: Value) -> Result<Value, ApiError> {
    match value {
        Value::String(s) => Ok(json!([s])),
        Value::Array(a) if a.iter().all(Value::is_string) => Ok(Value::Array(a)),
        _ => Err(ApiError::invalid(
            "stop",
            "must be a string or an array of strings",
        )),
    }
}

/// The request's messages, its system and developer messages joined into one, first.
fn messages(value: Value) -> Result<Vec<Message>, ApiError> {
    let items = array(value, "messages")?;
    if items.is_empty() {
        return Err(ApiError::invalid("messages", "must not be empty"));
    }
    let mut system: Vec<String> = Vec::new();
    let mut out: Vec<Message> = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let at = format!("messages[{i}]");
        let mut m = object(item, &at)?;
        only(
            &m,
            &at,
            &["role", "content", "tool_calls", "tool_call_id", "refusal"],
        )?;
        let role = match m.remove("role") {
            Some(Value::String(r)) => r,
            _ => return Err(ApiError::invalid(format!("{at}.role"), "is required")),
        };
        let content_at = format!("{at}.content");
        let content = m.remove("content").filter(|c| !c.is_null());
        match role.as_str() {
            "system" | "developer" => {
                let parts = content_parts(content, &content_at, &["text"])?;
                system.push(text_of(&parts));
            }
            "user" => {
                if content.is_none() {
                    return Err(ApiError::invalid(content_at, "is required"));
                }
                let content = content_parts(content, &content_at, &["text", "image_url"])?;
                out.push(with_role(Role::User, content));
            }
            "assistant" => {
                let mut content = content_parts(content, &content_at, &["text", "refusal"])?;
                if let Some(Value::String(refusal)) = m.remove("refusal") {
                    content.push(Part::text(refusal));
                }
                if let Some(calls) = m.remove("tool_calls").filter(|c| !c.is_null()) {
                    content.extend(tool_calls(calls, &format!("{at}.tool_calls"))?);
                }
                out.push(with_role(Role::Assistant, content));
            }
            "tool" => {
                let id = match m.remove("tool_call_id") {
                    Some(Value::String(id)) => id,
                    _ => {
                        return Err(ApiError::invalid(
                            format!("{at}.tool_call_id"),
                            "is required",
                        ))
                    }
                };
                let result = Part::ToolResult {
                    tool_call_id: id,
                    content: content_parts(content, &content_at, &["text"])?,
                    is_error: false,
                };
                // The results of one round of calls are one message, as the core keeps them.
                match out.last_mut() {
                    Some(last) if last.role == Role::Tool => last.content.push(result),
                    _ => out.push(with_role(Role::Tool, vec![result])),
                }
            }
            "function" => {
                return Err(ApiError::invalid(
                    format!("{at}.role"),
                    "the legacy function role cannot be carried: use tool",
                ))
            }
            other => {
                return Err(ApiError::invalid(
                    format!("{at}.role"),
                    format!("`{other}` is not system, developer, user, assistant or tool"),
                ))
            }
        }
    }
    if !system.is_empty() {
        out.insert(0, Message::system(system.join("\n\n")));
    }
    Ok(out)
}

/// A message's content: a string, or an array of parts of the `kinds` this role may send.
fn content_parts(content: Option<Value>, at: &str, kinds: &[&str]) -> Result<Vec<Part>, ApiError> {
    let Some(content) = content else {
        return Ok(Vec::new());
    };
    fields::content(content, at, "part", kinds, |kind, mut p, at| match kind {
        "image_url" => {
            only(&p, at, &["image_url"])?;
            let image = object(p.remove("image_url").unwrap_or_default(), at)?;
            image_part(image, &format!("{at}.image_url"))
        }
        // `text` and `refusal` parts are text.
        _ => {
            only(&p, at, &[kind])?;
            let text = string(p.remove(kind).unwrap_or_default(), &format!("{at}.{kind}"))?;
            Ok(Part::text(text))
        }
    })
}

/// An image part from `{"url", "detail"}`: a `data:` URL inline, any other by its URL.
pub(super) fn image_part(mut image: Map<String, Value>, at: &str) -> Result<Part, ApiError> {
    only(&image, at, &["url", "detail"])?;
    match image.get("detail").and_then(Value::as_str) {
        None | Some("auto") => {}
        Some(_) => {
            return Err(ApiError::invalid(
                format!("{at}.detail"),
                "only `auto` can be carried",
            ))
        }
    }
    let url = match image.remove("url") {
        Some(Value::String(u)) => u,
        _ => return Err(ApiError::invalid(format!("{at}.url"), "is required")),
    };
    let Some(inline) = url.strip_prefix("data:") else {
        return Ok(Part::Image {
            url: Some(url),
            media_type: None,
            data: None,
        });
    };
    match inline.split_once(";base64,") {
        Some((media_type, data)) if !media_type.is_empty() => Ok(Part::Image {
            url: None,
            media_type: Some(media_type.to_string()),
            data: Some(data.to_string()),
        }),
        _ => Err(ApiError::invalid(
            format!("{at}.url"),
            "a data URL must be data:MEDIA_TYPE;base64,DATA",
        )),
    }
}

/// An assistant message's tool calls.
fn tool_calls(value: Value, at: &str) -> Result<Vec<Part>, ApiError> {
    let mut parts = Vec::new();
    for (j, call) in array(value, at)?.into_iter().enumerate() {
        let at = format!("{at}[{j}]");
        let mut call = object(call, &at)?;
        // `index`, which a client may keep from the streamed calls, is their order here.
        only(&call, &at, &["index", "id", "type", "function"])?;
        if call.get("type").is_some_and(|t| t != "function") {
            return Err(ApiError::invalid(format!("{at}.type"), "must be function"));
        }
        let id = string(call.remove("id").unwrap_or_default(), &format!("{at}.id"))?;
        let fn_at = format!("{at}.function");
        let mut function = object(call.remove("function").unwrap_or_default(), &fn_at)?;
        only(&function, &fn_at, &["name", "arguments"])?;
        let name = string(
            function.remove("name").unwrap_or_default(),
            &format!("{fn_at}.name"),
        )?;
        let args_at = format!("{fn_at}.arguments");
        let arguments = match function.remove("arguments") {
            None | Some(Value::Null) => json!({}),
            Some(Value::String(s)) if s.trim().is_empty() => json!({}),
            Some(Value::String(s)) => serde_json::from_str(&s)
                .map_err(|e| ApiError::invalid(&args_at, format!("is not JSON: {e}")))?,
            Some(_) => return Err(ApiError::invalid(args_at, "must be a string of JSON")),
        };
        parts.push(Part::ToolCall {
            id,
            name,
            arguments,
            signature: None,
        });
    }
    Ok(parts)
}

/// The request's function tools.
fn tools(value: Value) -> Result<Vec<ToolSpec>, ApiError> {
    let mut specs = Vec::new();
    for (i, tool) in array(value, "tools")?.into_iter().enumerate() {
        let at = format!("tools[{i}]");
        let mut tool = object(tool, &at)?;
        only(&tool, &at, &["type", "function"])?;
        if tool.get("type").is_some_and(|t| t != "function") {
            return Err(ApiError::invalid(
                format!("{at}.type"),
                "only function tools can be carried",
            ));
        }
        let fn_at = format!("{at}.function");
        let mut function = object(tool.remove("function").unwrap_or_default(), &fn_at)?;
        only(
            &function,
            &fn_at,
            &["name", "description", "parameters", "strict"],
        )?;
        specs.push(fields::function_tool(&mut function, &fn_at)?);
    }
    Ok(specs)
}

/// What `response_format` asks.
enum Format {
    Text,
    /// A JSON Schema the reply must match (the core's structured output).
    Schema(ResponseSchema),
    /// Sent as the model's own `response_format` parameter (`json_object`).
    Parameter(Value),
}

fn response_format(value: Value) -> Result<Format, ApiError> {
    let mut m = object(value.clone(), "response_format")?;
    match m.get("type").and_then(Value::as_str) {
        Some("text") => Ok(Format::Text),
        Some("json_object") => Ok(Format::Parameter(value)),
        Some("json_schema") => {
            let at = "response_format.json_schema";
            let mut s = object(m.remove("json_schema").unwrap_or_default(), at)?;
            only(&s, at, &["name", "schema", "strict", "description"])?;
            let name = s.get("name").and_then(Value::as_str).map(str::to_string);
            let schema = s
                .remove("schema")
                .ok_or_else(|| ApiError::invalid(format!("{at}.schema"), "is required"))?;
            ResponseSchema::new(name.as_deref(), schema)
                .map(Format::Schema)
                .map_err(|e| ApiError::invalid(at, e.message))
        }
        _ => Err(ApiError::invalid(
            "response_format.type",
            "must be text, json_object or json_schema",
        )),
    }
}
