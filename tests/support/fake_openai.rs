//! A fake OpenAI-compatible chat-completions server on loopback, for tests only.
//!
//! It is never part of the shipped binary: the integration tests include it with
//! `mod support;`-style `#[path]` modules, and `examples/fake-provider.rs` wraps it
//! in a small CLI for manual and end-to-end runs.
//!
//! The server listens on `127.0.0.1`, runs in its own background thread with its
//! own tokio runtime (so it works from sync tests and from any async test), and
//! answers:
//!
//! * `POST /v1/chat/completions`: non-streaming JSON or streaming SSE, shaped
//!   byte for byte like the real API, with the behaviour chosen per request
//!   ([`Behavior`], [`Mode`]): normal reply, HTTP error, stream cut short,
//!   or a stall that never answers;
//! * `GET /v1/models`: a one-model list;
//! * anything else: 404 with an OpenAI error body.
//!
//! Every request is recorded ([`FakeOpenAi::requests`]), every response carries
//! `Connection: close` and the socket is closed after it, and clients that go
//! away while a response is pending are counted ([`FakeOpenAi::disconnects`]).
//!
//! Why a hand-written HTTP/1.1 server instead of hyper/axum: the tests need
//! byte-level control of the wire — each SSE event as its own chunk of a
//! chunked body, streams cut off in the middle without the terminating chunk,
//! requests that are read and never answered, and noticing the exact moment a
//! client closes the socket. A framework would hide or "fix" exactly those
//! things, and this keeps the test support free of extra dependencies.

// Several test binaries include this file and each uses a different part of it.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};

// The HTTP/1.1 reading and writing, shared with the other fakes (which reach it as
// `crate::fake_openai::fake_http`, the way `rpc_client.rs` reaches `loopback_only`: a file
// loaded as a module twice in one test binary would make two sets of types).
#[path = "fake_http.rs"]
pub mod fake_http;
use fake_http::{
    close_gracefully, count_words, pause, peer_closed, read_request, response_head, send_response,
    split_reply, status_line, ReadError,
};

/// Model name used when neither the behaviour nor the request names one.
const FALLBACK_MODEL: &str = "fake-model";
/// `created` of the model in `GET /v1/models`.
const MODEL_CREATED: u64 = 1_700_000_000;

/// How the server answers a chat-completions request.
#[derive(Clone, Debug)]
pub struct Behavior {
    /// The assistant text.
    pub reply: String,
    /// Number of content chunks the reply is split into when streaming
    /// (0 is treated as 1). The split is on char boundaries, as even as
    /// possible; there are always exactly this many content chunks, so a
    /// reply shorter than `chunks` chars yields some empty ones.
    pub chunks: usize,
    /// Delay before each streamed content chunk, and before a non-streaming
    /// body (including an error body).
    pub delay: Duration,
    pub mode: Mode,
    /// Model name echoed in responses; when empty, the request's `"model"`.
    pub model: String,
    /// Tool calls after the text: `(id, name, arguments as a JSON string)`. Streamed as
    /// `tool_calls` deltas (the id and name first, the arguments in two pieces), with
    /// `finish_reason: "tool_calls"`.
    pub tool_calls: Vec<(String, String, String)>,
}

impl Default for Behavior {
    fn default() -> Self {
        Behavior {
            reply: "Hello from the fake provider.".to_string(),
            chunks: 4,
            delay: Duration::ZERO,
            mode: Mode::Ok,
            model: String::new(),
            tool_calls: Vec::new(),
        }
    }
}

#[derive(Clone, Debug)]
pub enum Mode {
    /// A normal, complete answer.
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
}

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub method: String,
    /// The request target as received (path, plus query string if any).
    pub path: String,
    /// Header names lower-cased, values as received (surrounding blanks
    /// trimmed), in the order they arrived.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Null` if empty or not JSON.
    pub body: Value,
    /// When the request was read.
    pub at: std::time::Instant,
}

