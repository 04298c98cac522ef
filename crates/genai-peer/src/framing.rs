//! Both framings of JSON-RPC over a byte stream: LSP's `Content-Length: N\r\n\r\n{json}` and
//! newline-delimited JSON. The daemon's codec detects which from the first bytes and answers
//! in the framing the client chose; ACP's reads lines only, each handed over as it came.
//!
//! This codec owns bytes and frames only; it must never parse JSON. Written on `tokio-util`'s
//! codec traits because no maintained crate speaks both framings with detection.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

/// The largest frame accepted (a message with images can be large).
pub const MAX_FRAME: usize = 64 * 1024 * 1024;
const MAX_HEADER: usize = 8 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    ContentLength,
    Lines,
}

/// The framing detected on input, shared with the writer so answers use the same one.
#[derive(Debug, Clone, Default)]
pub(crate) struct DetectedFraming(Arc<AtomicU8>);

impl DetectedFraming {
    pub(crate) fn get(&self) -> Option<Framing> {
        match self.0.load(Ordering::Relaxed) {
            1 => Some(Framing::ContentLength),
            2 => Some(Framing::Lines),
            _ => None,
        }
    }

    pub(crate) fn set(&self, f: Framing) {
        self.0.store(
            if f == Framing::ContentLength { 1 } else { 2 },
            Ordering::Relaxed,
        );
    }
}

/// One unit read from the input.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A frame's body (JSON not yet parsed).
    Message(Bytes),
    /// Bytes that could not be framed; the codec skipped them and goes on.
    Malformed(String),
}

/// The daemon's codec by default (framing detected, lines trimmed, frames bounded);
/// [`FrameCodec::lines_as_read`] for ACP.
#[derive(Debug, Default, Clone)]
pub struct FrameCodec {
    pub(crate) framing: DetectedFraming,
    /// Lines only, each handed over whole (its line end included) and of any length.
    as_read: bool,
    /// Bytes still to skip of a frame refused for its size.
    discard: usize,
    /// How much of the pending frame's body was searched for the next header.
    body_scanned: usize,
    /// How much of the pending line was searched for its end.
    line_scanned: usize,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `content-length:` in any case.
const CONTENT_LENGTH: &[u8] = b"content-length:";

/// The first `content-length:` (any case) in `haystack`.
fn find_content_length(haystack: &[u8]) -> Option<usize> {
    haystack
        .windows(CONTENT_LENGTH.len())
        .position(|w| w.eq_ignore_ascii_case(CONTENT_LENGTH))
}

/// Whether `line` reads `Name: value` with an HTTP token as the name.
fn is_header_line(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|b| *b == b':') else {
        return false;
    };
    colon > 0
        && line[..colon]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b))
}

/// The longest `Content-Length: N` line looked for across a body's end.
const HEADER_LINE: usize = 48;

/// Whether `tail` ends with the start of a `Content-Length: N` line: a piece of
/// `content-length:` (any case), or all of it followed by spaces, digits and maybe a `\r`.
fn ends_like_a_header(tail: &[u8]) -> bool {
    (0..tail.len()).any(|p| {
        let s = &tail[p..];
        if s.len() <= CONTENT_LENGTH.len() {
            return s.eq_ignore_ascii_case(&CONTENT_LENGTH[..s.len()]);
        }
        let rest = &s[CONTENT_LENGTH.len()..];
        let rest = rest.strip_suffix(b"\r").unwrap_or(rest);
        s[..CONTENT_LENGTH.len()].eq_ignore_ascii_case(CONTENT_LENGTH)
            && rest
                .iter()
                .all(|b| b.is_ascii_digit() || *b == b' ' || *b == b'\t')
    })
}

