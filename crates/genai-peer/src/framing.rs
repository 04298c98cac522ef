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
pub enum Framing {
    ContentLength,
    Lines,
}

/// The framing detected on input, shared with the writer so answers use the same one.
#[derive(Debug, Clone, Default)]
pub struct DetectedFraming(Arc<AtomicU8>);

impl DetectedFraming {
    pub fn get(&self) -> Option<Framing> {
        match self.0.load(Ordering::Relaxed) {
            1 => Some(Framing::ContentLength),
            2 => Some(Framing::Lines),
            _ => None,
        }
    }

    pub fn set(&self, f: Framing) {
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
    pub framing: DetectedFraming,
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
mod tests {
    use super::*;

    fn frames(input: &[u8]) -> (Vec<Frame>, Option<Framing>) {
        let mut c = FrameCodec::default();
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(f) = c.decode(&mut buf).unwrap() {
            out.push(f);
        }
        while let Some(f) = c.decode_eof(&mut buf).unwrap() {
            out.push(f);
        }
        (out, c.framing.get())
    }

    #[test]
    fn detects_lines() {
        let (f, k) = frames(b"\n{\"a\":1}\n\n{\"b\":2}");
        assert_eq!(k, Some(Framing::Lines));
        assert_eq!(
            f,
            vec![
                Frame::Message(Bytes::from_static(b"{\"a\":1}")),
                Frame::Message(Bytes::from_static(b"{\"b\":2}"))
            ]
        );
    }

    #[test]
    fn detects_content_length_and_recovers_from_bad_headers() {
        let (f, k) = frames(b"Content-Length: 7\r\n\r\n{\"a\":1}X-Bad: 1\r\n\r\ncontent-length: 2\r\nContent-Type: x\r\n\r\n{}");
        assert_eq!(k, Some(Framing::ContentLength));
        assert_eq!(f.len(), 3);
        assert_eq!(f[0], Frame::Message(Bytes::from_static(b"{\"a\":1}")));
        assert!(matches!(f[1], Frame::Malformed(_)));
        assert_eq!(f[2], Frame::Message(Bytes::from_static(b"{}")));
    }

    #[test]
    fn an_oversized_frame_is_one_error_and_its_body_is_skipped() {
        let mut c = FrameCodec::default();
        let big = MAX_FRAME + 10;
        let mut buf = BytesMut::from(format!("Content-Length: {big}\r\n\r\n").as_bytes());
        assert!(matches!(
            c.decode(&mut buf).unwrap(),
            Some(Frame::Malformed(_))
        ));
        let mut left = big;
        while left > 0 {
            let n = left.min(1 << 20);
            buf.put_slice(&vec![b'x'; n]);
            left -= n;
            assert_eq!(c.decode(&mut buf).unwrap(), None);
        }
        assert!(buf.is_empty());
        buf.clear();
        buf.put_slice(b"Content-Length: 2\r\n\r\n{}");
        assert_eq!(
            c.decode(&mut buf).unwrap(),
            Some(Frame::Message(Bytes::from_static(b"{}")))
        );
    }

    fn framed(length: usize, body: &str) -> String {
        format!("Content-Length: {length}\r\n\r\n{body}")
    }

    fn messages(frames: &[Frame]) -> Vec<&[u8]> {
        frames
            .iter()
            .filter_map(|f| match f {
                Frame::Message(b) => Some(&b[..]),
                Frame::Malformed(_) => None,
            })
            .collect()
    }

    #[test]
    fn a_length_too_short_loses_only_its_own_frame() {
        // Characters counted instead of UTF-8 bytes: `é` is two bytes.
        let bad = r#"{"id":1,"text":"café"}"#;
        let good = r#"{"id":2}"#;
        let input = framed(bad.chars().count(), bad)
            + &framed(good.len(), good)
            + &framed(good.len(), good);
        let (f, _) = frames(input.as_bytes());
        assert_eq!(
            messages(&f)[1..],
            [good.as_bytes(), good.as_bytes()],
            "{f:?}"
        );
        // One byte short, with LSP's Content-Type before the next length.
        let next = format!(
            "Content-Type: application/vscode-jsonrpc\r\n{}",
            framed(good.len(), good)
        );
        let (f, _) = frames((framed(bad.len() - 1, bad) + &next).as_bytes());
        assert_eq!(messages(&f).last(), Some(&good.as_bytes()), "{f:?}");
        assert!(matches!(f[1], Frame::Malformed(_)), "{f:?}");
    }

    #[test]
    fn a_length_too_long_is_cut_at_the_next_header() {
        let good = r#"{"id":2}"#;
        let input = framed(40, r#"{"id":1}"#) + &framed(good.len(), good);
        let mut c = FrameCodec::default();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        // Byte by byte, as a slow pipe would bring it.
        for b in input.as_bytes() {
            buf.put_u8(*b);
            while let Some(f) = c.decode(&mut buf).unwrap() {
                out.push(f);
            }
        }
        assert!(matches!(out[0], Frame::Malformed(_)), "{out:?}");
        assert_eq!(messages(&out), [good.as_bytes()], "{out:?}");
        // A few bytes too long: the next header starts inside the body and runs past it.
        for over in 1..30 {
            let first = r#"{"id":1}"#;
            let input = framed(first.len() + over, first) + &framed(good.len(), good);
            let (f, _) = frames(input.as_bytes());
            assert_eq!(messages(&f), [good.as_bytes()], "{over} too long: {f:?}");
        }
        // A body that mentions the header in a string is not cut.
        let text = r#"{"text":"Content-Length: 5"}"#;
        let (f, _) = frames(framed(text.len(), text).as_bytes());
        assert_eq!(messages(&f), [text.as_bytes()]);
    }

    #[test]
    fn lines_as_read_keep_their_bytes_and_never_switch_framing() {
        let input = b"  {\"a\":1} \r\n\t\n\nnot json\nContent-Length: 2\r\n\r\n{}\n[1]";
        let whole = {
            let mut c = FrameCodec::lines_as_read();
            let mut buf = BytesMut::from(&input[..]);
            let mut out = Vec::new();
            while let Some(f) = c.decode_eof(&mut buf).unwrap() {
                out.push(f);
            }
            out
        };
        let expected: Vec<&[u8]> = vec![
            b"  {\"a\":1} \r\n",
            b"not json\n",
            b"Content-Length: 2\r\n",
            b"{}\n",
            b"[1]",
        ];
        assert_eq!(messages(&whole), expected);
        // Byte by byte, as a slow pipe brings them: the same lines.
        let mut c = FrameCodec::lines_as_read();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for b in input {
            buf.put_u8(*b);
            while let Some(f) = c.decode(&mut buf).unwrap() {
                out.push(f);
            }
        }
        while let Some(f) = c.decode_eof(&mut buf).unwrap() {
            out.push(f);
        }
        assert_eq!(out, whole);
        assert_eq!(c.framing.get(), Some(Framing::Lines));
    }

    #[test]
    fn partial_frames_wait_for_more() {
        let mut c = FrameCodec::default();
        let mut buf = BytesMut::from(&b"Content-Length: 4\r\n\r\n{}"[..]);
        assert_eq!(c.decode(&mut buf).unwrap(), None);
        buf.put_slice(b"  ");
        assert_eq!(
            c.decode(&mut buf).unwrap(),
            Some(Frame::Message(Bytes::from_static(b"{}  ")))
        );
        let mut out = BytesMut::new();
        c.encode(Bytes::from_static(b"{}"), &mut out).unwrap();
        assert_eq!(&out[..], b"Content-Length: 2\r\n\r\n{}");
    }
}
