//! A hand-written HTTP/1.1 file server on loopback for download tests: serves byte ranges
//! (`Range: bytes=N-` gives 206 with `Content-Range`, or 416 past the end), answers `HEAD`,
//! can redirect like Hugging Face's `resolve` URLs (with `X-Linked-Etag` on the redirect), and
//! can misbehave on purpose: drop the connection after N body bytes, stall after N bytes until
//! the test releases it, or ignore ranges. Every request is recorded.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    seen: Vec<Seen>,
    ignore_range: bool,
}

pub struct FileServer {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl FileServer {
    pub fn start() -> FileServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let s = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let s = s.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &s);
                });
            }
        });
        FileServer { port, state }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
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
        self.state
            .lock()
            .unwrap()
            .files
            .insert(path.to_string(), entry);
    }

    /// Queues a misbehaviour for the next GET with a body.
    pub fn plan(&self, plan: Plan) {
        self.state.lock().unwrap().plans.push_back(plan);
    }

    pub fn set_ignore_range(&self, on: bool) {
        self.state.lock().unwrap().ignore_range = on;
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// The GET requests for `path`.
    pub fn gets(&self, path: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == "GET" && s.path == path)
            .collect()
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or_default().to_string();
    let path = words.next().unwrap_or_default().to_string();
    let mut range = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("range") {
                range = Some(v.trim().to_string());
            }
        }
    }
    let (entry, ignore_range) = {
        let mut st = state.lock().unwrap();
        st.seen.push(Seen {
            method: method.clone(),
            path: path.clone(),
            range: range.clone(),
        });
        (st.files.get(&path).cloned(), st.ignore_range)
    };
    let mut out = stream;
    let Some(entry) = entry else {
        let body = b"not found";
        write!(
            out,
            "HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )?;
        if method != "HEAD" {
            out.write_all(body)?;
        }
        return out.flush();
    };
    let extra: String = entry
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    if let Some(loc) = &entry.redirect {
        write!(
            out,
            "HTTP/1.1 302 Found\r\nLocation: {loc}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n"
        )?;
        return out.flush();
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
            write!(
                out,
                "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{len}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )?;
            return out.flush();
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
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nAccept-Ranges: bytes\r\n{extra}Connection: close\r\n\r\n",
        len - from
    )?;
    if method == "HEAD" {
        return out.flush();
    }
    let body = &entry.body[from..];
    let plan = state.lock().unwrap().plans.pop_front();
    match plan {
        Some(Plan::DropAfter(n)) => {
            out.write_all(&body[..n.min(body.len())])?;
            out.flush()?;
            out.shutdown(Shutdown::Both)?;
        }
        Some(Plan::StallAfter(n, release)) => {
            out.write_all(&body[..n.min(body.len())])?;
            out.flush()?;
            let _ = release.recv_timeout(Duration::from_secs(60));
            out.write_all(&body[n.min(body.len())..])?;
            out.flush()?;
        }
        None => {
            out.write_all(body)?;
            out.flush()?;
        }
    }
    Ok(())
}
