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

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::Poll;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
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
}

impl Default for Behavior {
    fn default() -> Self {
        Behavior {
            reply: "Hello from the fake provider.".to_string(),
            chunks: 4,
            delay: Duration::ZERO,
            mode: Mode::Ok,
            model: String::new(),
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

/// Resolves once the peer has closed the connection (EOF or error on read).
pub async fn peer_closed<R: AsyncRead + Unpin>(rd: &mut R) {
    let mut buf = [0u8; 1024];
    loop {
        match rd.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Waits `delay` unless the peer closes first; false if it did. With no
/// delay it only checks, without waiting.
pub async fn pause<F: Future<Output = ()>>(delay: Duration, mut closed: Pin<&mut F>) -> bool {
    if delay.is_zero() {
        std::future::poll_fn(|cx| Poll::Ready(closed.as_mut().poll(cx).is_pending())).await
    } else {
        tokio::select! {
            biased;
            _ = closed => false,
            _ = tokio::time::sleep(delay) => true,
        }
    }
}

/// Ends a complete response: send FIN, then give the client a moment to
/// close its side so that nothing unread makes the kernel send RST.
pub async fn close_gracefully<F: Future<Output = ()>>(
    wr: &mut OwnedWriteHalf,
    closed: Pin<&mut F>,
) {
    let _ = wr.flush().await;
    let _ = wr.shutdown().await;
    let _ = tokio::time::timeout(LINGER, closed).await;
}

// ---------------------------------------------------------------------------

/// Splits `reply` into exactly `chunks` (at least 1) pieces on char
/// boundaries, the first ones one char longer when it doesn't divide evenly.
pub fn split_reply(reply: &str, chunks: usize) -> Vec<&str> {
    let chunks = chunks.max(1);
    let bounds: Vec<usize> = reply
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(reply.len()))
        .collect();
    let chars = bounds.len() - 1;
    let (base, extra) = (chars / chunks, chars % chunks);
    let mut pieces = Vec::with_capacity(chunks);
    let mut start = 0;
    for i in 0..chunks {
        let end = start + base + usize::from(i < extra);
        pieces.push(&reply[bounds[start]..bounds[end]]);
        start = end;
    }
    pieces
}

pub fn count_words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

// ---------------------------------------------------------------------------
// HTTP/1.1

pub fn status_line(status: u16) -> String {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    };
    format!("HTTP/1.1 {status} {reason}")
}

/// Status line and headers, ending with the blank line. Every response
/// carries `connection: close`; `content_length` is `None` for chunked ones.
pub fn response_head(
    status_line: String,
    content_type: &str,
    extra: &[(&str, &str)],
    content_length: Option<usize>,
) -> String {
    let mut head = status_line;
    head.push_str("\r\ncontent-type: ");
    head.push_str(content_type);
    head.push_str("\r\n");
    if let Some(len) = content_length {
        head.push_str(&format!("content-length: {len}\r\n"));
    }
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("connection: close\r\n\r\n");
    head
}

pub async fn send_response(
    wr: &mut OwnedWriteHalf,
    status: u16,
    content_type: &str,
    extra: &[(&str, &str)],
    body: &[u8],
) -> io::Result<()> {
    let head = response_head(status_line(status), content_type, extra, Some(body.len()));
    let mut bytes = Vec::with_capacity(head.len() + body.len());
    bytes.extend_from_slice(head.as_bytes());
    bytes.extend_from_slice(body);
    wr.write_all(&bytes).await?;
    wr.flush().await
}

pub struct Request {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

pub enum ReadError {
    /// The client closed (or broke) the connection before a full request.
    Gone,
    /// Not a valid HTTP/1.1 request: answer 400.
    Bad(String),
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> Self {
        ReadError::Gone
    }
}

/// Reads one request: request line, headers, and a body framed by
/// Content-Length or `Transfer-Encoding: chunked`.
pub async fn read_request<R: AsyncBufRead + Unpin>(
    rd: &mut R,
    wr: &mut OwnedWriteHalf,
) -> Result<Request, ReadError> {
    // A few empty lines before the request line are tolerated (RFC 9112 2.2).
    let mut request_line = String::new();
    for _ in 0..4 {
        request_line = read_line(rd).await?.ok_or(ReadError::Gone)?;
        if !request_line.is_empty() {
            break;
        }
    }
    let mut parts = request_line.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v), None) if !m.is_empty() && t.starts_with('/') => (m, t, v),
        _ => {
            return Err(ReadError::Bad(format!(
                "Malformed request line: {request_line:?}"
            )))
        }
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Bad(format!(
            "Unsupported HTTP version: {version}"
        )));
    }

    let mut headers = Vec::new();
    loop {
        let line = read_line(rd).await?.ok_or(ReadError::Gone)?;
        if line.is_empty() {
            break;
        }
        if headers.len() >= MAX_HEADERS {
            return Err(ReadError::Bad("Too many headers".to_string()));
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::Bad(format!("Malformed header line: {line:?}")));
        };
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(ReadError::Bad(format!("Malformed header line: {line:?}")));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    let header = |wanted: &str| {
        headers
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, value)| value.as_str())
    };

    if header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
        wr.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    }

    let chunked = header("transfer-encoding").is_some_and(|te| {
        te.rsplit(',')
            .next()
            .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"))
    });
    let body = if chunked {
        read_chunked_body(rd).await?
    } else if let Some(len) = header("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| ReadError::Bad(format!("Invalid Content-Length: {len:?}")))?;
        if len > MAX_BODY {
            return Err(ReadError::Bad("Request body too large".to_string()));
        }
        let mut body = vec![0; len];
        rd.read_exact(&mut body).await?;
        body
    } else {
        Vec::new()
    };

    Ok(Request {
        method: method.to_string(),
        target: target.to_string(),
        headers,
        body,
    })
}

pub async fn read_chunked_body<R: AsyncBufRead + Unpin>(rd: &mut R) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let line = read_line(rd).await?.ok_or(ReadError::Gone)?;
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| ReadError::Bad(format!("Invalid chunk size: {line:?}")))?;
        if size == 0 {
            // Trailer fields, up to the blank line.
            while !read_line(rd).await?.ok_or(ReadError::Gone)?.is_empty() {}
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(ReadError::Bad("Request body too large".to_string()));
        }
        let start = body.len();
        body.resize(start + size, 0);
        rd.read_exact(&mut body[start..]).await?;
        if !read_line(rd).await?.ok_or(ReadError::Gone)?.is_empty() {
            return Err(ReadError::Bad("Chunk not followed by CRLF".to_string()));
        }
    }
}

/// One line without its CRLF (or bare LF); `None` at end of input.
pub async fn read_line<R: AsyncBufRead + Unpin>(rd: &mut R) -> Result<Option<String>, ReadError> {
    let mut line = Vec::new();
    let n = (&mut *rd)
        .take(MAX_LINE as u64)
        .read_until(b'\n', &mut line)
        .await?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        return Err(if n >= MAX_LINE {
            ReadError::Bad("Line too long".to_string())
        } else {
            ReadError::Gone
        });
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(String::from_utf8_lossy(&line).into_owned()))
}