/// Where a `Content-Length: N` header line starts in `body`, if one does: bytes no JSON text
/// can hold (a raw line end never appears inside a JSON string, and the name outside one is
/// not JSON), so a body that holds one was given a length longer than it is.
fn next_header_in(body: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = find_content_length(&body[from..]) {
        let start = from + at;
        let rest = &body[start + CONTENT_LENGTH.len()..];
        let spaces = rest
            .iter()
            .take_while(|b| **b == b' ' || **b == b'\t')
            .count();
        let digits = rest[spaces..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits > 0 && rest[spaces + digits..].starts_with(b"\r\n") {
            return Some(start);
        }
        from = start + 1;
    }
    None
}

impl FrameCodec {
    /// Newline-delimited JSON only (ACP's stdio transport): each line is handed over as it came,
    /// line end and spaces included (a JSON error then points into the line as sent), whatever
    /// its length; lines of white space only are skipped.
    pub fn lines_as_read() -> FrameCodec {
        let codec = FrameCodec {
            as_read: true,
            ..FrameCodec::default()
        };
        codec.framing.set(Framing::Lines);
        codec
    }

    /// One line, or `None` until its end comes.
    fn decode_line(&mut self, buf: &mut BytesMut) -> Option<Frame> {
        loop {
            let Some(pos) = buf[self.line_scanned..].iter().position(|b| *b == b'\n') else {
                self.line_scanned = buf.len();
                if buf.len() > MAX_FRAME && !self.as_read {
                    buf.clear();
                    self.line_scanned = 0;
                    return Some(Frame::Malformed(format!(
                        "a line longer than {MAX_FRAME} bytes"
                    )));
                }
                return None;
            };
            let line = buf.split_to(self.line_scanned + pos + 1);
            self.line_scanned = 0;
            if line.trim_ascii().is_empty() {
                continue;
            }
            return Some(Frame::Message(self.line_body(line)));
        }
    }

    /// What a line (or the input's last bytes) hands over.
    fn line_body(&self, line: BytesMut) -> Bytes {
        if self.as_read {
            line.freeze()
        } else {
            Bytes::copy_from_slice(line.trim_ascii())
        }
    }

    /// One `Content-Length` frame. A wrong length loses only its own frame: bytes before the
    /// next header (the rest of a body whose length was too short, say one that counted
    /// characters instead of UTF-8 bytes) are skipped as one malformed unit, and a body that
    /// holds the next frame's header (its length was too long) is cut there.
    fn decode_content_length(
        &mut self,
        buf: &mut BytesMut,
    ) -> Result<Option<Frame>, std::io::Error> {
        if self.discard > 0 {
            let n = self.discard.min(buf.len());
            buf.advance(n);
            self.discard -= n;
            if self.discard > 0 {
                return Ok(None);
            }
        }
        let skip = buf
            .iter()
            .take_while(|b| **b == b'\r' || **b == b'\n')
            .count();
        buf.advance(skip);
        let Some(end) = find(buf, b"\r\n\r\n") else {
            if buf.len() > MAX_HEADER {
                buf.clear();
                return Ok(Some(Frame::Malformed(
                    "a header block without an end (expected `Content-Length: N` and a blank line)"
                        .into(),
                )));
            }
            return Ok(None);
        };
        if let Some(garbage) = garbage_before_header(&buf[..end]) {
            buf.advance(garbage);
            self.body_scanned = 0;
            return Ok(Some(Frame::Malformed(format!(
                "{garbage} bytes before a header were skipped (was the last frame's Content-Length too short?)"
            ))));
        }
        let header = String::from_utf8_lossy(&buf[..end]).into_owned();
        let mut length = None;
        for line in header.split("\r\n") {
            if let Some((name, value)) = line.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse::<usize>().ok();
                }
            }
        }
        let Some(length) = length else {
            buf.advance(end + 4);
            return Ok(Some(Frame::Malformed(
                "a frame without a valid Content-Length header".into(),
            )));
        };
        if length > MAX_FRAME {
            buf.advance(end + 4);
            self.discard = length;
            return Ok(Some(Frame::Malformed(format!(
                "a frame of {length} bytes is over the {MAX_FRAME} byte limit"
            ))));
        }
        let body_start = end + 4;
        let available = (buf.len() - body_start).min(length);
        // Look only at what was not looked at yet (less a header's length, which may straddle).
        let from = self.body_scanned.saturating_sub(64);
        if let Some(at) = next_header_in(&buf[body_start + from..body_start + available]) {
            let cut = from + at;
            buf.advance(body_start + cut);
            self.body_scanned = 0;
            return Ok(Some(Frame::Malformed(format!(
                "a frame of {cut} bytes, not the {length} its Content-Length says (the next header came early)"
            ))));
        }
        self.body_scanned = available;
        if available < length {
            buf.reserve(body_start + length - buf.len());
            return Ok(None);
        }
        // The next header may also start inside the body and run past its end (a length a few
        // bytes too long): no JSON text ends with a piece of a `Content-Length: N` line, so when
        // the body does, the bytes after it decide.
        let body_end = body_start + length;
        let tail = body_end.saturating_sub(HEADER_LINE).max(body_start);
        if ends_like_a_header(&buf[tail..body_end]) {
            let seen = buf.len().min(body_end + HEADER_LINE);
            let line_ended = buf[body_end - 1..seen].windows(2).any(|w| w == b"\r\n");
            if !line_ended && seen < body_end + HEADER_LINE {
                return Ok(None);
            }
            if let Some(at) = next_header_in(&buf[tail..seen]).filter(|at| tail + at < body_end) {
                let cut = tail + at - body_start;
                buf.advance(body_start + cut);
                self.body_scanned = 0;
                return Ok(Some(Frame::Malformed(format!(
                    "a frame of {cut} bytes, not the {length} its Content-Length says (the next header came early)"
                ))));
            }
        }
        self.body_scanned = 0;
        buf.advance(body_start);
        Ok(Some(Frame::Message(buf.split_to(length).freeze())))
    }
}

