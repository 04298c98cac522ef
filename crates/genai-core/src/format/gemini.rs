//! The `gemini` format: Google's Gemini API `generateContent` and `streamGenerateContent`
//! (https://ai.google.dev/api/generate-content), with its SSE stream decoder beside it.
//!
//! It owns the JSON shape of that API: `systemInstruction`, `contents` with roles `user` and
//! `model` and their `parts` (`text`, `inlineData`, `fileData`, `functionCall`,
//! `functionResponse`), `generationConfig`, `safetySettings`, and the `candidates`,
//! `finishReason`, `usageMetadata`, `modelVersion` and `promptFeedback` of the answer. It must
//! never do I/O, know a URL or a key (the `gemini` provider does; the model id goes in the URL,
//! not the body).
//!
//! Tools follow https://ai.google.dev/gemini-api/docs/function-calling: `tools:
//! [{functionDeclarations}]` whose `parameters` take a subset of OpenAPI's schema (other keys are
//! dropped), `functionCall` parts from the model, `functionResponse` parts (named after the
//! function) in a user turn. A call without an `id` (older models) gets `call_N`, unique in its
//! reply; such made-up ids are never sent back to the API.

use serde_json::{json, Map, Value};

use super::parameters::with_stops;
use super::reply::{body_json, event_json};
use super::sampling;
use super::schema::{gemini_subset, ResponseSchema, ToolChoice, TOOL_CHOICE};
use super::wire::{items, object_parameter, str_at, text_of, CallNames};
use super::{
    EventReader, Format, FormatSpec, ImageSupport, ModelReply, ModelRequest, ParameterSpec,
    ReplyBuilder, Request, SpecialParameter, StreamDecoder, StreamEvent, ToolSpec,
};
use crate::error::{Error, ErrorKind, Result};
use crate::message::{Message, Part, Role, Usage};

pub(crate) const FORMAT: &str = "gemini";

/// Parameter name → its `generationConfig` field.
const GENERATION_CONFIG: &[(&str, &str)] = &[
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("top_k", "topK"),
    ("max_tokens", "maxOutputTokens"),
    ("stop", "stopSequences"),
    ("candidate_count", "candidateCount"),
    ("seed", "seed"),
    ("presence_penalty", "presencePenalty"),
    ("frequency_penalty", "frequencyPenalty"),
    ("response_mime_type", "responseMimeType"),
    ("response_schema", "responseSchema"),
];

/// `generationConfig` fields from https://ai.google.dev/api/generate-content#generationconfig.
pub(crate) const PARAMETERS: &[ParameterSpec] = &[
    sampling::TEMPERATURE.described("Sampling temperature (generationConfig.temperature)."),
    sampling::TOP_P.described(
        "Nucleus sampling: the probability mass to sample from \
         (generationConfig.topP).",
    ),
    sampling::TOP_K.integers_between(1, 1_000_000).described(
        "Sample from the k most likely tokens \
         (generationConfig.topK).",
    ),
    sampling::MAX_TOKENS
        .integers_between(1, 10_000_000)
        .described(
            "The most tokens the reply may have \
         (generationConfig.maxOutputTokens).",
        ),
    sampling::STOP.described(
        "Up to 5 sequences where generation stops \
         (generationConfig.stopSequences).",
    ),
    ParameterSpec::integer(
        "candidate_count",
        1,
        8,
        "Replies to generate (generationConfig.candidateCount); genai \
         keeps the first.",
    ),
    sampling::SEED
        .integers_between(i32::MIN as i64, i32::MAX as i64)
        .described(
            "Seed for best-effort deterministic sampling \
         (generationConfig.seed).",
        ),
    sampling::PRESENCE_PENALTY.described(
        "Penalty for tokens already present \
         (generationConfig.presencePenalty).",
    ),
    sampling::FREQUENCY_PENALTY.described(
        "Penalty proportional to how often a token appeared \
         (generationConfig.frequencyPenalty).",
    ),
    ParameterSpec::string(
        "response_mime_type",
        "text/plain (default), application/json or text/x.enum \
         (generationConfig.responseMimeType).",
    ),
    ParameterSpec::object(
        "response_schema",
        "The schema of a JSON reply, with response_mime_type \
         application/json (generationConfig.responseSchema).",
    ),
    ParameterSpec::integer(
        "thinking_budget",
        -1,
        1_000_000,
        "Thinking tokens for thinking models; 0 off, -1 dynamic \
         (generationConfig.thinkingConfig.thinkingBudget).",
    ),
    ParameterSpec::boolean(
        "include_thoughts",
        "Whether a thinking model sends summaries of its thoughts, \
         which come back as reasoning (generationConfig.thinkingConfig.includeThoughts).",
    ),
    ParameterSpec::object(
        "generation_config",
        "Any other generationConfig fields as a JSON object; the \
         parameters above override its keys.",
    ),
    ParameterSpec::object(
        "safety_settings",
        "safetySettings: a list of {category, threshold}, or an \
         object such as {\"HARM_CATEGORY_HARASSMENT\":\"BLOCK_ONLY_HIGH\"}.",
    ),
    TOOL_CHOICE,
];

