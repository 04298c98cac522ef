//! A fake OpenAI-compatible chat-completions server on loopback, for tests only.
//!
//! It is never part of the shipped binary: the integration tests reach it as
//! `support::fake_openai`, and `examples/fake-provider.rs` wraps it in a small CLI for
//! manual and end-to-end runs.
//!
//! It runs on the shared loopback server (`server.rs`: its own thread and tokio runtime,
//! so it works from sync tests and from any async test), and answers:
//!
//! * `POST /v1/chat/completions`: non-streaming JSON or streaming SSE, shaped
//!   byte for byte like the real API, with the behaviour chosen per request
//!   ([`Behavior`], [`Mode`]): normal reply, HTTP error, stream cut short,
//!   or a stall that never answers;
//! * `POST /v1/embeddings` (`fake_embeddings`);
//! * `GET /v1/models`: a one-model list;
//! * anything else: 404 with an OpenAI error body.
//!
//! Every request is recorded ([`FakeServer::requests`]), every response carries
//! `Connection: close` and the socket is closed after it, and clients that go
//! away while a response is pending are counted ([`FakeServer::disconnects`]).
//!
//! Why a hand-written HTTP/1.1 server instead of hyper/axum: the tests need
//! byte-level control of the wire — each SSE event as its own chunk of a
//! chunked body, streams cut off in the middle without the terminating chunk,
//! requests that are read and never answered, and noticing the exact moment a
//! client closes the socket. A framework would hide or "fix" exactly those
//! things, and this keeps the test support free of extra dependencies. Azure OpenAI's
//! deployment and `/openai/v1/` paths are served too, with Azure's refusals.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

mod json;
mod route;
use json::{
    error_body, to_json, Choice, Chunk, ChunkChoice, Completion, CompletionTokensDetails, Delta,
    Message, ModelEntry, ModelList, PromptTokensDetails, Usage,
};
// The tests route requests; the examples that include this file do not.
#[allow(unused_imports)]
pub use route::{Gate, Routed, Router};

use super::behavior::Faults;
use super::http1::{count_words, halves, split_reply};
pub use super::server::RecordedRequest;
use super::server::{Exchange, FakeServer, Wire};

/// Model name used when neither the behaviour nor the request names one.
const FALLBACK_MODEL: &str = "fake-model";
/// `created` of the model in `GET /v1/models`.
const MODEL_CREATED: u64 = 1_700_000_000;

/// How the server answers a chat-completions request. Tool calls are streamed as
/// `tool_calls` deltas (the id and name first, the arguments in two pieces), with
/// `finish_reason: "tool_calls"`; when streaming there are always exactly `chunks` content
/// chunks, so a reply shorter than that yields some empty ones.
pub type Behavior = super::behavior::Behavior<Mode>;

impl Faults for Mode {
    const REPLY: &'static str = "Hello from the fake provider.";
    const CHUNKS: usize = 4;
}

#[derive(Clone, Debug, Default)]
pub enum Mode {
    /// A normal, complete answer.
    #[default]
    Ok,
    /// Answer with this HTTP status and an OpenAI error body
    /// `{"error":{"message":..,"type":..,"param":null,"code":..}}` (`code` is
    /// `null` when empty); 429 also sends `retry-after: 1`. Applies to
    /// streaming and non-streaming requests alike, as the real API does.
    Error {
        status: u16,
        message: String,
        code: String,
    },
    /// Streaming: send the headers, the role chunk and the first `after`
    /// content chunks, then close the connection without the finish chunk,
    /// `[DONE]` or the terminating 0-length chunk.
    /// Non-streaming: send the headers (with the full Content-Length) and the
    /// first half of the body, then close.
    CutAfter { after: usize },
    /// Read the request, then never answer: the socket stays open until the
    /// server is dropped or the client goes away (which counts as a disconnect).
    Stall,
    /// 429 with OpenAI's rate-limit error body and this `retry-after` header.
    RateLimited { retry_after: &'static str },
    /// A complete answer that ends with this `finish_reason` instead of `stop`, such as
    /// `length` (cut at `max_tokens`) or `repetition` (genai's local engine stopped a loop).
    Finish(&'static str),
}

/// A running fake OpenAI server; dropping it stops it.
pub type FakeOpenAi = FakeServer<OpenAi>;

impl FakeOpenAi {
    /// Starts on 127.0.0.1:`port` (0 = any free port) in its own background
    /// thread running its own tokio runtime. Returns once listening.
    pub fn start(port: u16, default: Behavior) -> io::Result<FakeOpenAi> {
        FakeServer::listen(port, OpenAi::default(), default)
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port())
    }
}

/// The OpenAI chat-completions wire format (and Azure OpenAI's paths for it).
#[derive(Default)]
pub struct OpenAi {
    /// Numbers the chat answers (`chatcmpl-fakeN`, `req_fakeN`), from 1.
    answered: AtomicU64,
    /// Answers chat requests by what they hold, before the queue.
    router: std::sync::Mutex<Option<Router>>,
}

impl Wire for OpenAi {
    type Behavior = Behavior;
    type Record = RecordedRequest;
    const NAME: &'static str = "openai";

