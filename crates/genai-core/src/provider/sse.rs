//! Server-sent events: the framing of a streamed body into events (`event:`, `data:`, blank
//! line), linear in the input, with a limit on one event's size.
//!
//! Hand-written rather than a crate because the crate used before (`eventsource-stream`
//! 0.2.3) parses its whole pending buffer again on every piece that arrives, so one large event
//! took quadratic time (8 MiB: 6 s, 50 MiB: over 100 s, during which nothing could cancel the
//! turn), and no maintained crate limits an event's size. Here every byte is looked at once: only
//! the new piece is searched for a line end, and a line's start waits in `pending`. It owns framing
//! only: it must never read an event's data (that is the format's job).

use std::collections::VecDeque;

use futures::StreamExt;

use super::{ByteStream, EventStream, StreamEvent};
use crate::error::{Error, Result};

/// The SSE parser state of one response.
#[derive(Debug)]
pub struct SseDecoder {
    /// Bytes of a line not yet complete.
    pending: Vec<u8>,
    /// The previous line ended with `\r`: a `\n` right after it belongs to that line end.
    after_cr: bool,
    /// The stream's first line is still to come (a BOM at its start is skipped: taken off the
    /// whole line, as the BOM's three bytes may come in different pieces).
    at_start: bool,
    event: Option<String>,
    data: Vec<u8>,
    /// Whether a `data:` line came for the event being built.
    has_data: bool,
    max_event: usize,
}

impl SseDecoder {
    /// A decoder that refuses an event (its data, or one line) over `max_event` bytes.
    pub fn new(max_event: usize) -> SseDecoder {
        SseDecoder {
            pending: Vec::new(),
            after_cr: false,
            at_start: true,
            event: None,
            data: Vec::new(),
            has_data: false,
            max_event,
        }
    }

    /// Reads the next bytes of the body and appends the events they complete to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<()> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            bytes = bytes.strip_prefix(b"\n").unwrap_or(bytes);
        }
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
            let line_end = rest[end];
            let piece = &rest[..end];
            if self.pending.is_empty() {
                self.line(piece, out)?;
            } else {
                self.check_size(self.pending.len() + piece.len())?;
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(piece);
                self.line(&line, out)?;
            }
            rest = &rest[end + 1..];
            if line_end == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.check_size(self.pending.len() + rest.len())?;
        self.pending.extend_from_slice(rest);
        Ok(())
    }

    fn check_size(&self, line: usize) -> Result<()> {
        if line + self.data.len() > self.max_event {
            return Err(Error::provider(format!(
                "the provider's stream has an event over {} bytes (max_event_bytes)",
                self.max_event
            )));
        }
        Ok(())
    }

    /// One complete line: a field, a comment, or the blank line that ends an event.
    fn line(&mut self, mut line: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<()> {
        if self.at_start {
            self.at_start = false;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                self.check_size(value.len() + 1)?;
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            // `id` and `retry` matter to a browser reconnecting; a model's answer is not resumed.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut VecDeque<StreamEvent>) {
        let event = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        let data = std::mem::take(&mut self.data);
        let data = String::from_utf8(data)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        out.push_back(StreamEvent {
            // `message` is the default type, reported as none.
            event: event.filter(|e| !e.is_empty() && e != "message"),
            data,
        });
    }
}

/// The events of an SSE body; an event not ended by a blank line when the body ends is
/// dropped, as the SSE standard says. `provider` names the errors.
pub(crate) fn events(bytes: ByteStream, provider: &str, max_event: usize) -> EventStream {
    let provider = provider.to_string();
    let state = (
        bytes,
        SseDecoder::new(max_event),
        VecDeque::new(),
        false,
        provider,
    );
    Box::pin(futures::stream::unfold(
        state,
        |(mut bytes, mut decoder, mut ready, mut done, provider)| async move {
            loop {
                if let Some(event) = ready.pop_front() {
                    return Some((Ok(event), (bytes, decoder, ready, done, provider)));
                }
                if done {
                    return None;
                }
                match bytes.next().await {
                    Some(Ok(chunk)) => {
                        if let Err(e) = decoder.feed(&chunk, &mut ready) {
                            done = true;
                            ready.clear();
                            let e = Error::new(e.kind, format!("{provider}: {}", e.message));
                            return Some((Err(e), (bytes, decoder, ready, done, provider)));
                        }
                    }
                    Some(Err(e)) => {
                        done = true;
                        return Some((Err(e), (bytes, decoder, ready, done, provider)));
                    }
                    None => done = true,
                }
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], piece: usize) -> Vec<StreamEvent> {
        let mut d = SseDecoder::new(1 << 20);
        let mut out = VecDeque::new();
        for chunk in input.chunks(piece.max(1)) {
            d.feed(chunk, &mut out).unwrap();
        }
        out.into_iter().collect()
    }

    #[test]
    fn events_are_the_same_however_the_body_is_cut() {
        let body = b"\xEF\xBB\xBF: comment\r\ndata: {\"a\":1}\r\n\r\nevent: message_start\ndata:x\ndata: y\n\nevent: message\rdata: z\r\rid: 3\nretry: 5\n\ndata: left without an end";
        let want = vec![
            StreamEvent::data("{\"a\":1}"),
            StreamEvent {
                event: Some("message_start".into()),
                data: "x\ny".into(),
            },
            StreamEvent::data("z"),
        ];
        for piece in [1, 2, 3, 7, body.len()] {
            assert_eq!(parse_in_pieces(body, piece), want, "pieces of {piece}");
        }
    }

    #[test]
    fn a_bom_before_the_first_field_is_skipped_however_it_is_cut() {
        // The fuzz target `sse` found a BOM split over pieces read as part of a field's name.
        let body = b"\xEF\xBB\xBFdata: @\n\n";
        for piece in [1, 2, 3, body.len()] {
            assert_eq!(
                parse_in_pieces(body, piece),
                vec![StreamEvent::data("@")],
                "pieces of {piece}"
            );
        }
    }

    #[test]
    fn an_event_over_the_limit_is_an_error_not_memory() {
        let mut d = SseDecoder::new(100);
        let mut out = VecDeque::new();
        d.feed(b"data: ", &mut out).unwrap();
        let e = d.feed(&[b'x'; 200], &mut out).unwrap_err();
        assert!(e.message.contains("over 100 bytes"), "{}", e.message);
        let mut d = SseDecoder::new(100);
        d.feed(
            &b"data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n".repeat(3),
            &mut out,
        )
        .unwrap_err();
    }

    #[test]
    fn a_large_event_takes_linear_time() {
        // 8 MiB in 16 KiB pieces: the quadratic parser took seconds here, this takes
        // milliseconds. Only correctness is asserted; `examples/` measures speed.
        let mut body = b"data: ".to_vec();
        body.extend(std::iter::repeat_n(b'a', 8 << 20));
        body.extend_from_slice(b"\n\n");
        let mut d = SseDecoder::new(16 << 20);
        let mut out = VecDeque::new();
        for chunk in body.chunks(16 << 10) {
            d.feed(chunk, &mut out).unwrap();
        }
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data.len(), 8 << 20);
    }
}
