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
use super::fields::{object, only, present_key, text_of, with_role, At};
use super::openai_chat_request::{ChatBody, ChatMessage, ChatTool, Content, ToolCall};
use super::pipeline::{Asked, VendorApi};
use super::settings::Setting;
use super::{fields, Api, ApiError};
use genai_core::format::openai_chat_reply::Envelope;
use genai_core::format::{ResponseSchema, ToolSpec};
use genai_core::message::{Message, Part, Role};

/// OpenAI's Chat Completions API.
pub(crate) struct ChatCompletions;

impl VendorApi for ChatCompletions {
    const PATH: &'static str = "/v1/chat/completions";
    const ERRORS: Api = Api::OpenAi;
    type Shape = Chunks;

    fn read(body: &[u8]) -> Result<Asked<Chunks>, ApiError> {
        let request = ChatRequest::parse(body)?;
        let envelope = Envelope::now(completion_id(), request.model.clone());
        Ok(Asked {
            model: request.model,
            messages: request.messages,
            tools: request.tools,
            schema: request.schema,
            settings: Setting::parameters(request.parameters),
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
        let body: ChatBody = fields::typed(body)?;
        let mut r = ChatRequest {
            stream: body.stream.unwrap_or(false),
            ..ChatRequest::default()
        };
        if let Some(options) = body.stream_options {
            fields::carried("stream_options", present_key(&options.other))?;
            r.include_usage = options.include_usage.unwrap_or(false);
        }
        match body.n {
            None | Some(Value::Null) => {}
            Some(n) if n == json!(1) => {}
            Some(_) => {
                return Err(ApiError::invalid(
                    "n",
                    "genai gives one choice: n must be 1",
                ))
            }
        }
        if let Some(tools) = body.tools {
            r.tools = read_tools(tools)?;
        }
        if let Some(choice) = body.tool_choice.filter(|v| !v.is_null()) {
            let choice = fields::tool_choice(&choice, &["function", "name"])?;
            r.parameters.push(("tool_choice".into(), choice));
        }
        if let Some(format) = body.response_format.filter(|v| !v.is_null()) {
            match response_format(format)? {
                Format::Text => {}
                Format::Schema(s) => r.schema = Some(s),
                Format::Parameter(v) => r.parameters.push(("response_format".into(), v)),
            }
        }
        if let Some(value) = body.stop.filter(|v| !v.is_null()) {
            r.parameters.push(("stop".into(), stop(value)?));
        }
        for (key, value) in body.other {
            if value.is_null() {
                continue;
            }
            match key.as_str() {
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
        r.model = body.model.unwrap_or_default();
        if r.model.trim().is_empty() {
            return Err(ApiError::invalid(
                "model",
                "is required: an agent of genai's config or PROVIDER:MODEL (GET /v1/models)",
            ));
        }
        let Some(messages) = body.messages else {
            return Err(ApiError::invalid("messages", "is required"));
        };
        r.messages = read_messages(messages)?;
        Ok(r)
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

/// A completion's id: `chatcmpl-` and a new ULID in lowercase, written without `format!`
/// (once per request).
fn completion_id() -> String {
    let mut ulid = [0u8; ulid::ULID_LEN];
    let ulid = ulid::Ulid::new().array_to_str(&mut ulid);
    ulid.make_ascii_lowercase();
    ["chatcmpl-", ulid].concat()
}

/// The request's messages, its system and developer messages joined into one, first.
fn read_messages(items: Vec<ChatMessage>) -> Result<Vec<Message>, ApiError> {
    if items.is_empty() {
        return Err(ApiError::invalid("messages", "must not be empty"));
    }
    let mut system: Vec<String> = Vec::new();
    let mut out: Vec<Message> = Vec::with_capacity(items.len());
    for (i, m) in items.into_iter().enumerate() {
        let at = At::Index(&"messages", i);
        fields::carried(at, present_key(&m.other))?;
        let Some(role) = m.role else {
            return Err(ApiError::invalid(format!("{at}.role"), "is required"));
        };
        let content_at = At::Field(&at, "content");
        match role.as_str() {
            "system" | "developer" => {
                let parts = content_parts(m.content, &content_at, &["text"])?;
                system.push(text_of(&parts));
            }
            "user" => {
                if m.content.is_none() {
                    return Err(ApiError::invalid(content_at.to_string(), "is required"));
                }
                let content = content_parts(m.content, &content_at, &["text", "image_url"])?;
                out.push(with_role(Role::User, content));
            }
            "assistant" => {
                let mut content = content_parts(m.content, &content_at, &["text", "refusal"])?;
                if let Some(refusal) = m.refusal {
                    content.push(Part::text(refusal));
                }
                if let Some(calls) = m.tool_calls {
                    content.extend(tool_calls(calls, &format!("{at}.tool_calls"))?);
                }
                out.push(with_role(Role::Assistant, content));
            }
            "tool" => {
                let Some(id) = m.tool_call_id else {
                    return Err(ApiError::invalid(
                        format!("{at}.tool_call_id"),
                        "is required",
                    ));
                };
                let result = Part::ToolResult {
                    tool_call_id: id,
                    content: content_parts(m.content, &content_at, &["text"])?,
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
fn content_parts(content: Option<Content>, at: &At, kinds: &[&str]) -> Result<Vec<Part>, ApiError> {
    let parts = match content {
        None => return Ok(Vec::new()),
        Some(Content::Text(text)) => return Ok(vec![Part::text(text)]),
        Some(Content::List(parts)) => parts,
    };
    let mut out = Vec::with_capacity(parts.len());
    for (j, p) in parts.into_iter().enumerate() {
        let at = At::Index(at, j);
        let kind = fields::kind_of(p.kind.as_deref(), at, "part", kinds)?;
        fields::carried(at, p.stray(kind))?;
        out.push(match (kind, p.image_url, p.text, p.refusal) {
            ("image_url", Some(image), _, _) => image_part(image, &format!("{at}.image_url"))?,
            ("image_url", None, _, _) => {
                return Err(ApiError::invalid(at.to_string(), "must be an object"))
            }
            ("text", _, Some(text), _) | ("refusal", _, _, Some(text)) => Part::text(text),
            // A text or refusal part without its text.
            _ => {
                return Err(ApiError::invalid(
                    format!("{at}.{kind}"),
                    "must be a string",
                ))
            }
        });
    }
    Ok(out)
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
fn tool_calls(calls: Vec<ToolCall>, at: &str) -> Result<Vec<Part>, ApiError> {
    let mut parts = Vec::with_capacity(calls.len());
    for (j, call) in calls.into_iter().enumerate() {
        let at = format!("{at}[{j}]");
        // `index`, which a client may keep from the streamed calls, is their order here.
        let _ = call.index;
        fields::carried(&at, present_key(&call.other))?;
        if call.kind.as_deref().is_some_and(|t| t != "function") {
            return Err(ApiError::invalid(format!("{at}.type"), "must be function"));
        }
        let Some(id) = call.id else {
            return Err(ApiError::invalid(format!("{at}.id"), "must be a string"));
        };
        let fn_at = format!("{at}.function");
        let Some(function) = call.function else {
            return Err(ApiError::invalid(fn_at, "must be an object"));
        };
        fields::carried(&fn_at, present_key(&function.other))?;
        let Some(name) = function.name else {
            return Err(ApiError::invalid(
                format!("{fn_at}.name"),
                "must be a string",
            ));
        };
        let args_at = format!("{fn_at}.arguments");
        let arguments = match function.arguments {
            None => json!({}),
            Some(s) if s.trim().is_empty() => json!({}),
            Some(s) => serde_json::from_str(&s)
                .map_err(|e| ApiError::invalid(&args_at, format!("is not JSON: {e}")))?,
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
fn read_tools(tools: Vec<ChatTool>) -> Result<Vec<ToolSpec>, ApiError> {
    let mut specs = Vec::with_capacity(tools.len());
    for (i, tool) in tools.into_iter().enumerate() {
        let at = format!("tools[{i}]");
        fields::carried(&at, present_key(&tool.other))?;
        if tool.kind.as_deref().is_some_and(|t| t != "function") {
            return Err(ApiError::invalid(
                format!("{at}.type"),
                "only function tools can be carried",
            ));
        }
        let fn_at = format!("{at}.function");
        let Some(function) = tool.function else {
            return Err(ApiError::invalid(fn_at, "must be an object"));
        };
        fields::carried(&fn_at, present_key(&function.other))?;
        // `strict` is accepted, not enforced: the client checks the arguments it gets back.
        let _ = function.strict;
        let name = fields::checked_tool_name(function.name.unwrap_or_default(), &fn_at)?;
        let input_schema = match function.parameters {
            None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
            Some(p @ Value::Object(_)) => p,
            Some(_) => {
                return Err(ApiError::invalid(
                    format!("{fn_at}.parameters"),
                    "must be a JSON Schema object",
                ))
            }
        };
        specs.push(ToolSpec {
            name,
            description: function.description.unwrap_or_default(),
            input_schema,
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: Value) -> String {
        let e = ChatRequest::parse(body.to_string().as_bytes()).unwrap_err();
        e.param.expect("a 400 names its field")
    }

    #[test]
    fn a_typed_request_is_refused_naming_the_field_at_any_depth() {
        let user = json!([{"role": "user", "content": "hi"}]);
        assert_eq!(refused(json!({"model": 3, "messages": user})), "model");
        assert_eq!(
            refused(json!({"model": "m", "messages": [{"role": "user", "content": 3}]})),
            "messages[0].content"
        );
        assert_eq!(
            refused(
                json!({"model": "m", "messages": [{"role": "user", "content": "x", "audio": {}}]})
            ),
            "messages[0].audio"
        );
        assert_eq!(
            refused(
                json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]})
            ),
            "messages[0].content[0].text"
        );
        assert_eq!(
            refused(
                json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "a", "image_url": {}}]}]})
            ),
            "messages[0].content[0].image_url"
        );
        assert_eq!(
            refused(
                json!({"model": "m", "messages": user, "tools": [{"type": "function", "function": {"name": "a b"}}]})
            ),
            "tools[0].function.name"
        );
        assert_eq!(
            refused(json!({"model": "m", "messages": user, "stream_options": {"x": 1}})),
            "stream_options.x"
        );
        assert_eq!(refused(json!([1])), "body");
        let e = ChatRequest::parse(b"{\"model\": \"m\"} x").unwrap_err();
        assert!(e.message.contains("not valid JSON"), "{}", e.message);
    }

    #[test]
    fn a_typed_request_reads_into_the_cores_terms() {
        let body = json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "be terse"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"p\":1}"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "one"}
            ],
            "temperature": 0.5,
            "stop": "END",
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]
        });
        let r = ChatRequest::parse(body.to_string().as_bytes()).unwrap();
        assert_eq!(r.model, "m");
        assert!(r.stream && r.include_usage);
        assert_eq!(r.messages.len(), 4);
        assert_eq!(r.messages[0].role, Role::System);
        assert_eq!(r.tools[0].name, "read");
        assert!(r.parameters.contains(&("temperature".into(), json!(0.5))));
        assert!(r.parameters.contains(&("stop".into(), json!(["END"]))));
        let Part::ToolCall { arguments, .. } = &r.messages[2].content[0] else {
            panic!("{:?}", r.messages[2]);
        };
        assert_eq!(arguments, &json!({"p": 1}));
    }
}