impl RecordedRequest {
    /// The value of the first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A running fake server; dropping it stops the server and closes every
/// connection it still holds.
pub struct FakeOpenAi {
    port: u16,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for FakeOpenAi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeOpenAi")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl FakeOpenAi {
    /// Starts on 127.0.0.1:`port` (0 = any free port) in its own background
    /// thread running its own tokio runtime. Returns once listening.
    pub fn start(port: u16, default: Behavior) -> io::Result<FakeOpenAi> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                default,
                queue: VecDeque::new(),
                requests: Vec::new(),
            }),
            arrived: Condvar::new(),
            disconnects: AtomicUsize::new(0),
            next_id: AtomicU64::new(0),
        });
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("fake-openai-{port}"))
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match TcpListener::from_std(listener) {
                        Ok(listener) => {
                            let _ = ready_tx.send(Ok(()));
                            listener
                        }
                        Err(err) => {
                            let _ = ready_tx.send(Err(err));
                            return;
                        }
                    };
                    serve(listener, thread_shared, stop_rx).await;
                });
                // Dropping the runtime here cancels every connection task,
                // which closes the sockets it held (stalled ones included).
                drop(runtime);
            })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(FakeOpenAi {
                port,
                shared,
                stop: Some(stop_tx),
                thread: Some(thread),
            }),
            Ok(Err(err)) => {
                let _ = thread.join();
                Err(err)
            }
            Err(_) => {
                let _ = thread.join();
                Err(io::Error::other("fake OpenAI server thread died"))
            }
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Changes the behaviour for later requests (queued ones still go first).
    pub fn set_default(&self, b: Behavior) {
        self.shared.lock().default = b;
    }

    /// Queues a behaviour: the next chat request (in order of arrival) uses
    /// it; once the queue is empty, requests fall back to the default.
    pub fn push(&self, b: Behavior) {
        self.shared.lock().queue.push_back(b);
    }

    /// Every request received so far, in order of arrival.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Blocks until at least `n` requests were recorded, or `timeout` passed;
    /// true if they were.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let guard = self.shared.lock();
        let (guard, _) = self
            .shared
            .arrived
            .wait_timeout_while(guard, timeout, |state| state.requests.len() < n)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        guard.requests.len() >= n
    }

    /// How many responses ended because the client went away before the
    /// response was complete: a streamed chunk could not be written, the peer
    /// closed while a stream or a delayed body was pending, or the client
    /// closed a stalled request.
    pub fn disconnects(&self) -> usize {
        self.shared.disconnects.load(Ordering::SeqCst)
    }
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

// ---------------------------------------------------------------------------
// Shared state

struct Shared {
    state: Mutex<State>,
    arrived: Condvar,
    disconnects: AtomicUsize,
    next_id: AtomicU64,
}

struct State {
    default: Behavior,
    queue: VecDeque<Behavior>,
    requests: Vec<RecordedRequest>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a request and, for a valid chat request, takes its behaviour
    /// in the same step, so queued behaviours follow the order of arrival.
    fn record(&self, request: RecordedRequest, takes_behavior: bool) -> Option<Behavior> {
        let mut state = self.lock();
        state.requests.push(request);
        let behavior = takes_behavior.then(|| {
            let state = &mut *state;
            state
                .queue
                .pop_front()
                .unwrap_or_else(|| state.default.clone())
        });
        drop(state);
        self.arrived.notify_all();
        behavior
    }

    fn default_model(&self) -> String {
        let model = self.lock().default.model.clone();
        if model.is_empty() {
            FALLBACK_MODEL.to_string()
        } else {
            model
        }
    }

    fn disconnected(&self) {
        self.disconnects.fetch_add(1, Ordering::SeqCst);
    }
}

// ---------------------------------------------------------------------------
// Connections

async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(handle_connection(stream, Arc::clone(&shared)));
                }
                // e.g. out of file descriptors: back off briefly.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
    }
}

enum Route {
    Chat,
    Models,
    NotFound,
    /// Azure's refusals: status and message.
    Refused(u16, &'static str),
}

async fn handle_connection(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);

    let request = match read_request(&mut rd, &mut wr).await {
        Ok(request) => request,
        Err(ReadError::Gone) => return,
        Err(ReadError::Bad(message)) => {
            let body = error_body(&message, "invalid_request_error", None);
            let _ = send_response(&mut wr, 400, "application/json", &[], &body).await;
            let _ = wr.shutdown().await;
            return;
        }
    };

    // Only one request per connection: whatever the client sends from now on
    // is read and discarded, and end of input means it went away.
    let closed = peer_closed(&mut rd);
    tokio::pin!(closed);

