//! A fake Anthropic Messages API server on loopback, for tests only.
//!
//! It answers `POST /v1/messages` like the real API, byte for byte where it matters: JSON
//! bodies, or server-sent events with `event:` and `data:` lines, each event in its own chunk
//! of a chunked body (message_start, content_block_start, ping, content_block_delta ...,
//! content_block_stop, message_delta, message_stop). Before answering it checks what the real
//! API checks and answers with Anthropic's error shape
//! (`{"type":"error","error":{"type","message"}}`): the `x-api-key` (401
//! authentication_error), the `anthropic-version` header (400), the content type, a JSON body
//! with `model`, `max_tokens` and `messages`, no unknown top-level field (the real API refuses
//! `anthropic_version` in the body), and image sources. With `thinking` enabled it checks
//! what extended thinking requires (a budget of at least 1024 tokens and below `max_tokens`;
//! the assistant turn whose `tool_use` the last user turn answers starts with its thinking
//! block, signed by this fake) and thinks before answering: a `thinking` block with a
//! signature (streamed as `thinking_delta` + `signature_delta`) before the text.
//!
//! Fault modes ([`Mode`]): an HTTP error (429 with `retry-after`, 500, 529 overloaded), a
//! stream cut in the middle of an event, an `error` event mid-stream, an event with malformed
//! JSON, and a stall that never answers. Every request is recorded with its headers; clients
//! that go away are counted. The HTTP/1.1 server is `server.rs`.
//!
//! Wire shapes: <https://docs.anthropic.com/en/api/messages>,
//! <https://docs.anthropic.com/en/docs/build-with-claude/streaming>,
//! <https://docs.anthropic.com/en/api/errors>,
//! <https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking>.

use std::io;

use serde_json::{json, Value};

use super::behavior::Faults;
use super::http1::{count_words, halves, split_reply};
use super::prompt_cache::{check_cache_control, claude_blocks, PromptCache};
pub use super::server::RecordedRequest;
use super::server::{Exchange, FakeServer, Wire};

/// The key the fake accepts unless told otherwise.
pub const KEY: &str = "sk-ant-test-key";

/// Top-level request fields the Messages API accepts; anything else is refused as the real
/// API does ("Extra inputs are not permitted").
const KNOWN_FIELDS: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "system",
    "metadata",
    "stop_sequences",
    "stream",
    "temperature",
    "top_k",
    "top_p",
    "tools",
    "tool_choice",
    "thinking",
    "service_tier",
    "container",
    "mcp_servers",
    "context_management",
];

/// How the server answers one request: `cache_read` and `cache_creation` are the usage's
/// `cache_read_input_tokens` and `cache_creation_input_tokens`; tool calls become `tool_use`
/// blocks after the text, with `stop_reason: "tool_use"` (streamed as `content_block_start` +
/// two `input_json_delta`s). The model is the request's.
pub type Behavior = super::behavior::Behavior<Mode>;

impl Faults for Mode {
    const REPLY: &'static str = "Hello from the fake Claude.";
    const CHUNKS: usize = 3;
}

#[derive(Clone, Debug, Default)]
pub enum Mode {
    #[default]
    Ok,
    /// This status with Anthropic's error body; 429 and 529 also send `retry-after: 1`.
    Error {
        status: u16,
        error_type: String,
        message: String,
    },
    /// Streaming: after `after` text deltas, send the first half of the next event's bytes
    /// and close the connection (no terminating chunk).
    CutAfter { after: usize },
    /// Streaming: after `after` text deltas, send an `error` event and end the body, as the
    /// real API does when it fails mid-stream (HTTP status already 200).
    ErrorEventAfter {
        after: usize,
        error_type: String,
        message: String,
    },
    /// Streaming: after `after` text deltas, send a `content_block_delta` event whose data is
    /// not JSON, then the rest of the stream. Non-streaming: a 200 body that is not JSON.
    MalformedAfter { after: usize },
    /// Read the request, never answer.
    Stall,
}