    /// A valid chat request (a JSON object on a chat route) takes a behaviour.
    fn inspect(&self, r: &RecordedRequest, _: Option<&str>) -> (RecordedRequest, bool) {
        (
            r.clone(),
            matches!(route(r), Route::Chat) && r.body.is_object(),
        )
    }

    fn malformed(message: &str) -> Vec<u8> {
        error_body(message, "invalid_request_error", None)
    }

    async fn answer(ex: Exchange<Self>) {
        answer(ex).await
    }
}

enum Route {
    Chat,
    Embeddings,
    Models,
    NotFound,
    /// Azure's refusals: status and message.
    Refused(u16, &'static str),
}

fn route(request: &RecordedRequest) -> Route {
    let route_path = request.route();
    // Azure OpenAI serves the same wire at its own paths, and wants its own `api-key` header
    // (401 without it) and, outside `/openai/v1/`, an `api-version` (404 without it).
    let operation = |p: &str| p.ends_with("/chat/completions") || p.ends_with("/embeddings");
    let azure_v1 =
        route_path == "/openai/v1/chat/completions" || route_path == "/openai/v1/embeddings";
    let azure_deployment = route_path.starts_with("/openai/deployments/") && operation(route_path);
    let has_header = |name: &str| request.headers.iter().any(|(n, _)| n == name);
    match (request.method.as_str(), route_path) {
        ("POST", "/v1/chat/completions") => Route::Chat,
        ("POST", "/v1/embeddings") => Route::Embeddings,
        ("POST", _) if (azure_v1 || azure_deployment) && !has_header("api-key") => {
            Route::Refused(401, "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")
        }
        ("POST", _) if azure_deployment && !request.path.contains("api-version=") => {
            Route::Refused(404, "Resource not found")
        }
        ("POST", p) if (azure_v1 || azure_deployment) && p.ends_with("/embeddings") => {
            Route::Embeddings
        }
        ("POST", _) if azure_v1 || azure_deployment => Route::Chat,
        ("GET", "/v1/models") => Route::Models,
        _ => Route::NotFound,
    }
}

async fn answer(mut ex: Exchange<OpenAi>) {
    let routed = match route(&ex.request) {
        Route::Chat => ex.wire().routed(&ex.request),
        _ => None,
    };
    if let Some((behavior, gate)) = routed {
        if let Some(gate) = gate {
            if !gate.pass().await {
                let body = error_body("the gate's other requests never came", "server_error", None);
                return ex.respond(500, "application/json", &[], &body).await;
            }
        }
        return chat(ex, behavior).await;
    }
    match route(&ex.request) {
        Route::Chat => match ex.behavior.take() {
            Some(behavior) => chat(ex, behavior).await,
            None => {
                let body = error_body(
                    "We could not parse the JSON body of your request. (HINT: This likely means \
                     you aren't using your HTTP library correctly. The OpenAI API expects a JSON \
                     payload, but what was sent was not valid JSON.)",
                    "invalid_request_error",
                    None,
                );
                ex.respond(400, "application/json", &[], &body).await
            }
        },
        Route::Embeddings => {
            let (status, body) = super::fake_embeddings::openai(&ex.request.body);
            ex.respond(status, "application/json", &[], &to_json(&body))
                .await
        }
        Route::Models => {
            let model = ex.default_behavior().model_or(FALLBACK_MODEL);
            let body = to_json(&ModelList {
                object: "list",
                data: [ModelEntry {
                    id: &model,
                    object: "model",
                    created: MODEL_CREATED,
                    owned_by: "fake",
                }],
            });
            ex.respond(200, "application/json", &[], &body).await
        }
        Route::Refused(status, message) => {
            let code = status.to_string();
            let body = to_json(&serde_json::json!({"error": {"code": code, "message": message}}));
            ex.respond(status, "application/json", &[], &body).await
        }
        Route::NotFound => {
            let message = format!("Invalid URL ({} {})", ex.request.method, ex.request.path);
            let body = error_body(&message, "invalid_request_error", None);
            ex.respond(404, "application/json", &[], &body).await
        }
    }
}

// ---------------------------------------------------------------------------
// Chat completions

async fn chat(mut ex: Exchange<OpenAi>, behavior: Behavior) {
    let n = ex.wire().answered.fetch_add(1, Ordering::SeqCst) + 1;
    let id = format!("chatcmpl-fake{n}");
    let request_id = format!("req_fake{n}");
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let body = &ex.request.body;
    let model = behavior.model_or(
        body.get("model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .unwrap_or(FALLBACK_MODEL),
    );
    let streaming = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let include_usage = body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    // DeepSeek's rule: reasoning is for display only, and a request that sends it back is
    // refused.
    let sent_reasoning = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| m.get("reasoning_content").is_some());
    if sent_reasoning {
        let body = error_body(
            "The reasoning_content is an intermediate result for display purposes only and will not be included in the context for inference. Please remove the reasoning_content from your input.",
            "invalid_request_error",
            None,
        );
        return ex.respond(400, "application/json", &[], &body).await;
    }
    // The behaviour's cache reads are part of the prompt, as OpenAI counts them.
    let prompt_tokens = prompt_words(body) + behavior.cache_read;
    // The reasoning is part of the completion, as OpenAI and DeepSeek count it.
    let reasoning_tokens = count_words(&behavior.reasoning);
    let completion_tokens = count_words(&behavior.reply).max(1) + reasoning_tokens;
    let usage = Usage {
        prompt_tokens,
        completion_tokens,
        total_tokens: prompt_tokens + completion_tokens,
        prompt_tokens_details: (behavior.cache_read > 0).then_some(PromptTokensDetails {
            cached_tokens: behavior.cache_read,
        }),
        completion_tokens_details: (reasoning_tokens > 0)
            .then_some(CompletionTokensDetails { reasoning_tokens }),
    };

    match behavior.mode {
        Mode::Stall => ex.stall().await,
        Mode::Error {
            status,
            ref message,
            ref code,
        } => {
            if !ex.pause(behavior.delay).await {
                return;
            }
            let kind = error_type(status, code);
            let code = (!code.is_empty()).then_some(code.as_str());
            let body = error_body(message, kind, code);
            let extra = [("x-request-id", request_id.as_str())];
            ex.respond_error(status, "application/json", &extra, status == 429, &body)
                .await
        }
        Mode::RateLimited { retry_after } => {
            let body = error_body(
                "Rate limit reached",
                "requests",
                Some("rate_limit_exceeded"),
            );
            let extra = [
                ("x-request-id", request_id.as_str()),
                ("retry-after", retry_after),
            ];
            ex.respond(429, "application/json", &extra, &body).await
        }
        Mode::Ok | Mode::CutAfter { .. } | Mode::Finish(_) if !streaming => {
            if !ex.pause(behavior.delay).await {
                return;
            }
            let body = to_json(&Completion {
                id: &id,
                object: "chat.completion",
                created,
                model: &model,
                choices: [Choice {
                    index: 0,
                    message: Message {
                        role: "assistant",
                        content: (!behavior.reply.is_empty() || behavior.tool_calls.is_empty())
                            .then_some(behavior.reply.as_str()),
                        reasoning_content: (!behavior.reasoning.is_empty())
                            .then_some(behavior.reasoning.as_str()),
                        refusal: None,
                        tool_calls: (!behavior.tool_calls.is_empty()).then(|| {
                            behavior
                                .tool_calls
                                .iter()
                                .map(|(id, name, args)| {
                                    serde_json::json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
                                })
                                .collect()
                        }),
                    },
                    logprobs: None,
                    finish_reason: finish_reason(&behavior),
                }],
                usage,
                system_fingerprint: "fp_fake",
            });
            let extra = [("x-request-id", request_id.as_str())];
            if matches!(behavior.mode, Mode::CutAfter { .. }) {
                // The full Content-Length, half the body, then FIN.
                return ex.respond_cut("application/json", &extra, &body).await;
            }
            ex.respond(200, "application/json", &extra, &body).await
        }
        Mode::Ok | Mode::CutAfter { .. } | Mode::Finish(_) => {
            let cut = match behavior.mode {
                Mode::CutAfter { after } => Some(after),
                _ => None,
            };
            let stream = Stream {
                id: &id,
                created,
                model: &model,
                usage: include_usage.then_some(usage),
                request_id: &request_id,
            };
            if stream_reply(&mut ex, &stream, &behavior, cut).await {
                ex.end_chunked().await;
            }
            // Otherwise cut or gone: dropping the socket closes it mid-body.
        }
    }
}

struct Stream<'a> {
    id: &'a str,
    created: u64,
    model: &'a str,
    /// Present when the request asked for `stream_options.include_usage`.
    usage: Option<Usage>,
    request_id: &'a str,
}

impl Stream<'_> {
    fn chunk(&self, delta: Delta<'_>, finish_reason: Option<&str>) -> Vec<u8> {
        to_json(&Chunk {
            id: self.id,
            object: "chat.completion.chunk",
            created: self.created,
            model: self.model,
            system_fingerprint: "fp_fake",
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                logprobs: None,
                finish_reason,
            }],
            usage: self.usage.map(|_| None),
        })
    }
}

