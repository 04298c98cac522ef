//! The HTTP/1.1 side of the loopback fake providers, for tests only: reading a request,
//! writing a response whole or as chunks, noticing a client that goes away, and a small server
//! ([`FakeServer`]) that records requests and hands each to a provider's wire format
//! ([`Wire`]) with the [`Behavior`] queued for it.
//!
//! It owns bytes on the socket, never a provider's JSON: `fake_ollama.rs` and `fake_gemini.rs`
//! build their bodies and check their headers on top of [`FakeServer`], and `fake_openai.rs`
//! uses its request reading and response writing. It is hand-written so that tests control the
//! wire byte by byte: each event its own chunk, streams cut without the final chunk, requests
//! read and never answered. It is loaded once per test binary, as `fake_openai::fake_http`.

// Several test binaries include this file and each uses a different part of it.
#![allow(dead_code)]

// The generic reading and writing (shared with `fake_anthropic.rs` and `fake_plugin.rs`).
#[path = "http1.rs"]
mod http1;
pub use http1::*;

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};

/// Longest request line or header line accepted.
const MAX_LINE: usize = 64 * 1024;
/// Most header lines accepted in one request.
const MAX_HEADERS: usize = 200;
/// Largest request body accepted (images may be inlined as base64).
const MAX_BODY: usize = 64 * 1024 * 1024;
/// After a complete response, how long to wait for the client to close its
/// side before the socket is dropped (closing with unread data would send RST).
const LINGER: Duration = Duration::from_secs(2);

/// How a fake answers one model call.
#[derive(Clone, Debug)]
pub struct Behavior {
    /// The assistant text.
    pub reply: String,
    /// Number of content pieces the reply is streamed in (0 is taken as 1).
    pub chunks: usize,
    /// Delay before each streamed piece, and before a whole body.
    pub delay: Duration,
    pub mode: Mode,
    /// Model name echoed in answers; when empty, the one the request named.
    pub model: String,
    /// Tool calls the model makes after its text: each a wire name and its arguments as JSON
    /// text (the wire decides how they travel).
    pub tool_calls: Vec<(String, String)>,
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

impl Behavior {
    pub fn reply(text: &str, chunks: usize) -> Behavior {
        Behavior {
            reply: text.to_string(),
            chunks,
            ..Behavior::default()
        }
    }

    pub fn error(status: u16, message: &str) -> Behavior {
        Behavior {
            mode: Mode::Error {
                status,
                message: message.to_string(),
            },
            ..Behavior::default()
        }
    }

    /// A reply of `text` (may be empty) and these calls: (wire name, JSON arguments).
    pub fn calls(text: &str, calls: &[(&str, &str)]) -> Behavior {
        Behavior {
            reply: text.to_string(),
            tool_calls: calls
                .iter()
                .map(|(n, a)| (n.to_string(), a.to_string()))
                .collect(),
            ..Behavior::default()
        }
    }

    pub fn mode(mode: Mode) -> Behavior {
        Behavior {
            mode,
            ..Behavior::default()
        }
    }
}

#[derive(Clone, Debug)]
pub enum Mode {
    /// A normal, complete answer.
    Ok,
    /// This HTTP status with the provider's error body; 429 also sends `retry-after: 1`.
    Error { status: u16, message: String },
    /// Streaming: the first `after` pieces, then the connection closes without the final
    /// record or the terminating chunk. Not streaming: half the body, then close.
    CutAfter { after: usize },
    /// The first `after` pieces, then a piece that is not JSON, then the rest.
    Malformed { after: usize },
    /// Read the request, never answer (until the client goes away: a disconnect).
    Stall,
    /// A 200 answer that refuses the prompt (a safety block), in the wire's own way.
    Blocked { reason: String },
}

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub method: String,
    /// The request target as received (path, plus query string if any).
    pub path: String,
    /// Header names lower-cased, values as received (trimmed), in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Null` if empty or not JSON.
    pub body: Value,
    /// The body's bytes.
    pub raw: Vec<u8>,
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