/// A running fake Anthropic server; dropping it stops it and closes its connections.
pub type FakeAnthropic = FakeServer<Anthropic>;

impl FakeAnthropic {
    /// Starts on 127.0.0.1 (any free port), accepting the key [`KEY`].
    pub fn start(default: Behavior) -> io::Result<FakeAnthropic> {
        let fake = FakeServer::listen(0, Anthropic::default(), default)?;
        fake.expect_key(Some(KEY));
        Ok(fake)
    }

    /// `http://127.0.0.1:PORT` (the API root; requests go to `/v1/messages`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port())
    }
}

/// The Anthropic Messages wire format, with its prompt cache: `cache_control` breakpoints
/// write prefixes that later requests read (unless a behaviour sets the cache counts).
#[derive(Default)]
pub struct Anthropic {
    cache: PromptCache,
}

impl Wire for Anthropic {
    type Behavior = Behavior;
    type Record = RecordedRequest;
    const NAME: &'static str = "anthropic";

    /// A request the real API would take gets a behaviour.
    fn inspect(&self, r: &RecordedRequest, key: Option<&str>) -> (RecordedRequest, bool) {
        (r.clone(), refusal(r, key).is_none())
    }

    fn malformed(message: &str) -> Vec<u8> {
        error_body("invalid_request_error", message)
    }

    async fn answer(mut ex: Exchange<Self>) {
        let n = ex.n;
        let request_id = format!("req_fake{n:020}");
        let refused = refusal(&ex.request, ex.expected_key.as_deref());
        match (refused, ex.behavior.take()) {
            (Some((status, kind, message)), _) => {
                let extra = [("request-id", request_id.as_str())];
                let body = error_body(kind, &message);
                ex.respond(status, "application/json", &extra, &body).await
            }
            (None, Some(mut behavior)) => {
                let body = &ex.request.body;
                // As the API does: the reply ends before the first stop sequence it holds.
                let stop_sequence = first_stop(body, &behavior.reply);
                if let Some((at, _)) = &stop_sequence {
                    behavior.reply.truncate(*at);
                    behavior.tool_calls.clear();
                }
                let (cache_read, cache_write) = match (behavior.cache_read, behavior.cache_creation)
                {
                    (0, 0) => ex.wire().cache.serve(&claude_blocks(body)),
                    _ => (0, 0),
                };
                let ctx = Ctx {
                    cache_read,
                    cache_write,
                    request_id: request_id.clone(),
                    message_id: format!("msg_fake{n:018}"),
                    model: body["model"].as_str().unwrap_or("claude-fake").to_string(),
                    input_tokens: prompt_words(body),
                    thinking: thinking_enabled(body).then(|| {
                        if behavior.reasoning.is_empty() {
                            "Let me think this through.".to_string()
                        } else {
                            behavior.reasoning.clone()
                        }
                    }),
                    stop_sequence: stop_sequence.map(|(_, s)| s),
                };
                let streaming = body["stream"].as_bool().unwrap_or(false);
                answer(ex, &ctx, &behavior, streaming).await
            }
            (None, None) => unreachable!("a request is refused or gets a behaviour"),
        }
    }
}

/// Anthropic's error body.
fn error_body(error_type: &str, message: &str) -> Vec<u8> {
    json!({"type": "error", "error": {"type": error_type, "message": message}})
        .to_string()
        .into_bytes()
}

/// What the real API would refuse before answering: status, error type and message.
fn refusal(request: &RecordedRequest, key: Option<&str>) -> Option<(u16, &'static str, String)> {
    let header = |name: &str| request.header(name);
    if (request.method.as_str(), request.path.as_str()) != ("POST", "/v1/messages") {
        Some((
            404,
            "not_found_error",
            format!("Not found: {} {}", request.method, request.path),
        ))
    } else if header("x-api-key") != key {
        Some((401, "authentication_error", "invalid x-api-key".to_string()))
    } else if header("anthropic-version").is_none() {
        Some((
            400,
            "invalid_request_error",
            "anthropic-version: header is required".to_string(),
        ))
    } else if !header("content-type").is_some_and(|t| t.starts_with("application/json")) {
        Some((
            400,
            "invalid_request_error",
            "content-type must be application/json".to_string(),
        ))
    } else if serde_json::from_slice::<Value>(&request.raw).is_err() {
        Some((
            400,
            "invalid_request_error",
            "The request body is not valid JSON.".to_string(),
        ))
    } else {
        check_body(&request.body).map(|m| (400, "invalid_request_error", m))
    }
}

