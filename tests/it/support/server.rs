//! The one loopback HTTP/1.1 server under every fake: it listens on 127.0.0.1 in its own thread
//! with its own tokio runtime, accepts connections, reads one request per connection, records
//! it, hands it with its behaviour to the wire format ([`Wire`]) as an [`Exchange`], notices
//! clients that go away and counts them, and stops (closing every connection it holds) when
//! dropped.
//!
//! It never knows a provider's JSON, events or routes: those are each `fake_*.rs`'s (one
//! [`Wire`] per wire format), which answer through [`Exchange`]'s writes so that every byte on
//! the socket stays theirs to choose. The bytes of HTTP/1.1 itself are `http1.rs`'s.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};

use super::http1::{
    close_gracefully, end_chunks, header, pause, peer_closed, read_request, response_head,
    send_response, status_line, write_chunk, ReadError,
};

/// One wire format spoken on top of the server.
pub trait Wire: Send + Sync + Sized + 'static {
    /// How a model call is answered: queued ones first, in order of arrival, then the default.
    type Behavior: Clone + Send + 'static;
    /// What the fake keeps of each request (see [`FakeServer::requests`]).
    type Record: Clone + Send + 'static;
    /// Names the server's thread.
    const NAME: &'static str;

    /// What to record of a request, and whether it is a model call, which takes a behaviour.
    /// Runs under the server's lock, so behaviours follow the order in which requests arrive.
    fn inspect(
        &self,
        request: &RecordedRequest,
        expected_key: Option<&str>,
    ) -> (Self::Record, bool);

    /// The body of the 400 answer to bytes that are not an HTTP/1.1 request.
    fn malformed(message: &str) -> Vec<u8> {
        serde_json::json!({ "error": message })
            .to_string()
            .into_bytes()
    }

    /// Answers one request.
    fn answer(ex: Exchange<Self>) -> impl Future<Output = ()> + Send;
}

/// One request as the server read it.
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
    pub at: Instant,
}

impl RecordedRequest {
    /// The value of the first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
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

/// One request being answered: what arrived, its behaviour, and the socket.
pub struct Exchange<W: Wire> {
    pub request: RecordedRequest,
    /// What the wire recorded of it.
    pub record: W::Record,
    /// Set when the wire said the request is a model call.
    pub behavior: Option<W::Behavior>,
    /// A number unique in this server, from 1.
    pub n: u64,
    /// The credential the fake expects, if any was set.
    pub expected_key: Option<String>,
    wr: OwnedWriteHalf,
    closed: Pin<Box<dyn Future<Output = ()> + Send>>,
    shared: Arc<Shared<W>>,
}

impl<W: Wire> Exchange<W> {
    /// The wire format's own state.
    pub fn wire(&self) -> &W {
        &self.shared.wire
    }

    /// The behaviour model calls get when none is queued.
    pub fn default_behavior(&self) -> W::Behavior {
        self.shared.lock().default.clone()
    }

    /// Counts a client that went away before its answer was complete; returns false.
    fn gone(&self) -> bool {
        self.shared.disconnects.fetch_add(1, Ordering::SeqCst);
        false
    }

    /// Waits `delay` unless the client goes first; false (and a disconnect counted) if it did.
    pub async fn pause(&mut self, delay: Duration) -> bool {
        pause(delay, Pin::new(&mut self.closed)).await || self.gone()
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
        self.close().await;
    }

    /// An error response, then a graceful close: the `extra` headers, and `retry-after: 1`
    /// after them when `retry_later` (as the real APIs send with a 429).
    pub async fn respond_error(
        self,
        status: u16,
        content_type: &str,
        extra: &[(&str, &str)],
        retry_later: bool,
        body: &[u8],
    ) {
        let mut headers = extra.to_vec();
        if retry_later {
            headers.push(("retry-after", "1"));
        }
        self.respond(status, content_type, &headers, body).await
    }

    /// A 200 head with the full Content-Length and half the body; then the socket drops.
    pub async fn respond_cut(mut self, content_type: &str, extra: &[(&str, &str)], body: &[u8]) {
        let head = response_head(status_line(200), content_type, extra, Some(body.len()));
        let _ = self.wr.write_all(head.as_bytes()).await;
        let _ = self.wr.write_all(&body[..body.len() / 2]).await;
        let _ = self.wr.flush().await;
    }

    /// The head of a chunked 200 response; false (a disconnect) if the client is gone.
    pub async fn start_chunked(&mut self, content_type: &str, extra: &[(&str, &str)]) -> bool {
        let mut all = vec![("transfer-encoding", "chunked")];
        all.extend_from_slice(extra);
        let head = response_head(status_line(200), content_type, &all, None);
        self.write(head.as_bytes()).await
    }

    /// One HTTP chunk; false (a disconnect) if the client is gone.
    pub async fn chunk(&mut self, data: &[u8]) -> bool {
        write_chunk(&mut self.wr, data).await || self.gone()
    }

    /// Bytes as they are, flushed; false (a disconnect) if the client is gone.
    pub async fn write(&mut self, bytes: &[u8]) -> bool {
        (self.wr.write_all(bytes).await.is_ok() && self.wr.flush().await.is_ok()) || self.gone()
    }

