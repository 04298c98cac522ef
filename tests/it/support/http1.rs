//! The bytes of HTTP/1.1 for the fake server (`server.rs`): reading a request (Content-Length
//! or chunked), writing heads, whole responses and single chunks of a chunked body, noticing the
//! peer closing, and splitting a reply into stream pieces.
//!
//! It never knows a provider's wire format: each `fake_*.rs` builds its own bodies and events
//! and the server puts them on the socket byte for byte (see `fake_openai.rs` for why the fakes
//! are hand-written rather than built on hyper/axum).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;

/// Longest request line or header line accepted.
pub const MAX_LINE: usize = 64 * 1024;
/// Most header lines accepted in one request.
pub const MAX_HEADERS: usize = 200;
/// Largest request body accepted (images may be inlined as base64).
pub const MAX_BODY: usize = 64 * 1024 * 1024;
/// After a complete response, how long to wait for the client to close its
/// side before the socket is dropped (closing with unread data would send RST).
pub const LINGER: Duration = Duration::from_secs(2);
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

/// Splits `text` in two on a char boundary, the second half one char longer when the count is
/// odd (how the fakes stream tool arguments in two pieces).
pub fn halves(text: &str) -> (&str, &str) {
    let half = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(0, |(b, _)| b);
    text.split_at(half)
}

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

/// The value of the first header with this name (case-insensitive).
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

pub fn count_words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

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

/// One request as read from the socket.
pub struct Request {
    pub method: String,
    /// The request target (path, plus query string if any).
    pub target: String,
    /// Header names lower-cased, values trimmed, in arrival order.
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

/// Writes `payload` as one chunk of a chunked body and flushes; false if the write failed.
pub async fn write_chunk(wr: &mut OwnedWriteHalf, payload: &[u8]) -> bool {
    let mut chunk = Vec::with_capacity(payload.len() + 16);
    chunk.extend_from_slice(format!("{:x}\r\n", payload.len()).as_bytes());
    chunk.extend_from_slice(payload);
    chunk.extend_from_slice(b"\r\n");
    wr.write_all(&chunk).await.is_ok() && wr.flush().await.is_ok()
}

/// Ends a chunked body with the 0-length chunk; false if the write failed.
pub async fn end_chunks(wr: &mut OwnedWriteHalf) -> bool {
    wr.write_all(b"0\r\n\r\n").await.is_ok() && wr.flush().await.is_ok()
}
