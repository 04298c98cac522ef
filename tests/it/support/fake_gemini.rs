//! A fake Gemini API on loopback, for tests only: `POST /v1beta/models/{model}:generateContent`
//! and `:streamGenerateContent?alt=sse`, answered as https://ai.google.dev/api/generate-content
//! describes.
//!
//! A stream is `text/event-stream`, chunked, one `data: {GenerateContentResponse}` event per
//! chunk; the last candidate has `finishReason: "STOP"` and the full `usageMetadata` (there is
//! no `[DONE]`). Errors are `{"error": {"code", "message", "status"}}`. The fake checks the key
//! the way the API does: no `x-goog-api-key` header is 403 `PERMISSION_DENIED`, a wrong one 400
//! `INVALID_ARGUMENT`; and, stricter than the API, it refuses a key in the URL (`?key=`), so a
//! test proves the provider never puts it there. It also refuses a body that is not a
//! GenerateContentRequest (no `contents`, a role other than `user`/`model`, parts that are not a
//! list, a `generationConfig` that is not an object). Tokens are counted as words. The
//! HTTP/1.1 server is `server.rs`.
//!
//! Thoughts: a behavior's `reasoning` becomes a `thought: true` part before the answer when the
//! request sets `generationConfig.thinkingConfig.includeThoughts`.
//!
//! Tools: a behavior's `tool_calls` become `functionCall` parts (no `id`, as older models send
//! them; streamed one call per event after the text). The fake refuses what the API refuses in
//! function calling: schema keys outside Gemini's subset in a declaration's `parameters`, a
//! `functionResponse` without a name or an object `response`, and a turn answering a
//! function-call turn with another number of responses than there were calls.

use serde_json::{json, Value};

pub use super::behavior::Mode;

/// How the fake answers one model call.
pub type Behavior = super::behavior::Behavior<Mode>;
use super::http1::{count_words, split_reply};
use super::server::{Exchange, RecordedRequest, Wire};

/// A running fake Gemini API.
pub type FakeServer = super::server::FakeServer<Gemini>;

pub const KEY: &str = "AIza-fake-gemini-key";

/// A fake that wants [`KEY`].
pub fn start(default: Behavior) -> FakeServer {
    let fake = FakeServer::listen(0, Gemini, default).expect("start the fake Gemini server");
    fake.expect_key(Some(KEY));
    fake
}

/// The Gemini API's wire format.
pub struct Gemini;

impl Wire for Gemini {
    type Behavior = Behavior;
    type Record = RecordedRequest;
    const NAME: &'static str = "gemini";

    fn inspect(&self, r: &RecordedRequest, _: Option<&str>) -> (RecordedRequest, bool) {
        (r.clone(), matches!(call(r), Ok(Some(_))))
    }

    async fn answer(ex: Exchange<Self>) {
        answer(ex).await
    }
}

/// `(model, streaming)` of a model call; `Ok(None)` for a request that needs the key check
/// first; `Err` with the status and error body the API would answer.
fn call(r: &RecordedRequest) -> Result<Option<(String, bool)>, (u16, Value)> {
    let route = r.route();
    let target = route
        .strip_prefix("/v1beta/models/")
        .and_then(|rest| rest.split_once(':'));
    let Some((model, method)) = target.filter(|_| r.method == "POST") else {
        return Err(error(
            404,
            &format!("Requested entity was not found: {route}"),
            "NOT_FOUND",
        ));
    };
    let streaming = match method {
        "generateContent" => false,
        "streamGenerateContent" => true,
        _ => return Err(error(404, "Method not found.", "NOT_FOUND")),
    };
    if r.query("key").is_some() {
        return Err(error(
            400,
            "fake Gemini: the API key must not be in the URL",
            "INVALID_ARGUMENT",
        ));
    }
    if streaming && r.query("alt") != Some("sse") {
        return Err(error(
            400,
            "fake Gemini: stream with alt=sse",
            "INVALID_ARGUMENT",
        ));
    }
    if r.header("x-goog-api-key").is_none() {
        return Ok(None);
    }
    if let Some(why) = body_problem(&r.body) {
        return Err(error(
            400,
            &format!("Invalid JSON payload received. {why}"),
            "INVALID_ARGUMENT",
        ));
    }
    Ok(Some((model.to_string(), streaming)))
}

