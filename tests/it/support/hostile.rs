//! A misbehaving provider on loopback: it reads one HTTP request per connection, then writes
//! whatever its script says, raw (an endless stream, a huge error body, a key echoed back, one
//! enormous event sent slowly). It speaks OpenAI's paths so the built-in `openai` kind reaches
//! it. Test support only: a script ends when the client goes away (a write fails).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the server does once a request is read: writes the answer to the stream (the
/// request's body is the second argument).
pub type Script = dyn Fn(&mut TcpStream, &str) + Send + Sync;

pub struct Hostile {
    port: u16,
    stop: Arc<AtomicBool>,
    /// Requests read so far.
    pub requests: Arc<AtomicUsize>,
}

impl Hostile {
    pub fn start(script: impl Fn(&mut TcpStream, &str) + Send + Sync + 'static) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicUsize::new(0));
        let script: Arc<Script> = Arc::new(script);
        let (stop2, requests2) = (stop.clone(), requests.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut conn) = conn else { continue };
                let (script, requests) = (script.clone(), requests2.clone());
                std::thread::spawn(move || {
                    if let Some(body) = read_request(&mut conn) {
                        requests.fetch_add(1, Ordering::SeqCst);
                        script(&mut conn, &body);
                    }
                });
            }
        });
        Hostile {
            port,
            stop,
            requests,
        }
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Reads the head and a `Content-Length` body; `None` when the client went away.
fn read_request(conn: &mut TcpStream) -> Option<String> {
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut rd = BufReader::new(conn.try_clone().ok()?);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if rd.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    rd.read_exact(&mut body).ok()?;
    Some(String::from_utf8_lossy(&body).into_owned())
}

/// A whole answer with this status, content type and body; the connection closes after it.
pub fn respond(conn: &mut TcpStream, status: u16, content_type: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body);
}

/// The head of a body that lasts until the connection closes; false when the client is gone.
pub fn start_stream(conn: &mut TcpStream, content_type: &str) -> bool {
    let head =
        format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n");
    conn.write_all(head.as_bytes()).is_ok()
}

/// An OpenAI stream chunk carrying `text` as one SSE event.
pub fn openai_chunk(text: &str) -> String {
    let v = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    format!("data: {v}\n\n")
}

/// An OpenAI error body with this message.
pub fn openai_error(message: &str) -> Vec<u8> {
    serde_json::json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}})
        .to_string()
        .into_bytes()
}

/// One OpenAI stream whose only chunk carries `bytes` of text, sent in pieces of `piece` bytes
/// with `pause` between them, then `[DONE]`.
pub fn one_large_event(bytes: usize, piece: usize, pause: Duration) -> Hostile {
    Hostile::start(move |conn: &mut TcpStream, _: &str| {
        if !start_stream(conn, "text/event-stream") {
            return;
        }
        let event = openai_chunk(&"z".repeat(bytes));
        for part in event.as_bytes().chunks(piece) {
            if conn.write_all(part).is_err() {
                return;
            }
            std::thread::sleep(pause);
        }
        let _ = conn.write_all(b"data: [DONE]\n\n");
    })
}