    /// The path without the query string.
    pub fn route(&self) -> &str {
        self.path.split('?').next().unwrap_or_default()
    }

    /// The query string's value of `name`, undecoded.
    pub fn query(&self, name: &str) -> Option<&str> {
        let (_, q) = self.path.split_once('?')?;
        q.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k == name).then_some(v)
        })
    }
}

/// A provider's wire format on top of the server.
#[derive(Clone, Copy)]
pub struct Wire {
    pub name: &'static str,
    /// Whether a request is a model call, which takes the next queued [`Behavior`].
    pub takes_behavior: fn(&RecordedRequest) -> bool,
    /// Answers one request.
    pub answer: fn(Exchange) -> Pin<Box<dyn Future<Output = ()> + Send>>,
}

/// One request being answered: what arrived, its behavior, and the socket.
pub struct Exchange {
    pub request: RecordedRequest,
    /// Set when the wire said the request is a model call.
    pub behavior: Option<Behavior>,
    /// A number unique in this server, from 1.
    pub n: u64,
    /// The credential the fake expects, if any was set.
    pub expected_key: Option<String>,
    wr: OwnedWriteHalf,
    closed: Pin<Box<dyn Future<Output = ()> + Send>>,
    shared: Arc<Shared>,
}

impl Exchange {
    /// Waits `delay` unless the client goes first; false (and a disconnect counted) if it did.
    pub async fn pause(&mut self, delay: Duration) -> bool {
        let still_here = pause(delay, Pin::new(&mut self.closed)).await;
        if !still_here {
            self.shared.disconnected();
        }
        still_here
    }

    /// A whole response, then a graceful close.
    pub async fn respond(
        mut self,
        status: u16,
        content_type: &str,
        extra: &[(&str, &str)],
        body: &[u8],
    ) {
        let _ = send_response(&mut self.wr, status, content_type, extra, body).await;
        close_gracefully(&mut self.wr, Pin::new(&mut self.closed)).await;
    }

    /// The headers with the full Content-Length and half the body, then the socket drops.
    pub async fn respond_cut(mut self, content_type: &str, body: &[u8]) {
        let head = response_head(status_line(200), content_type, &[], Some(body.len()));
        let _ = self.wr.write_all(head.as_bytes()).await;
        let _ = self.wr.write_all(&body[..body.len() / 2]).await;
        let _ = self.wr.flush().await;
    }

    /// The head of a chunked 200 response; false (a disconnect) if the client is gone.
    pub async fn start_chunked(&mut self, content_type: &str, extra: &[(&str, &str)]) -> bool {
        let mut all = vec![("transfer-encoding", "chunked")];
        all.extend_from_slice(extra);
        let head = response_head(status_line(200), content_type, &all, None);
        let ok = self.wr.write_all(head.as_bytes()).await.is_ok();
        if !ok {
            self.shared.disconnected();
        }
        ok
    }

    /// One HTTP chunk; false (a disconnect) if the client is gone.
    pub async fn chunk(&mut self, data: &[u8]) -> bool {
        let mut chunk = Vec::with_capacity(data.len() + 16);
        chunk.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
        chunk.extend_from_slice(data);
        chunk.extend_from_slice(b"\r\n");
        let ok = self.wr.write_all(&chunk).await.is_ok() && self.wr.flush().await.is_ok();
        if !ok {
            self.shared.disconnected();
        }
        ok
    }

    /// The terminating chunk, then a graceful close.
    pub async fn end_chunked(mut self) {
        if self.wr.write_all(b"0\r\n\r\n").await.is_err() {
            self.shared.disconnected();
            return;
        }
        close_gracefully(&mut self.wr, Pin::new(&mut self.closed)).await;
    }

    /// Waits for the client to go away (a disconnect), never answering.
    pub async fn stall(self) {
        self.closed.await;
        self.shared.disconnected();
    }
}