fn body_problem(body: &Value) -> Option<String> {
    let Some(b) = body.as_object() else {
        return Some("The body is not a JSON object.".into());
    };
    let contents = b.get("contents").and_then(Value::as_array)?;
    if contents.is_empty() {
        return Some("contents is not specified".into());
    }
    for c in contents {
        match c.get("role").and_then(Value::as_str) {
            Some("user" | "model") | None => {}
            Some(other) => {
                return Some(format!(
                    "Please use a valid role: user, model. Got {other}."
                ))
            }
        }
        if !c.get("parts").is_some_and(Value::is_array) {
            return Some(
                "Unknown name \"parts\": Proto field is not repeating, cannot start list.".into(),
            );
        }
    }
    for key in ["generationConfig", "systemInstruction"] {
        if b.get(key).is_some_and(|v| !v.is_object()) {
            return Some(format!("Invalid value at '{key}', expected an object."));
        }
    }
    if b.get("safetySettings").is_some_and(|v| !v.is_array()) {
        return Some("Invalid value at 'safety_settings', expected a list.".into());
    }
    tools_problem(b.get("tools")).or_else(|| function_turns_problem(contents))
}

/// Gemini's `Schema` keys (https://ai.google.dev/api/caching#Schema).
const SCHEMA_KEYS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "minimum",
    "maximum",
];

fn tools_problem(tools: Option<&Value>) -> Option<String> {
    let tools = tools?;
    let Some(list) = tools.as_array() else {
        return Some("Invalid value at 'tools', expected a list.".into());
    };
    for (i, tool) in list.iter().enumerate() {
        let declarations = tool["functionDeclarations"]
            .as_array()
            .into_iter()
            .flatten();
        for (j, d) in declarations.enumerate() {
            if !d["name"].is_string() {
                return Some(format!(
                    "tools[{i}].function_declarations[{j}].name is required"
                ));
            }
            if let Some(p) = d.get("parameters") {
                let at = format!("tools[{i}].function_declarations[{j}].parameters");
                if let Some(why) = schema_problem(p, &at) {
                    return Some(why);
                }
            }
        }
    }
    None
}

fn schema_problem(schema: &Value, at: &str) -> Option<String> {
    let o = schema.as_object()?;
    for (k, v) in o {
        if !SCHEMA_KEYS.contains(&k.as_str()) {
            return Some(format!(
                "Unknown name \"{k}\" at '{at}': Cannot find field."
            ));
        }
        if k == "type" && !v.is_string() {
            return Some(format!("Invalid value at '{at}.type', expected a string."));
        }
    }
    if let Some(props) = o.get("properties").and_then(Value::as_object) {
        for (name, p) in props {
            if let Some(why) = schema_problem(p, &format!("{at}.properties[{name}].value")) {
                return Some(why);
            }
        }
    }
    o.get("items")
        .and_then(|i| schema_problem(i, &format!("{at}.items")))
}

/// A user turn right after a model turn with function calls answers them all, each response
/// named and with an object `response`.
fn function_turns_problem(contents: &[Value]) -> Option<String> {
    let count = |c: &Value, key: &str| {
        c["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p.get(key).is_some())
            .count()
    };
    for pair in contents.windows(2) {
        let calls = count(&pair[0], "functionCall");
        let responses = count(&pair[1], "functionResponse");
        if pair[0]["role"] == "model" && calls > 0 && calls != responses {
            return Some("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.".into());
        }
    }
    for c in contents {
        for p in c["parts"].as_array().into_iter().flatten() {
            if let Some(r) = p.get("functionResponse") {
                if !r["name"].is_string() || !r["response"].is_object() {
                    return Some("function_response needs a name and a response object".into());
                }
            }
        }
    }
    None
}

fn error(code: u16, message: &str, status: &str) -> (u16, Value) {
    (
        code,
        json!({"error": {"code": code, "message": message, "status": status}}),
    )
}

fn status_name(code: u16) -> &'static str {
    match code {
        400 => "INVALID_ARGUMENT",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    }
}

fn prompt_words(body: &Value) -> u64 {
    body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["parts"].as_array().into_iter().flatten())
        .filter_map(|p| p["text"].as_str())
        .map(count_words)
        .sum()
}

const JSON: &str = "application/json; charset=UTF-8";

/// A refusal made before any answer: its status and Google's error body.
async fn refuse(ex: Exchange<Gemini>, (code, body): (u16, Value)) {
    ex.respond(code, JSON, &[], body.to_string().as_bytes())
        .await
}