/// How many bytes of a header block come before its real headers: a `Content-Length` glued to
/// the end of something else, or lines that are not `Name: value` before one.
fn garbage_before_header(block: &[u8]) -> Option<usize> {
    let at = find_content_length(block)?;
    let line_start = block[..at]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |p| p + 1);
    if line_start != at {
        return Some(at);
    }
    // Header lines just before it belong to it; anything earlier that is not one is garbage.
    let mut start = at;
    while start > 0 {
        let newline = start - 1;
        let line_end = match newline.checked_sub(1) {
            Some(cr) if block[cr] == b'\r' => cr,
            _ => newline,
        };
        let prev_start = block[..newline]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |p| p + 1);
        if !is_header_line(&block[prev_start..line_end]) {
            return Some(start);
        }
        start = prev_start;
    }
    None
}

impl Decoder for FrameCodec {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        let framing = match self.framing.get() {
            Some(f) => f,
            None => {
                let skip = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
                buf.advance(skip);
                let Some(&first) = buf.first() else {
                    return Ok(None);
                };
                let f = if first == b'{' || first == b'[' {
                    Framing::Lines
                } else {
                    Framing::ContentLength
                };
                self.framing.set(f);
                f
            }
        };
        match framing {
            Framing::Lines => Ok(self.decode_line(buf)),
            Framing::ContentLength => self.decode_content_length(buf),
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        if let Some(f) = self.decode(buf)? {
            return Ok(Some(f));
        }
        self.line_scanned = 0;
        if buf.iter().all(|b| b.is_ascii_whitespace()) {
            buf.clear();
            return Ok(None);
        }
        let rest = buf.split();
        Ok(Some(match self.framing.get() {
            Some(Framing::Lines) | None => Frame::Message(self.line_body(rest)),
            Some(Framing::ContentLength) => {
                Frame::Malformed("the input ended inside a frame".into())
            }
        }))
    }
}

impl Encoder<Bytes> for FrameCodec {
    type Error = std::io::Error;

    fn encode(&mut self, body: Bytes, dst: &mut BytesMut) -> Result<(), Self::Error> {
        match self.framing.get().unwrap_or(Framing::Lines) {
            Framing::ContentLength => {
                dst.put_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
                dst.put_slice(&body);
            }
            Framing::Lines => {
                dst.put_slice(&body);
                dst.put_u8(b'\n');
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "framing_tests.rs"]
mod tests;