/// The `gemini` format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Gemini;

/// The `generationConfig` object of these parameters: the `generation_config` parameter, then
/// every sampling parameter over it.
fn generation_config(parameters: &Map<String, Value>) -> Map<String, Value> {
    let mut config = object_parameter(parameters, "generation_config");
    for (name, field) in GENERATION_CONFIG {
        if let Some(v) = parameters.get(*name) {
            config.insert(field.to_string(), v.clone());
        }
    }
    for (name, field) in [
        ("thinking_budget", "thinkingBudget"),
        ("include_thoughts", "includeThoughts"),
    ] {
        if let Some(v) = parameters.get(name) {
            let thinking = config.entry("thinkingConfig").or_insert_with(|| json!({}));
            if let Value::Object(t) = thinking {
                t.insert(field.into(), v.clone());
            }
        }
    }
    config
}

/// What the `gemini` format is.
pub(crate) const SPEC: FormatSpec = FormatSpec {
    name: FORMAT,
    description: "Google Gemini API generateContent / streamGenerateContent",
    parameters: PARAMETERS,
    // Inline bytes as `inlineData`; a URL as `fileData` (a Files API URI, or a URL the model
    // can fetch).
    images: ImageSupport::ALL,
    native_tools: true,
    // `safety_settings` is a list in the API: a list, an object of category → threshold, or
    // either as JSON text is taken and stored as the list.
    special: &[SpecialParameter {
        name: "safety_settings",
        check: safety_settings,
    }],
};

impl Format for Gemini {
    fn spec(&self) -> &'static FormatSpec {
        &SPEC
    }

    fn prepare(&self, request: &Request<'_>) -> Result<ModelRequest> {
        let (_, parameters, messages, options) = request.parts();
        let parameters = with_stops(PARAMETERS, parameters, options.stop);
        // A functionResponse names its function, which a result knows only by call id: the
        // latest call with that id before it.
        let mut names = CallNames::default();
        let mut body = Map::new();
        let mut contents = Vec::new();
        for m in messages {
            names.learn(m);
            let parts = parts_of(m, &names)?;
            if parts.is_empty() {
                continue;
            }
            match m.role {
                Role::System => {
                    body.insert("systemInstruction".into(), json!({ "parts": parts }));
                }
                Role::Assistant => contents.push(json!({"role": "model", "parts": parts})),
                Role::User | Role::Tool => contents.push(json!({"role": "user", "parts": parts})),
            }
        }
        body.insert("contents".into(), Value::Array(contents));
        if !options.tools.is_empty() {
            let declarations: Vec<Value> = options.tools.iter().map(function_declaration).collect();
            body.insert(
                "tools".into(),
                json!([{ "functionDeclarations": declarations }]),
            );
        }
        if let Some(choice) = ToolChoice::of(&parameters, options.tools)? {
            body.insert("toolConfig".into(), choice.gemini());
        }
        let mut config = generation_config(&parameters);
        if let Some(schema) = options.schema {
            config.insert("responseMimeType".into(), json!("application/json"));
            config.insert("responseSchema".into(), schema.gemini().0);
        }
        if !config.is_empty() {
            body.insert("generationConfig".into(), Value::Object(config));
        }
        if let Some(s) = parameters.get("safety_settings") {
            body.insert("safetySettings".into(), s.clone());
        }
        Ok(request.prepared(FORMAT, body))
    }

    fn schema_notes(&self, schema: &ResponseSchema) -> Vec<String> {
        let dropped = schema.gemini().1;
        let note = format!("response schema: Gemini's subset cannot say {}; the reply is still checked against the whole schema", dropped.join(", "));
        [note].into_iter().filter(|_| !dropped.is_empty()).collect()
    }

    fn extract(&self, _: &Map<String, Value>, body: &[u8]) -> Result<ModelReply> {
        let v = body_json(body)?;
        check_answer(&v)?;
        let candidate = v
            .pointer("/candidates/0")
            .ok_or_else(|| Error::provider("the provider's answer has no candidates"))?;
        let mut reply = ReplyBuilder::new();
        let text = read_parts(candidate, &mut reply);
        reply.text(&text);
        reply.usage = usage_of(&v);
        reply.finish_reason = str_at(candidate, "/finishReason");
        reply.model = str_at(&v, "/modelVersion");
        unblocked(reply)
    }

    fn decoder(&self, _: &Map<String, Value>) -> StreamDecoder {
        StreamDecoder::new(Events, ReplyBuilder::new())
    }
}