/// What the real API would refuse in a body, or None.
pub fn check_body(body: &Value) -> Option<String> {
    let Some(map) = body.as_object() else {
        return Some("The request body must be a JSON object.".into());
    };
    for key in map.keys() {
        if !KNOWN_FIELDS.contains(&key.as_str()) {
            return Some(format!("{key}: Extra inputs are not permitted"));
        }
    }
    for required in ["model", "max_tokens", "messages"] {
        if !map.contains_key(required) {
            return Some(format!("{required}: Field required"));
        }
    }
    if let Some(stop) = map.get("stop_sequences") {
        if !stop.is_array() {
            return Some("stop_sequences: Input should be a valid list".into());
        }
    }
    let messages = map["messages"].as_array()?;
    if let Some(refused) = check_cache_control(body) {
        return Some(refused);
    }
    if let Some(refused) = check_thinking(map, messages) {
        return Some(refused);
    }
    for (i, m) in messages.iter().enumerate() {
        if !matches!(m["role"].as_str(), Some("user" | "assistant")) {
            return Some(format!(
                "messages.{i}.role: Input should be 'user' or 'assistant'"
            ));
        }
        for (j, block) in m["content"].as_array().into_iter().flatten().enumerate() {
            if block["type"] == "image" {
                let source = &block["source"];
                let ok = match source["type"].as_str() {
                    Some("base64") => {
                        matches!(
                            source["media_type"].as_str(),
                            Some("image/jpeg" | "image/png" | "image/gif" | "image/webp")
                        ) && source["data"].is_string()
                    }
                    Some("url") => source["url"].is_string(),
                    _ => false,
                };
                if !ok {
                    return Some(format!(
                        "messages.{i}.content.{j}.image.source: invalid image source"
                    ));
                }
            }
        }
    }
    None
}

/// Words of the system prompt and of every text in the messages (the fake's token count).
fn prompt_words(body: &Value) -> u64 {
    let text_words = |content: &Value| -> u64 {
        match content {
            Value::String(s) => count_words(s),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .map(count_words)
                .sum(),
            _ => 0,
        }
    };
    text_words(&body["system"])
        + body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| text_words(&m["content"]))
            .sum::<u64>()
}

struct Ctx {
    /// Words of the prompt read from and written to the fake's prompt cache.
    cache_read: u64,
    cache_write: u64,
    request_id: String,
    message_id: String,
    model: String,
    input_tokens: u64,
    /// What the model thinks first, when the request enables thinking.
    thinking: Option<String>,
    /// The request's stop sequence the reply stopped at.
    stop_sequence: Option<String>,
}