    let route_path = request.target.split('?').next().unwrap_or_default();
    // Azure OpenAI serves the same wire at its own paths, and wants its own `api-key` header
    // (401 without it) and, outside `/openai/v1/`, an `api-version` (404 without it).
    let azure_v1 = route_path == "/openai/v1/chat/completions";
    let azure_deployment =
        route_path.starts_with("/openai/deployments/") && route_path.ends_with("/chat/completions");
    let has_header = |name: &str| request.headers.iter().any(|(n, _)| n == name);
    let route = match (request.method.as_str(), route_path) {
        ("POST", "/v1/chat/completions") => Route::Chat,
        ("POST", _) if (azure_v1 || azure_deployment) && !has_header("api-key") => {
            Route::Refused(401, "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")
        }
        ("POST", _) if azure_deployment && !request.target.contains("api-version=") => {
            Route::Refused(404, "Resource not found")
        }
        ("POST", _) if azure_v1 || azure_deployment => Route::Chat,
        ("GET", "/v1/models") => Route::Models,
        _ => Route::NotFound,
    };
    let json: Option<Value> = serde_json::from_slice(&request.body).ok();
    let recorded = RecordedRequest {
        method: request.method.clone(),
        path: request.target.clone(),
        headers: request.headers,
        body: json.clone().unwrap_or(Value::Null),
        at: std::time::Instant::now(),
    };
    let valid_chat = matches!(route, Route::Chat) && json.as_ref().is_some_and(Value::is_object);
    let behavior = shared.record(recorded, valid_chat);

    match (route, behavior, json) {
        (Route::Chat, Some(behavior), Some(body)) => {
            chat(&mut wr, closed.as_mut(), &shared, behavior, &body).await;
            return;
        }
        (Route::Chat, _, _) => {
            let body = error_body(
                "We could not parse the JSON body of your request. (HINT: This likely means \
                 you aren't using your HTTP library correctly. The OpenAI API expects a JSON \
                 payload, but what was sent was not valid JSON.)",
                "invalid_request_error",
                None,
            );
            let _ = send_response(&mut wr, 400, "application/json", &[], &body).await;
        }
        (Route::Models, _, _) => {
            let model = shared.default_model();
            let body = to_json(&ModelList {
                object: "list",
                data: [ModelEntry {
                    id: &model,
                    object: "model",
                    created: MODEL_CREATED,
                    owned_by: "fake",
                }],
            });
            let _ = send_response(&mut wr, 200, "application/json", &[], &body).await;
        }
        (Route::Refused(status, message), _, _) => {
            let code = status.to_string();
            let body = to_json(&serde_json::json!({"error": {"code": code, "message": message}}));
            let _ = send_response(&mut wr, status, "application/json", &[], &body).await;
        }
        (Route::NotFound, _, _) => {
            let message = format!("Invalid URL ({} {})", request.method, request.target);
            let body = error_body(&message, "invalid_request_error", None);
            let _ = send_response(&mut wr, 404, "application/json", &[], &body).await;
        }
    }
    close_gracefully(&mut wr, closed).await;
}

// ---------------------------------------------------------------------------
// Chat completions