/// One `functionDeclaration`; `parameters` is left out for a function without any (the API
/// refuses an object schema with no properties).
fn function_declaration(t: &ToolSpec) -> Value {
    let mut d = json!({"name": t.name, "description": t.description});
    let has_parameters = t
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if has_parameters {
        d["parameters"] = gemini_subset(&t.input_schema).0;
    }
    d
}

/// A call id the API gave (sent back so it can match responses to calls), or `None` for one
/// genai made up (`call_N`).
fn api_id(id: &str) -> Option<&str> {
    let made_up = id
        .strip_prefix("call_")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    (!made_up && !id.is_empty()).then_some(id)
}

fn safety_settings(value: Value) -> Result<Value> {
    let bad = || {
        Error::new(
            ErrorKind::InvalidParameter,
            format!("{FORMAT} parameter `safety_settings`: expected a list of {{category, threshold}} or an object of category: threshold"),
        )
    };
    let value = match value {
        Value::String(s) => serde_json::from_str(s.trim()).map_err(|_| bad())?,
        other => other,
    };
    match value {
        Value::Array(items)
            if items
                .iter()
                .all(|i| i.get("category").is_some_and(Value::is_string)) =>
        {
            Ok(Value::Array(items))
        }
        Value::Object(o) if o.values().all(Value::is_string) => Ok(Value::Array(
            o.into_iter()
                .map(|(category, threshold)| json!({"category": category, "threshold": threshold}))
                .collect(),
        )),
        _ => Err(bad()),
    }
}

/// The media type of an image URL, from its extension (`fileData` needs one).
fn media_type_of(url: &str) -> &'static str {
    let path = url
        .split(['?', '#'])
        .next()
        .unwrap_or(url)
        .to_ascii_lowercase();
    match path.rsplit('.').next() {
        Some("png") => "image/png",
        Some("webp") => "image/webp",
        Some("heic") => "image/heic",
        Some("heif") => "image/heif",
        Some("gif") => "image/gif",
        _ => "image/jpeg",
    }
}

/// The Gemini `parts` of one message. Reasoning is not sent back: the signatures the API
/// requires travel with the function calls.
fn parts_of(m: &Message, names: &CallNames<'_>) -> Result<Vec<Value>> {
    let mut parts = Vec::new();
    for part in &m.content {
        parts.push(match part {
            Part::Reasoning { .. } => continue,
            Part::Text { text } => json!({ "text": text }),
            Part::Json { value } => json!({ "text": value.to_string() }),
            Part::Image {
                url: Some(url),
                media_type,
                ..
            } => json!({"fileData": {
                "mimeType": media_type.clone().unwrap_or_else(|| media_type_of(url).to_string()),
                "fileUri": url
            }}),
            Part::Image {
                media_type: Some(mt),
                data: Some(data),
                ..
            } => json!({"inlineData": {"mimeType": mt, "data": data}}),
            Part::Image { .. } => {
                return Err(Error::invalid_params(
                    "an image part needs `url`, or `mediaType` and `data`",
                ))
            }
            Part::ToolCall {
                id,
                name,
                arguments,
                signature,
            } => {
                // `args` is a JSON object (a Struct).
                let args = match arguments {
                    Value::Object(_) => arguments.clone(),
                    Value::Null => json!({}),
                    other => json!({ "value": other }),
                };
                let mut call = json!({"name": name, "args": args});
                if let Some(id) = api_id(id) {
                    call["id"] = Value::from(id);
                }
                let mut part = json!({ "functionCall": call });
                if let Some(signature) = signature {
                    part["thoughtSignature"] = Value::from(signature.as_str());
                }
                part
            }
            Part::ToolResult {
                tool_call_id,
                content,
                is_error,
            } => {
                let name = names.get(tool_call_id).unwrap_or(tool_call_id);
                // `output` and `error` are the keys the API documents; a lone JSON object is
                // the whole response.
                let response = match content.as_slice() {
                    [Part::Json {
                        value: v @ Value::Object(_),
                    }] if !is_error => v.clone(),
                    _ if *is_error => json!({ "error": text_of(content) }),
                    _ => json!({ "output": text_of(content) }),
                };
                let mut result = json!({"name": name, "response": response});
                if let Some(id) = api_id(tool_call_id) {
                    result["id"] = Value::from(id);
                }
                json!({ "functionResponse": result })
            }
        });
    }
    Ok(parts)
}

