//! A hand-written HTTP/1.1 file server on loopback for download tests: serves byte ranges
//! (`Range: bytes=N-` gives 206 with `Content-Range`, or 416 past the end), answers `HEAD`,
//! can redirect like Hugging Face's `resolve` URLs (with `X-Linked-Etag` on the redirect), and
//! can misbehave on purpose: drop the connection after N body bytes, stall after N bytes until
//! the test releases it, or ignore ranges. Every request is recorded. The HTTP/1.1 server is
//! `server.rs`; the heads are written here byte for byte.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{self, TryRecvError};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::server::{Exchange, FakeServer, RecordedRequest, Wire};

/// One file (or redirect) the server knows.
#[derive(Clone, Default)]
pub struct Entry {
    pub body: Vec<u8>,
    /// Extra response headers.
    pub headers: Vec<(String, String)>,
    /// Answer 302 to this location instead of serving the body.
    pub redirect: Option<String>,
}

/// What the server does with the body of the next GET that has one.
pub enum Plan {
    /// Send `n` body bytes, then close the connection.
    DropAfter(usize),
    /// Send `n` body bytes, then wait until the sender is used (or dropped), then send the rest.
    StallAfter(usize, mpsc::Receiver<()>),
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub range: Option<String>,
}

#[derive(Default)]
struct State {
    files: HashMap<String, Entry>,
    plans: VecDeque<Plan>,
    ignore_range: bool,
}

/// Files served over HTTP/1.1 ranges, with planned misbehaviours.
pub struct Files {
    state: Mutex<State>,
}

impl Files {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running file server; dropping it stops it. The server's own methods are reached
/// through it.
pub struct FileServer(FakeServer<Files>);

impl std::ops::Deref for FileServer {
    type Target = FakeServer<Files>;

    fn deref(&self) -> &FakeServer<Files> {
        &self.0
    }
}

impl FileServer {
    pub fn start() -> FileServer {
        let files = Files {
            state: Mutex::new(State::default()),
        };
        FileServer(FakeServer::listen(0, files, ()).expect("start the file server"))
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port())
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url())
    }

    pub fn add(&self, path: &str, body: &[u8]) {
        self.add_entry(
            path,
            Entry {
                body: body.to_vec(),
                ..Default::default()
            },
        );
    }

    pub fn add_entry(&self, path: &str, entry: Entry) {
        self.wire().lock().files.insert(path.to_string(), entry);
    }

    /// Queues a misbehaviour for the next GET with a body.
    pub fn plan(&self, plan: Plan) {
        self.wire().lock().plans.push_back(plan);
    }

    pub fn set_ignore_range(&self, on: bool) {
        self.wire().lock().ignore_range = on;
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.requests()
    }

    /// The GET requests for `path`.
    pub fn gets(&self, path: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == "GET" && s.path == path)
            .collect()
    }
}

impl Wire for Files {
    type Behavior = ();
    type Record = Seen;
    const NAME: &'static str = "files";

    fn inspect(&self, r: &RecordedRequest, _: Option<&str>) -> (Seen, bool) {
        let seen = Seen {
            method: r.method.clone(),
            path: r.path.clone(),
            range: r.header("range").map(str::to_string),
        };
        (seen, false)
    }

    async fn answer(mut ex: Exchange<Self>) {
        let Seen {
            method,
            path,
            range,
        } = ex.record.clone();
        let (entry, ignore_range) = {
            let st = ex.wire().lock();
            (st.files.get(&path).cloned(), st.ignore_range)
        };
        let Some(entry) = entry else {
            let body = b"not found";
            let mut out = format!(
                "HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            if method != "HEAD" {
                out.extend_from_slice(body);
            }
            return send(ex, &out).await;
        };
        let extra: String = entry
            .headers
            .iter()
            .map(|(k, v)| format!("{k}: {v}\r\n"))
            .collect();
        if let Some(loc) = &entry.redirect {
            let head = format!(
                "HTTP/1.1 302 Found\r\nLocation: {loc}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n"
            );
            return send(ex, head.as_bytes()).await;
        }
        let len = entry.body.len();
        let start = match range.as_deref().filter(|_| !ignore_range) {
            Some(r) => r
                .strip_prefix("bytes=")
                .and_then(|r| r.strip_suffix('-'))
                .and_then(|n| n.parse::<usize>().ok()),
            None => None,
        };
        let (status, from) = match start {
            Some(s) if s >= len => {
                let head = format!(
                    "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{len}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                return send(ex, head.as_bytes()).await;
            }
            Some(s) => (
                format!(
                    "206 Partial Content\r\nContent-Range: bytes {s}-{}/{len}",
                    len - 1
                ),
                s,
            ),
            None => ("200 OK".to_string(), 0),
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nAccept-Ranges: bytes\r\n{extra}Connection: close\r\n\r\n",
            len - from
        );
        if method == "HEAD" {
            return send(ex, head.as_bytes()).await;
        }
        if !ex.write(head.as_bytes()).await {
            return;
        }
        let body = &entry.body[from..];
        let plan = ex.wire().lock().plans.pop_front();
        match plan {
            Some(Plan::DropAfter(n)) => {
                // Dropping the socket after these bytes cuts the body.
                ex.write(&body[..n.min(body.len())]).await;
            }
            Some(Plan::StallAfter(n, release)) => {
                if ex.write(&body[..n.min(body.len())]).await {
                    released(release).await;
                    send(ex, &body[n.min(body.len())..]).await;
                }
            }
            None => send(ex, body).await,
        }
    }
}

/// Writes the bytes, then closes gracefully.
async fn send(mut ex: Exchange<Files>, bytes: &[u8]) {
    if ex.write(bytes).await {
        ex.close().await;
    }
}

/// Resolves when the test releases a stalled body (or drops the sender), at most in 60 s.
async fn released(release: mpsc::Receiver<()>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        match release.try_recv() {
            Ok(()) | Err(TryRecvError::Disconnected) => return,
            Err(TryRecvError::Empty) => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
}