async fn chat<F: Future<Output = ()>>(
    wr: &mut OwnedWriteHalf,
    mut closed: Pin<&mut F>,
    shared: &Shared,
    behavior: Behavior,
    body: &Value,
) {
    let n = shared.next_id.fetch_add(1, Ordering::SeqCst) + 1;
    let id = format!("chatcmpl-fake{n}");
    let request_id = format!("req_fake{n}");
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let model = if !behavior.model.is_empty() {
        behavior.model.clone()
    } else {
        body.get("model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .unwrap_or(FALLBACK_MODEL)
            .to_string()
    };
    let streaming = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let include_usage = body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let prompt_tokens = prompt_words(body);
    let completion_tokens = count_words(&behavior.reply).max(1);
    let usage = Usage {
        prompt_tokens,
        completion_tokens,
        total_tokens: prompt_tokens + completion_tokens,
    };

    match behavior.mode {
        Mode::Stall => {
            closed.await;
            shared.disconnected();
        }
        Mode::Error {
            status,
            ref message,
            ref code,
        } => {
            if !pause(behavior.delay, closed.as_mut()).await {
                shared.disconnected();
                return;
            }
            let kind = error_type(status, code);
            let code = (!code.is_empty()).then_some(code.as_str());
            let body = error_body(message, kind, code);
            let mut extra = vec![("x-request-id", request_id.as_str())];
            if status == 429 {
                extra.push(("retry-after", "1"));
            }
            let _ = send_response(wr, status, "application/json", &extra, &body).await;
            close_gracefully(wr, closed).await;
        }
        Mode::Ok | Mode::CutAfter { .. } if !streaming => {
            if !pause(behavior.delay, closed.as_mut()).await {
                shared.disconnected();
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
                    finish_reason: if behavior.tool_calls.is_empty() { "stop" } else { "tool_calls" },
                }],
                usage,
                system_fingerprint: "fp_fake",
            });
            let extra = [("x-request-id", request_id.as_str())];
            if matches!(behavior.mode, Mode::CutAfter { .. }) {
                let head = response_head(
                    status_line(200),
                    "application/json",
                    &extra,
                    Some(body.len()),
                );
                let _ = wr.write_all(head.as_bytes()).await;
                let _ = wr.write_all(&body[..body.len() / 2]).await;
                let _ = wr.flush().await;
                // Returning drops the socket: FIN after half the body.
                return;
            }
            let _ = send_response(wr, 200, "application/json", &extra, &body).await;
            close_gracefully(wr, closed).await;
        }
        Mode::Ok | Mode::CutAfter { .. } => {
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
            match stream_reply(wr, closed.as_mut(), &stream, &behavior, cut).await {
                StreamEnd::Complete => close_gracefully(wr, closed).await,
                StreamEnd::Cut => {} // dropping the socket closes it mid-body
                StreamEnd::ClientGone => shared.disconnected(),
            }
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

enum StreamEnd {
    Complete,
    Cut,
    ClientGone,
}

async fn stream_reply<F: Future<Output = ()>>(
    wr: &mut OwnedWriteHalf,
    mut closed: Pin<&mut F>,
    stream: &Stream<'_>,
    behavior: &Behavior,
    cut: Option<usize>,
) -> StreamEnd {
    let head = response_head(
        status_line(200),
        "text/event-stream; charset=utf-8",
        &[
            ("transfer-encoding", "chunked"),
            ("cache-control", "no-cache"),
            ("x-request-id", stream.request_id),
        ],
        None,
    );
    if wr.write_all(head.as_bytes()).await.is_err() {
        return StreamEnd::ClientGone;
    }

    let role = stream.chunk(
        Delta {
            role: Some("assistant"),
            content: Some(""),
            refusal: Some(None),
            tool_calls: None,
        },
        None,
    );
    if !send_event(wr, &role).await {
        return StreamEnd::ClientGone;
    }
    for (i, piece) in split_reply(&behavior.reply, behavior.chunks)
        .into_iter()
        .enumerate()
    {
        if cut == Some(i) {
            return StreamEnd::Cut;
        }
        if !pause(behavior.delay, closed.as_mut()).await {
            return StreamEnd::ClientGone;
        }
        let content = stream.chunk(
            Delta {
                content: Some(piece),
                ..Delta::default()
            },
            None,
        );
        if !send_event(wr, &content).await {
            return StreamEnd::ClientGone;
        }
    }
    if cut.is_some() {
        return StreamEnd::Cut;
    }
    if !pause(Duration::ZERO, closed.as_mut()).await {
        return StreamEnd::ClientGone;
    }

    for (i, (id, name, args)) in behavior.tool_calls.iter().enumerate() {
        let half = args
            .char_indices()
            .nth(args.chars().count() / 2)
            .map_or(0, |(b, _)| b);
        let pieces = [
            serde_json::json!([{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]),
            serde_json::json!([{"index": i, "function": {"arguments": &args[..half]}}]),
            serde_json::json!([{"index": i, "function": {"arguments": &args[half..]}}]),
        ];
        for piece in pieces {
            let chunk = stream.chunk(
                Delta {
                    tool_calls: Some(piece),
                    ..Delta::default()
                },
                None,
            );
            if !send_event(wr, &chunk).await {
                return StreamEnd::ClientGone;
            }
        }
    }
    let reason = if behavior.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let finish = stream.chunk(Delta::default(), Some(reason));
    if !send_event(wr, &finish).await {
        return StreamEnd::ClientGone;
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
        if !send_event(wr, &last).await {
            return StreamEnd::ClientGone;
        }
    }
    if !send_event(wr, b"[DONE]").await {
        return StreamEnd::ClientGone;
    }
    if wr.write_all(b"0\r\n\r\n").await.is_err() {
        return StreamEnd::ClientGone;
    }
    StreamEnd::Complete
}

/// Writes `data: <payload>\n\n` as one HTTP chunk; false if the write failed.
async fn send_event(wr: &mut OwnedWriteHalf, payload: &[u8]) -> bool {
    let event_len = b"data: ".len() + payload.len() + 2;
    let mut chunk = Vec::with_capacity(event_len + 16);
    chunk.extend_from_slice(format!("{event_len:x}\r\n").as_bytes());
    chunk.extend_from_slice(b"data: ");
    chunk.extend_from_slice(payload);
    chunk.extend_from_slice(b"\n\n\r\n");
    wr.write_all(&chunk).await.is_ok() && wr.flush().await.is_ok()
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

/// The OpenAI error `type` for a status (and code).
fn error_type(status: u16, code: &str) -> &'static str {
    match status {
        429 if code == "insufficient_quota" => "insufficient_quota",
        429 => "requests",
        500..=599 => "server_error",
        _ => "invalid_request_error",
    }
}

// ---------------------------------------------------------------------------
// JSON bodies (structs rather than json! so fields keep the API's order)

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize)]
struct ErrorDetail<'a> {
    message: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    param: Option<&'a str>,
    code: Option<&'a str>,
}