/// A running fake server; dropping it stops the server and closes every connection it holds.
pub struct FakeServer {
    port: u16,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeServer {
    /// Starts on 127.0.0.1 (any free port) in its own thread with its own tokio runtime.
    pub fn start(wire: Wire, default: Behavior) -> io::Result<FakeServer> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let shared = Arc::new(Shared {
            wire,
            state: Mutex::new(State {
                default,
                queue: VecDeque::new(),
                requests: Vec::new(),
                expected_key: None,
            }),
            arrived: Condvar::new(),
            disconnects: AtomicUsize::new(0),
            next: AtomicU64::new(0),
        });
        let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread_shared = Arc::clone(&shared);
        let listener = {
            let _guard = runtime.enter();
            TcpListener::from_std(listener)?
        };
        let thread = std::thread::Builder::new()
            .name(format!("fake-{}-{port}", wire.name))
            .spawn(move || {
                runtime.block_on(async move {
                    loop {
                        tokio::select! {
                            _ = &mut stop_rx => break,
                            accepted = listener.accept() => match accepted {
                                Ok((stream, _)) => {
                                    tokio::spawn(handle_connection(stream, Arc::clone(&thread_shared)));
                                }
                                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                            },
                        }
                    }
                });
                drop(runtime);
            })?;
        Ok(FakeServer {
            port,
            shared,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn set_default(&self, b: Behavior) {
        self.shared.lock().default = b;
    }

    /// Queues a behavior for the next model call; then calls fall back to the default.
    pub fn push(&self, b: Behavior) {
        self.shared.lock().queue.push_back(b);
    }

    /// The credential requests must carry (how is the wire's business); `None`: any or none.
    pub fn expect_key(&self, key: Option<&str>) {
        self.shared.lock().expected_key = key.map(str::to_string);
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Blocks until at least `n` requests arrived or `timeout` passed; true if they did.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let guard = self.shared.lock();
        let (guard, _) = self
            .shared
            .arrived
            .wait_timeout_while(guard, timeout, |s| s.requests.len() < n)
            .unwrap_or_else(|p| p.into_inner());
        guard.requests.len() >= n
    }

    /// Answers that ended because the client went away first.
    pub fn disconnects(&self) -> usize {
        self.shared.disconnects.load(Ordering::SeqCst)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Shared {
    wire: Wire,
    state: Mutex<State>,
    arrived: Condvar,
    disconnects: AtomicUsize,
    next: AtomicU64,
}

struct State {
    default: Behavior,
    queue: VecDeque<Behavior>,
    requests: Vec<RecordedRequest>,
    expected_key: Option<String>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn disconnected(&self) {
        self.disconnects.fetch_add(1, Ordering::SeqCst);
    }
}

async fn handle_connection(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    let request = match read_request(&mut rd, &mut wr).await {
        Ok(r) => r,
        Err(ReadError::Gone) => return,
        Err(ReadError::Bad(message)) => {
            let body = serde_json::json!({ "error": message }).to_string();
            let _ = send_response(&mut wr, 400, "application/json", &[], body.as_bytes()).await;
            let _ = wr.shutdown().await;
            return;
        }
    };
    // One request per connection: whatever comes next is discarded; end of input means the
    // client went away.
    let closed: Pin<Box<dyn Future<Output = ()> + Send>> =
        Box::pin(async move { peer_closed(&mut rd).await });
    let recorded = RecordedRequest {
        method: request.method,
        path: request.target,
        headers: request.headers,
        body: serde_json::from_slice(&request.body).unwrap_or(Value::Null),
        raw: request.body,
        at: std::time::Instant::now(),
    };
    let takes = (shared.wire.takes_behavior)(&recorded);
    let (behavior, expected_key) = {
        let mut state = shared.lock();
        state.requests.push(recorded.clone());
        let b = takes.then(|| {
            let s = &mut *state;
            s.queue.pop_front().unwrap_or_else(|| s.default.clone())
        });
        (b, state.expected_key.clone())
    };
    shared.arrived.notify_all();
    let exchange = Exchange {
        request: recorded,
        behavior,
        n: shared.next.fetch_add(1, Ordering::SeqCst) + 1,
        expected_key,
        wr,
        closed,
        shared: Arc::clone(&shared),
    };
    (shared.wire.answer)(exchange).await;
}