/// Streams every event up to `[DONE]`; true when all went out (the terminating chunk is the
/// caller's), false when cut (`cut`: after that many content chunks) or the client left.
async fn stream_reply(
    ex: &mut Exchange<OpenAi>,
    stream: &Stream<'_>,
    behavior: &Behavior,
    cut: Option<usize>,
) -> bool {
    let extra = [
        ("cache-control", "no-cache"),
        ("x-request-id", stream.request_id),
    ];
    if !ex
        .start_chunked("text/event-stream; charset=utf-8", &extra)
        .await
    {
        return false;
    }

    let role = stream.chunk(
        Delta {
            role: Some("assistant"),
            content: Some(""),
            reasoning_content: None,
            refusal: Some(None),
            tool_calls: None,
        },
        None,
    );
    if !send_event(ex, &role).await {
        return false;
    }
    // Reasoning first, in two pieces, as DeepSeek and vLLM stream `reasoning_content`.
    if !behavior.reasoning.is_empty() {
        let (first, second) = halves(&behavior.reasoning);
        for piece in [first, second] {
            let chunk = stream.chunk(
                Delta {
                    reasoning_content: Some(piece),
                    ..Delta::default()
                },
                None,
            );
            if !send_event(ex, &chunk).await {
                return false;
            }
        }
    }
    for (i, piece) in split_reply(&behavior.reply, behavior.chunks)
        .into_iter()
        .enumerate()
    {
        if cut == Some(i) || !ex.pause(behavior.delay).await {
            return false;
        }
        let content = stream.chunk(
            Delta {
                content: Some(piece),
                ..Delta::default()
            },
            None,
        );
        if !send_event(ex, &content).await {
            return false;
        }
    }
    if cut.is_some() || !ex.pause(Duration::ZERO).await {
        return false;
    }

    for (i, (id, name, args)) in behavior.tool_calls.iter().enumerate() {
        let (first, second) = halves(args);
        let pieces = [
            serde_json::json!([{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]),
            serde_json::json!([{"index": i, "function": {"arguments": first}}]),
            serde_json::json!([{"index": i, "function": {"arguments": second}}]),
        ];
        for piece in pieces {
            let chunk = stream.chunk(
                Delta {
                    tool_calls: Some(piece),
                    ..Delta::default()
                },
                None,
            );
            if !send_event(ex, &chunk).await {
                return false;
            }
        }
    }
    let finish = stream.chunk(Delta::default(), Some(finish_reason(behavior)));
    if !send_event(ex, &finish).await {
        return false;
    }
    if let Some(usage) = stream.usage {
        let last = to_json(&Chunk {
            id: stream.id,
            object: "chat.completion.chunk",
            created: stream.created,
            model: stream.model,
            system_fingerprint: "fp_fake",
            choices: Vec::new(),
            usage: Some(Some(usage)),
        });
        if !send_event(ex, &last).await {
            return false;
        }
    }
    send_event(ex, b"[DONE]").await
}

/// Writes `data: <payload>\n\n` as one HTTP chunk; false if the client is gone.
async fn send_event(ex: &mut Exchange<OpenAi>, payload: &[u8]) -> bool {
    let mut event = Vec::with_capacity(payload.len() + 8);
    event.extend_from_slice(b"data: ");
    event.extend_from_slice(payload);
    event.extend_from_slice(b"\n\n");
    ex.chunk(&event).await
}

/// Whitespace-separated words in the text of every message: string contents
/// and the `text` of text parts (image and other parts count nothing).
fn prompt_words(body: &Value) -> u64 {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return 0;
    };
    messages
        .iter()
        .map(|message| match message.get("content") {
            Some(Value::String(text)) => count_words(text),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter(|part| {
                    matches!(
                        part.get("type").and_then(Value::as_str),
                        None | Some("text")
                    )
                })
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .map(count_words)
                .sum(),
            _ => 0,
        })
        .sum()
}

/// Why the answer of `behavior` ends: its mode's reason, else `tool_calls` when it calls tools,
/// else `stop`.
fn finish_reason(behavior: &Behavior) -> &'static str {
    match behavior.mode {
        Mode::Finish(reason) => reason,
        _ if !behavior.tool_calls.is_empty() => "tool_calls",
        _ => "stop",
    }
}

/// The OpenAI error `type` for a status (and code).
fn error_type(status: u16, code: &str) -> &'static str {
    match status {
        429 if code == "insufficient_quota" => "insufficient_quota",
        429 => "requests",
        500..=599 => "server_error",
        _ => "invalid_request_error",
    }
}