/// An `error` object, or a prompt blocked by `promptFeedback.blockReason`.
fn check_answer(v: &Value) -> Result<()> {
    if let Some(err) = v.get("error") {
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| err.to_string());
        return Err(Error::provider(
            match err.get("status").and_then(Value::as_str) {
                Some(status) => format!("{status}: {message}"),
                None => message,
            },
        ));
    }
    if let Some(reason) = str_at(v, "/promptFeedback/blockReason") {
        return Err(Error::provider(format!(
            "the provider blocked the prompt ({reason}); rephrase it, or loosen safety_settings"
        )));
    }
    Ok(())
}

/// Adds a candidate's thoughts (as reasoning, with their signature) and function calls to
/// `reply` and returns its text.
fn read_parts(candidate: &Value, reply: &mut ReplyBuilder) -> String {
    let mut text = String::new();
    for part in items(candidate, "/content/parts") {
        if part.get("thought").and_then(Value::as_bool) == Some(true) {
            reply.reasoning(part.get("text").and_then(Value::as_str).unwrap_or_default());
            if let Some(signature) = part.get("thoughtSignature").and_then(Value::as_str) {
                reply.reasoning_signature(signature);
            }
            continue;
        }
        if let Some(t) = part.get("text").and_then(Value::as_str) {
            text.push_str(t);
        }
        if let Some(call) = part.get("functionCall") {
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("call_{}", reply.calls()));
            reply.whole_call(
                id,
                call.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                call.get("args").cloned().unwrap_or_else(|| json!({})),
                // Thinking models sign their calls beside `functionCall`; the signature must
                // come back with the call on the next request.
                part.get("thoughtSignature")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            );
        }
    }
    text
}

fn usage_of(v: &Value) -> Option<Usage> {
    let u = v.get("usageMetadata")?;
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    let input = n("promptTokenCount");
    let output = n("candidatesTokenCount");
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(Usage {
        input_tokens: input.unwrap_or(0),
        // Thinking tokens are billed as output.
        output_tokens: output.unwrap_or(0) + n("thoughtsTokenCount").unwrap_or(0),
        cache_read_tokens: n("cachedContentTokenCount"),
        cache_write_tokens: None,
        reasoning_tokens: n("thoughtsTokenCount"),
    })
}

/// The finish reasons of a candidate stopped for safety.
const BLOCKED: &[&str] = &[
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
];

/// The reply, or an error when the candidate was stopped for safety and carries nothing.
fn unblocked(reply: ReplyBuilder) -> Result<ModelReply> {
    if reply.is_empty() {
        if let Some(reason) = (reply.finish_reason.as_deref()).filter(|r| BLOCKED.contains(r)) {
            return Err(Error::provider(format!(
                "the provider blocked the reply (finishReason {reason})"
            )));
        }
    }
    reply.into_reply()
}

/// Reads the SSE events of `streamGenerateContent?alt=sse`: each one a partial
/// `GenerateContentResponse`; the last one's candidate has a `finishReason` (there is no
/// `[DONE]`). Gemini sends each call whole, in one event.
struct Events;

impl EventReader for Events {
    fn read(&mut self, event: &StreamEvent, reply: &mut ReplyBuilder) -> Result<()> {
        let Some(v) = event_json(event)? else {
            return Ok(());
        };
        check_answer(&v)?;
        if let Some(model) = str_at(&v, "/modelVersion") {
            reply.model = Some(model);
        }
        if let Some(u) = usage_of(&v) {
            reply.usage = Some(u);
        }
        if let Some(candidate) = v.pointer("/candidates/0") {
            let text = read_parts(candidate, reply);
            reply.text(&text);
            if let Some(reason) = str_at(candidate, "/finishReason") {
                reply.finish_reason = Some(reason);
                reply.complete();
            }
        }
        Ok(())
    }

    fn finish(self: Box<Self>, reply: ReplyBuilder) -> Result<ModelReply> {
        if !reply.is_complete() {
            return Err(super::reply::ended_early(" (no finishReason)"));
        }
        unblocked(reply)
    }
}

#[cfg(test)]
#[path = "gemini_tests.rs"]
mod tests;