async fn answer(mut ex: Exchange<Gemini>) {
    if ex.request.method == "POST" && ex.request.route().ends_with(":batchEmbedContents") {
        let (status, body) = match ex.expected_key.clone() {
            Some(key) if ex.request.header("x-goog-api-key") != Some(key.as_str()) => error(
                400,
                "API key not valid. Please pass a valid API key.",
                "INVALID_ARGUMENT",
            ),
            _ => super::fake_embeddings::gemini(&ex.request.body),
        };
        return refuse(ex, (status, body)).await;
    }
    let (model, streaming) = match call(&ex.request) {
        Ok(Some(c)) => c,
        Ok(None) => {
            let refusal = error(
                403,
                "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
                "PERMISSION_DENIED",
            );
            return refuse(ex, refusal).await;
        }
        Err(refusal) => return refuse(ex, refusal).await,
    };
    if let Some(key) = ex.expected_key.clone() {
        if ex.request.header("x-goog-api-key") != Some(key.as_str()) {
            let refusal = error(
                400,
                "API key not valid. Please pass a valid API key.",
                "INVALID_ARGUMENT",
            );
            return refuse(ex, refusal).await;
        }
    }
    let behavior = ex.behavior.clone().unwrap_or_default();
    let model = behavior.model_or(&model);
    // The behaviour's cache reads are part of the prompt, as Gemini counts them.
    let cached = behavior.cache_read;
    let prompt = prompt_words(&ex.request.body) + cached;
    let output = count_words(&behavior.reply).max(1);
    let response_id = format!("fake-{}", ex.n);
    let calls: Vec<Value> = behavior
        .calls_with_json_arguments()
        .map(|(_, name, args)| json!({"functionCall": {"name": name, "args": args}}))
        .collect();
    let response_of = |parts: Vec<Value>, last: bool| {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        let usage = if last {
            candidate["finishReason"] = Value::from("STOP");
            let mut u = json!({"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output});
            if cached > 0 {
                u["cachedContentTokenCount"] = Value::from(cached);
            }
            u
        } else {
            json!({"promptTokenCount": prompt, "totalTokenCount": prompt})
        };
        json!({"candidates": [candidate], "usageMetadata": usage, "modelVersion": model, "responseId": response_id})
    };
    let response = |text: &str, last: bool| response_of(vec![json!({ "text": text })], last);
    // Thought summaries come only when the request asks for them, as the real API does.
    let include_thoughts =
        ex.request.body["generationConfig"]["thinkingConfig"]["includeThoughts"] == true;
    let thought = (include_thoughts && !behavior.reasoning.is_empty())
        .then(|| json!({"text": behavior.reasoning, "thought": true}));
    match behavior.mode {
        Mode::Stall => ex.stall().await,
        Mode::Error {
            status,
            ref message,
        } => {
            if !ex.pause(behavior.delay).await {
                return;
            }
            let (_, body) = error(status, message, status_name(status));
            ex.respond_error(
                status,
                JSON,
                &[],
                status == 429,
                body.to_string().as_bytes(),
            )
            .await
        }
        Mode::Blocked { ref reason } => {
            let body = json!({
                "promptFeedback": {"blockReason": reason, "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}]},
                "usageMetadata": {"promptTokenCount": prompt, "totalTokenCount": prompt},
                "modelVersion": model
            });
            if streaming {
                if ex.start_chunked("text/event-stream", &[]).await
                    && ex.chunk(format!("data: {body}\r\n\r\n").as_bytes()).await
                {
                    ex.end_chunked().await;
                }
            } else {
                ex.respond(200, JSON, &[], body.to_string().as_bytes())
                    .await
            }
        }
        _ if !streaming => {
            if !ex.pause(behavior.delay).await {
                return;
            }
            let mut parts: Vec<Value> = thought.iter().cloned().collect();
            if !behavior.reply.is_empty() || calls.is_empty() {
                parts.push(json!({"text": behavior.reply}));
            }
            parts.extend(calls.iter().cloned());
            let bytes = response_of(parts, true).to_string().into_bytes();
            if matches!(behavior.mode, Mode::CutAfter { .. }) {
                return ex.respond_cut(JSON, &[], &bytes).await;
            }
            ex.respond(200, JSON, &[], &bytes).await
        }
        _ => {
            if !ex.start_chunked("text/event-stream", &[]).await {
                return;
            }
            let pieces = if behavior.reply.is_empty() && !calls.is_empty() {
                Vec::new()
            } else {
                split_reply(&behavior.reply, behavior.chunks)
            };
            let n = pieces.len() + calls.len();
            if let Some(thought) = &thought {
                let event = format!(
                    "data: {}\r\n\r\n",
                    response_of(vec![thought.clone()], false)
                );
                if !ex.chunk(event.as_bytes()).await {
                    return;
                }
            }
            for (i, piece) in pieces.into_iter().enumerate() {
                match behavior.mode {
                    Mode::CutAfter { after } if after == i => return,
                    Mode::Malformed { after }
                        if after == i
                            && !ex
                                .chunk(b"data: {\"candidates\": [{\"content\r\n\r\n")
                                .await =>
                    {
                        return
                    }
                    _ => {}
                }
                if !ex.pause(behavior.delay).await {
                    return;
                }
                let event = format!("data: {}\r\n\r\n", response(piece, i + 1 == n));
                if !ex.chunk(event.as_bytes()).await {
                    return;
                }
            }
            // Each call whole in its own event, after the text.
            for (i, call) in calls.iter().enumerate() {
                let last = i + 1 == calls.len();
                let event = format!("data: {}\r\n\r\n", response_of(vec![call.clone()], last));
                if !ex.pause(behavior.delay).await || !ex.chunk(event.as_bytes()).await {
                    return;
                }
            }
            ex.end_chunked().await;
        }
    }
}