/// The request's stop sequence that comes first in `reply`, and where.
fn first_stop(body: &Value, reply: &str) -> Option<(usize, String)> {
    body["stop_sequences"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .filter_map(|s| reply.find(s).map(|at| (at, s.to_string())))
        .min()
}

/// Why the reply stopped, and at which stop sequence.
fn stop_of(ctx: &Ctx, b: &Behavior) -> (&'static str, Option<String>) {
    match (&ctx.stop_sequence, b.tool_calls.is_empty()) {
        (Some(s), _) => ("stop_sequence", Some(s.clone())),
        (None, true) => ("end_turn", None),
        (None, false) => ("tool_use", None),
    }
}

/// Whether the request enables extended thinking.
fn thinking_enabled(body: &Value) -> bool {
    body["thinking"]["type"] == "enabled"
}

/// The signature this fake gives a thinking text, and checks when it comes back.
pub fn signature_of(thinking: &str) -> String {
    // FNV-1a: stable across runs, and any change to the text changes it.
    let hash = thinking.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("EqFake{hash:016x}")
}

/// What extended thinking refuses: a budget out of range, a thinking block whose signature is
/// not the one given, and (thinking on) an assistant turn with the `tool_use` that the last
/// user turn answers which does not start with its thinking.
fn check_thinking(map: &serde_json::Map<String, Value>, messages: &[Value]) -> Option<String> {
    for (i, m) in messages.iter().enumerate() {
        for (j, block) in m["content"].as_array().into_iter().flatten().enumerate() {
            if block["type"] == "thinking"
                && block["signature"].as_str()
                    != Some(signature_of(block["thinking"].as_str().unwrap_or_default()).as_str())
            {
                return Some(format!(
                    "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                ));
            }
        }
    }
    let thinking = map.get("thinking")?;
    if thinking["type"] != "enabled" {
        return None;
    }
    let budget = thinking["budget_tokens"].as_u64().unwrap_or(0);
    if budget < 1024 {
        return Some(
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024".into(),
        );
    }
    if map["max_tokens"].as_u64().is_some_and(|max| max <= budget) {
        return Some("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size".into());
    }
    let answers_tools = messages.last().is_some_and(|m| {
        m["role"] == "user"
            && m["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
    });
    let i = messages.len().checked_sub(2)?;
    let first = messages[i]["content"][0]["type"].as_str().unwrap_or("text");
    if answers_tools && !matches!(first, "thinking" | "redacted_thinking") {
        return Some(format!(
            "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
        ));
    }
    None
}

async fn answer(mut ex: Exchange<Anthropic>, ctx: &Ctx, b: &Behavior, streaming: bool) {
    let extra = [("request-id", ctx.request_id.as_str())];
    match &b.mode {
        Mode::Stall => ex.stall().await,
        Mode::Error {
            status,
            error_type,
            message,
        } => {
            if !ex.pause(b.delay).await {
                return;
            }
            let retry_later = matches!(status, 429 | 529);
            let body = error_body(error_type, message);
            ex.respond_error(*status, "application/json", &extra, retry_later, &body)
                .await
        }
        _ if !streaming => {
            if !ex.pause(b.delay).await {
                return;
            }
            let body = if matches!(b.mode, Mode::MalformedAfter { .. }) {
                b"{\"id\": \"msg_broken\", \"content\": [".to_vec()
            } else {
                json!({
                    "id": ctx.message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": ctx.model,
                    "content": ctx.thinking.iter()
                        .map(|t| json!({"type": "thinking", "thinking": t, "signature": signature_of(t)}))
                        .chain(std::iter::once(json!({"type": "text", "text": b.reply})))
                        .chain(b.tool_calls.iter().map(|(id, name, input)| {
                            json!({"type": "tool_use", "id": id, "name": name,
                                   "input": serde_json::from_str::<Value>(input).unwrap()})
                        }))
                        .collect::<Vec<_>>(),
                    "stop_reason": stop_of(ctx, b).0,
                    "stop_sequence": stop_of(ctx, b).1,
                    "usage": usage(ctx, b, count_words(&b.reply).max(1)),
                })
                .to_string()
                .into_bytes()
            };
            ex.respond(200, "application/json", &extra, &body).await
        }
        _ => {
            if stream(&mut ex, ctx, b).await {
                ex.end_chunked().await;
            }
        }
    }
}

fn usage(ctx: &Ctx, b: &Behavior, output_tokens: u64) -> Value {
    // The API's input_tokens leaves the cached tokens out.
    let cached = ctx.cache_read + ctx.cache_write;
    json!({
        "input_tokens": ctx.input_tokens.saturating_sub(cached),
        "cache_creation_input_tokens": b.cache_creation + ctx.cache_write,
        "cache_read_input_tokens": b.cache_read + ctx.cache_read,
        "output_tokens": output_tokens,
        "service_tier": "standard"
    })
}

/// `event: NAME\ndata: JSON\n\n`, as the real API frames each event.
fn sse(name: &str, data: &str) -> Vec<u8> {
    format!("event: {name}\ndata: {data}\n\n").into_bytes()
}

/// Streams the reply up to its last event; true when it all went out and the body should
/// end (false: cut, ended by an error event, or the client left).
async fn stream(ex: &mut Exchange<Anthropic>, ctx: &Ctx, b: &Behavior) -> bool {
    let extra = [
        ("cache-control", "no-cache"),
        ("request-id", ctx.request_id.as_str()),
    ];
    if !ex
        .start_chunked("text/event-stream; charset=utf-8", &extra)
        .await
    {
        return false;
    }
    let start = json!({"type": "message_start", "message": {
        "id": ctx.message_id, "type": "message", "role": "assistant", "content": [],
        "model": ctx.model, "stop_reason": null, "stop_sequence": null,
        "usage": usage(ctx, b, 1)}});
    let mut events = vec![sse("message_start", &start.to_string())];
    // The thinking block, when thinking is on, is block 0 and the text comes after it.
    let text_index = usize::from(ctx.thinking.is_some());
    if let Some(thinking) = &ctx.thinking {
        let (first, second) = halves(thinking);
        events.push(sse(
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
        ));
        for piece in [first, second] {
            let delta = json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "thinking_delta", "thinking": piece}});
            events.push(sse("content_block_delta", &delta.to_string()));
        }
        let signature = json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "signature_delta", "signature": signature_of(thinking)}});
        events.push(sse("content_block_delta", &signature.to_string()));
        events.push(sse(
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ));
    }
    let start_text = json!({"type": "content_block_start", "index": text_index,
                            "content_block": {"type": "text", "text": ""}});
    events.push(sse("content_block_start", &start_text.to_string()));
    events.push(sse("ping", r#"{"type": "ping"}"#));
    for e in events.drain(..) {
        if !ex.chunk(&e).await {
            return false;
        }
    }
    for (i, piece) in split_reply(&b.reply, b.chunks).into_iter().enumerate() {
        if !ex.pause(b.delay).await {
            return false;
        }
        let delta = json!({"type": "content_block_delta", "index": text_index,
                           "delta": {"type": "text_delta", "text": piece}});
        let event = sse("content_block_delta", &delta.to_string());
        match &b.mode {
            Mode::CutAfter { after } if *after == i => {
                // Half an event, then the socket closes: no terminating chunk.
                ex.chunk(&event[..event.len() / 2]).await;
                return false;
            }
            Mode::ErrorEventAfter {
                after,
                error_type,
                message,
            } if *after == i => {
                let err =
                    json!({"type": "error", "error": {"type": error_type, "message": message}});
                // The body still ends properly: the caller is told to end it.
                return ex.chunk(&sse("error", &err.to_string())).await;
            }
            Mode::MalformedAfter { after } if *after == i => {
                let bad = sse(
                    "content_block_delta",
                    r#"{"type": "content_block_delta", "index": 0, "delta": {"type": "text_de"#,
                );
                if !ex.chunk(&bad).await {
                    return false;
                }
            }
            _ => {}
        }
        if !ex.chunk(&event).await {
            return false;
        }
    }
    let output = count_words(&b.reply).max(1);
    let mut tail = vec![sse(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": text_index}).to_string(),
    )];
    for (i, (id, name, input)) in b.tool_calls.iter().enumerate() {
        let index = text_index + i + 1;
        let (first, second) = halves(input);
        tail.push(sse(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})
            .to_string(),
        ));
        for piece in [first, second] {
            tail.push(sse(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece}})
                .to_string(),
            ));
        }
        tail.push(sse(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}).to_string(),
        ));
    }
    let (stop_reason, stop_sequence) = stop_of(ctx, b);
    tail.push(sse(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence},
                "usage": {"output_tokens": output}})
        .to_string(),
    ));
    tail.push(sse("message_stop", r#"{"type":"message_stop"}"#));
    for e in tail {
        if !ex.chunk(&e).await {
            return false;
        }
    }
    true
}