    /// The terminating chunk, then a graceful close.
    pub async fn end_chunked(mut self) {
        if end_chunks(&mut self.wr).await {
            self.close().await;
        } else {
            self.gone();
        }
    }

    /// Ends a complete response: FIN, then a moment for the client to close its side.
    pub async fn close(mut self) {
        close_gracefully(&mut self.wr, Pin::new(&mut self.closed)).await;
    }

    /// Waits for the client to go away (a disconnect), never answering.
    pub async fn stall(self) {
        self.closed.await;
        self.shared.disconnects.fetch_add(1, Ordering::SeqCst);
    }
}

/// A running fake server; dropping it stops the server and closes every connection it holds.
pub struct FakeServer<W: Wire> {
    port: u16,
    shared: Arc<Shared<W>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl<W: Wire> FakeServer<W> {
    /// Starts on 127.0.0.1:`port` (0: any free port) in its own thread with its own tokio
    /// runtime; returns once listening.
    pub fn listen(port: u16, wire: W, default: W::Behavior) -> io::Result<FakeServer<W>> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
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
            .name(format!("fake-{}-{port}", W::NAME))
            .spawn(move || {
                runtime.block_on(async move {
                    loop {
                        tokio::select! {
                            _ = &mut stop_rx => break,
                            accepted = listener.accept() => match accepted {
                                Ok((stream, _)) => {
                                    tokio::spawn(handle_connection(stream, Arc::clone(&thread_shared)));
                                }
                                // e.g. out of file descriptors: back off briefly.
                                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                            },
                        }
                    }
                });
                // Dropping the runtime cancels every connection task, which closes the
                // sockets they held (stalled ones included).
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

    /// The wire format's own state.
    pub fn wire(&self) -> &W {
        &self.shared.wire
    }

    /// Changes the behaviour of later model calls (queued ones still go first).
    pub fn set_default(&self, b: W::Behavior) {
        self.shared.lock().default = b;
    }

    /// Queues a behaviour for the next model call; then calls fall back to the default.
    pub fn push(&self, b: W::Behavior) {
        self.shared.lock().queue.push_back(b);
    }

    /// Drops the queued behaviours.
    pub fn clear_queue(&self) {
        self.shared.lock().queue.clear();
    }

    /// The credential requests must carry (how is the wire's business); `None`: any or none.
    pub fn expect_key(&self, key: Option<&str>) {
        self.shared.lock().expected_key = key.map(str::to_string);
    }

    /// Every request received so far, in order of arrival.
    pub fn requests(&self) -> Vec<W::Record> {
        self.shared.lock().requests.clone()
    }

    /// The last request received.
    pub fn last(&self) -> W::Record {
        self.requests()
            .pop()
            .unwrap_or_else(|| panic!("the fake {} server got no request", W::NAME))
    }

    /// How many answers ended because the client went away first: a write failed, the peer
    /// closed while an answer was pending, or the client closed a stalled request.
    pub fn disconnects(&self) -> usize {
        self.shared.disconnects.load(Ordering::SeqCst)
    }
}

impl<W: Wire> std::fmt::Debug for FakeServer<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("wire", &W::NAME)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl<W: Wire> Drop for FakeServer<W> {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Shared<W: Wire> {
    wire: W,
    state: Mutex<State<W>>,
    disconnects: AtomicUsize,
    next: AtomicU64,
}

struct State<W: Wire> {
    default: W::Behavior,
    queue: VecDeque<W::Behavior>,
    requests: Vec<W::Record>,
    expected_key: Option<String>,
}

impl<W: Wire> Shared<W> {
    fn lock(&self) -> MutexGuard<'_, State<W>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

async fn handle_connection<W: Wire>(stream: TcpStream, shared: Arc<Shared<W>>) {
    let _ = stream.set_nodelay(true);
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    let request = match read_request(&mut rd, &mut wr).await {
        Ok(r) => r,
        Err(ReadError::Gone) => return,
        Err(ReadError::Bad(message)) => {
            let body = W::malformed(&message);
            let _ = send_response(&mut wr, 400, "application/json", &[], &body).await;
            let _ = wr.shutdown().await;
            return;
        }
    };
    // One request per connection: whatever comes next is discarded; end of input means the
    // client went away.
    let closed: Pin<Box<dyn Future<Output = ()> + Send>> =
        Box::pin(async move { peer_closed(&mut rd).await });
    let request = RecordedRequest {
        method: request.method,
        path: request.target,
        headers: request.headers,
        body: serde_json::from_slice(&request.body).unwrap_or(Value::Null),
        raw: request.body,
        at: Instant::now(),
    };
    let (record, behavior, expected_key) = {
        let mut state = shared.lock();
        let (record, takes) = shared.wire.inspect(&request, state.expected_key.as_deref());
        state.requests.push(record.clone());
        let state = &mut *state;
        let behavior = takes.then(|| {
            state
                .queue
                .pop_front()
                .unwrap_or_else(|| state.default.clone())
        });
        (record, behavior, state.expected_key.clone())
    };
    let exchange = Exchange {
        request,
        record,
        behavior,
        n: shared.next.fetch_add(1, Ordering::SeqCst) + 1,
        expected_key,
        wr,
        closed,
        shared: Arc::clone(&shared),
    };
    W::answer(exchange).await;
}