fn error_body(message: &str, kind: &str, code: Option<&str>) -> Vec<u8> {
    to_json(&ErrorBody {
        error: ErrorDetail {
            message,
            kind,
            param: None,
            code,
        },
    })
}

#[derive(Serialize)]
struct ModelList<'a> {
    object: &'a str,
    data: [ModelEntry<'a>; 1],
}

#[derive(Serialize)]
struct ModelEntry<'a> {
    id: &'a str,
    object: &'a str,
    created: u64,
    owned_by: &'a str,
}

#[derive(Serialize, Clone, Copy, Debug)]
struct Usage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
}

#[derive(Serialize)]
struct Completion<'a> {
    id: &'a str,
    object: &'a str,
    created: u64,
    model: &'a str,
    choices: [Choice<'a>; 1],
    usage: Usage,
    system_fingerprint: &'a str,
}

#[derive(Serialize)]
struct Choice<'a> {
    index: u32,
    message: Message<'a>,
    logprobs: Option<()>,
    finish_reason: &'a str,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'a str,
    content: Option<&'a str>,
    refusal: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<Value>>,
}

#[derive(Serialize)]
struct Chunk<'a> {
    id: &'a str,
    object: &'a str,
    created: u64,
    model: &'a str,
    system_fingerprint: &'a str,
    choices: Vec<ChunkChoice<'a>>,
    /// Absent without `include_usage`; `null` on ordinary chunks with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Option<Usage>>,
}

#[derive(Serialize)]
struct ChunkChoice<'a> {
    index: u32,
    delta: Delta<'a>,
    logprobs: Option<()>,
    finish_reason: Option<&'a str>,
}

#[derive(Serialize, Default)]
struct Delta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    /// `Some(None)` serializes as `"refusal":null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    refusal: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Value>,
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("serializing a fake response cannot fail")
}

/// Keeps a child process that talks to this server on loopback: no proxy of the caller's
/// environment may carry its requests away, and the caller's own keys and provider settings do
/// not leak in.
pub fn loopback_only(cmd: &mut std::process::Command) -> &mut std::process::Command {
    cmd.env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost");
    for var in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
        "OPENAI_API_KEY",
        // Other providers' settings, so built-in instances do not reach out of the test.
        "OLLAMA_HOST",
        "OLLAMA_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GEMINI_BASE_URL",
        "AZURE_OPENAI_ENDPOINT",
        "AZURE_OPENAI_API_KEY",
        "OPENAI_API_VERSION",
    ] {
        cmd.env_remove(var);
    }
    cmd
}
