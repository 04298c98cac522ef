//! A scripted HTTP/1.1 loopback server for the generic `http` provider: each request is
//! answered by a handler (a closure over the recorded request) or by the next queued reply, as
//! a whole body, a chunked stream of pieces (each its own chunk, optionally cut before the
//! terminating chunk), or a stall. It records every request (method, target, headers, body,
//! arrival time). Plain threads and `std::net`: no runtime, nothing shared with
//! `fake_openai.rs` beyond the idea.
//!
//! It listens on 127.0.0.1 only and answers one request per connection (`Connection: close`).

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub target: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// How the body of a reply is sent.
#[derive(Debug, Clone)]
pub enum Body {
    /// With a Content-Length.
    Full(Vec<u8>),
    /// Chunked, one chunk per piece, `delay` before each; `cut` drops the connection before the
    /// terminating chunk.
    Chunks {
        pieces: Vec<Vec<u8>>,
        delay: Duration,
        cut: bool,
    },
    /// Headers never come; the connection is held until the client goes or 20 s pass.
    Stall,
}

#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl Reply {
    pub fn json(status: u16, body: &serde_json::Value) -> Reply {
        Reply {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Body::Full(body.to_string().into_bytes()),
        }
    }

    pub fn raw(status: u16, content_type: &str, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: Body::Full(body.as_bytes().to_vec()),
        }
    }

    /// Server-sent events: each `(event type, data)` in its own chunk.
    pub fn sse(events: &[(Option<&str>, String)], cut: bool) -> Reply {
        let pieces = events
            .iter()
            .map(|(ev, data)| {
                let mut s = String::new();
                if let Some(ev) = ev {
                    s.push_str(&format!("event: {ev}\n"));
                }
                s.push_str(&format!("data: {data}\n\n"));
                s.into_bytes()
            })
            .collect();
        Reply {
            status: 200,
            headers: vec![("Content-Type".into(), "text/event-stream".into())],
            body: Body::Chunks {
                pieces,
                delay: Duration::from_millis(5),
                cut,
            },
        }
    }

    /// Newline-delimited JSON, one line per chunk.
    pub fn ndjson(lines: &[serde_json::Value], cut: bool) -> Reply {
        Reply {
            status: 200,
            headers: vec![("Content-Type".into(), "application/x-ndjson".into())],
            body: Body::Chunks {
                pieces: lines
                    .iter()
                    .map(|l| format!("{l}\n").into_bytes())
                    .collect(),
                delay: Duration::from_millis(5),
                cut,
            },
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }
}

type Handler = Box<dyn Fn(&Recorded) -> Reply + Send + Sync>;

struct Shared {
    requests: Mutex<Vec<Recorded>>,
    arrived: Condvar,
    queue: Mutex<VecDeque<Reply>>,
    handler: Handler,
    stop: AtomicBool,
}

pub struct FakeHttp {
    port: u16,
    shared: Arc<Shared>,
}

impl FakeHttp {
    /// Starts on a free loopback port; `handler` answers every request the queue does not.
    pub fn start(handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> FakeHttp {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            requests: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
            queue: Mutex::new(VecDeque::new()),
            handler: Box::new(handler),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let s = s.clone();
                std::thread::spawn(move || {
                    let _ = handle(conn, &s);
                });
            }
        });
        FakeHttp { port, shared }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The next request gets this reply instead of the handler's.
    pub fn push(&self, reply: Reply) {
        self.shared.queue.lock().unwrap().push_back(reply);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Waits until `n` requests arrived; false after `timeout`.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut reqs = self.shared.requests.lock().unwrap();
        while reqs.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            reqs = self.shared.arrived.wait_timeout(reqs, left).unwrap().0;
        }
        true
    }
}

impl Drop for FakeHttp {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn handle(conn: TcpStream, shared: &Shared) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut rd = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    rd.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, target) = (
        parts.next().unwrap_or("").to_string(),
        parts.next().unwrap_or("").to_string(),
    );
    if method.is_empty() {
        return Ok(());
    }
    let mut headers = Vec::new();
    loop {
        line.clear();
        rd.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let len = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    rd.read_exact(&mut body)?;
    let req = Recorded {
        method,
        target,
        headers,
        body,
        at: Instant::now(),
    };
    let queued = shared.queue.lock().unwrap().pop_front();
    let reply = queued.unwrap_or_else(|| (shared.handler)(&req));
    {
        shared.requests.lock().unwrap().push(req);
        shared.arrived.notify_all();
    }
    let mut wr = conn;
    if let Body::Stall = reply.body {
        // Hold the connection until the client gives up (a read returns 0 or fails).
        wr.set_read_timeout(Some(Duration::from_millis(100)))?;
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut buf = [0u8; 64];
        while Instant::now() < deadline && !shared.stop.load(Ordering::Relaxed) {
            match rd.get_mut().read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => break,
            }
        }
        return Ok(());
    }
    let mut head = format!("HTTP/1.1 {} X\r\nConnection: close\r\n", reply.status);
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    match reply.body {
        Body::Full(bytes) => {
            head.push_str(&format!("Content-Length: {}\r\n\r\n", bytes.len()));
            wr.write_all(head.as_bytes())?;
            wr.write_all(&bytes)?;
        }
        Body::Chunks { pieces, delay, cut } => {
            head.push_str("Transfer-Encoding: chunked\r\n\r\n");
            wr.write_all(head.as_bytes())?;
            wr.flush()?;
            for p in pieces {
                std::thread::sleep(delay);
                wr.write_all(format!("{:x}\r\n", p.len()).as_bytes())?;
                wr.write_all(&p)?;
                wr.write_all(b"\r\n")?;
                wr.flush()?;
            }
            if cut {
                wr.shutdown(std::net::Shutdown::Both)?;
                return Ok(());
            }
            wr.write_all(b"0\r\n\r\n")?;
        }
        Body::Stall => unreachable!(),
    }
    wr.flush()
}
