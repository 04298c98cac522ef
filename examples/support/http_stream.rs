//! The benchmark's HTTP client: one streaming chat or completion request over a plain loopback
//! socket, timed (first token, last token, tokens), and the small requests around it. Written
//! on `TcpStream` rather than an HTTP crate so that nothing but the server's own time is
//! measured. It only measures.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{Res, DEADLINE};

/// One stream of a concurrent run, timed from the moment all requests were sent.
pub struct Stream {
    pub first: Duration,
    pub done: Duration,
    pub tokens: u64,
    pub text: String,
}

/// A loopback port free at the moment of asking.
pub fn free_port() -> Res<u16> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot bind loopback: {e}"))?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// The status code of `GET path`.
pub fn http_status(port: u16, path: &str) -> Res<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(s)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    status_code(&line)
}

fn status_code(line: &str) -> Res<u16> {
    line.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("not an HTTP status line: {line:?}"))
}

/// One streaming openai-chat request (`body`) POSTed to `path`, with a bearer `token` when
/// given; times from `started`. The first token is the first content or tool-call delta; tokens
/// are the final usage's count, else the deltas (one token each).
pub fn stream_request(
    port: u16,
    path: &str,
    token: Option<&str>,
    body: &Value,
    started: Instant,
) -> Res<Stream> {
    let body = body.to_string();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(DEADLINE))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).map_err(|e| e.to_string())?;
    let code = status_code(&line)?;
    let mut chunked = false;
    loop {
        line.clear();
        r.read_line(&mut line).map_err(|e| e.to_string())?;
        let h = line.trim().to_ascii_lowercase();
        if h.is_empty() {
            break;
        }
        chunked |= h.starts_with("transfer-encoding:") && h.contains("chunked");
    }
    let mut first = None;
    let mut chunks = 0u64;
    let mut text = String::new();
    let mut usage = None;
    let mut pending = Vec::new();
    let mut on_line = |l: &str| {
        let Some(data) = l.trim().strip_prefix("data:") else {
            return;
        };
        let Ok(v) = serde_json::from_str::<Value>(data.trim()) else {
            return;
        };
        let delta = &v["choices"][0]["delta"];
        // llama-server's own `/completion` stream: `content`, and `tokens_predicted` at the end.
        let content = delta["content"]
            .as_str()
            .or(v["content"].as_str())
            .unwrap_or("");
        if !content.is_empty() {
            first.get_or_insert_with(|| started.elapsed());
            chunks += 1;
            text.push_str(content);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            first.get_or_insert_with(|| started.elapsed());
            chunks += 1;
            text.push_str(call["function"]["name"].as_str().unwrap_or(""));
            text.push_str(call["function"]["arguments"].as_str().unwrap_or(""));
        }
        if let Some(t) = v["usage"]["completion_tokens"]
            .as_u64()
            .or(v["tokens_predicted"].as_u64())
        {
            usage = Some(t);
        }
    };
    let mut body = Vec::new();
    loop {
        let piece = if chunked {
            line.clear();
            r.read_line(&mut line).map_err(|e| e.to_string())?;
            let size = line.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size, 16)
                .map_err(|_| format!("bad chunk size {:?}", line.trim()))?;
            if size == 0 {
                break;
            }
            let mut buf = vec![0; size + 2];
            r.read_exact(&mut buf).map_err(|e| e.to_string())?;
            buf.truncate(size);
            buf
        } else {
            let mut buf = vec![0; 4096];
            let got = r.read(&mut buf).map_err(|e| e.to_string())?;
            if got == 0 {
                break;
            }
            buf.truncate(got);
            buf
        };
        if code != 200 {
            body.extend_from_slice(&piece);
            continue;
        }
        pending.extend_from_slice(&piece);
        while let Some(at) = pending.iter().position(|&b| b == b'\n') {
            let l: Vec<u8> = pending.drain(..=at).collect();
            on_line(&String::from_utf8_lossy(&l));
        }
    }
    on_line(&String::from_utf8_lossy(&pending));
    if code != 200 {
        return Err(format!(
            "HTTP {code}: {}",
            String::from_utf8_lossy(&body).trim()
        ));
    }
    let done = started.elapsed();
    Ok(Stream {
        first: first.unwrap_or(done),
        done,
        tokens: usage.unwrap_or(chunks),
        text,
    })
}
