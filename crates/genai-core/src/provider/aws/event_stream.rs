//! The AWS binary event stream (`application/vnd.amazon.eventstream`) as [`StreamEvent`]s, with
//! the frame decoder of `aws-smithy-eventstream` (which checks both CRCs of every frame).
//!
//! An `event` message becomes `StreamEvent { event: Some(:event-type), data: payload }`; an
//! `exception` message (`:exception-type`, JSON `{"message"}`) or an `error` message
//! (`:error-code`, `:error-message`) becomes one readable error that ends the stream; a corrupt
//! frame or a stream cut inside a frame is an error too. It must never interpret an event's
//! payload beyond the exception text: that is the format's job.

use std::collections::VecDeque;

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::{HeaderValue, Message};
use bytes::BytesMut;
use futures::StreamExt;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::provider::{ByteStream, EventStream, StreamEvent};

/// The content type of an AWS event stream.
pub(crate) const CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

/// A string header of a message.
pub(crate) fn header<'a>(m: &'a Message, name: &str) -> Option<&'a str> {
    m.headers()
        .iter()
        .find(|h| h.name().as_str() == name)
        .and_then(|h| match h.value() {
            HeaderValue::String(s) => Some(s.as_str()),
            _ => None,
        })
}

/// One decoded message as an event, or the error it reports.
pub(crate) fn to_event(provider: &str, m: &Message) -> Result<StreamEvent> {
    let payload = String::from_utf8_lossy(m.payload()).into_owned();
    match header(m, ":message-type").unwrap_or("event") {
        "event" => Ok(StreamEvent {
            event: header(m, ":event-type").map(str::to_string),
            data: payload,
        }),
        "exception" => {
            let kind = header(m, ":exception-type").unwrap_or("exception");
            let json = serde_json::from_str::<Value>(&payload).ok();
            let text = |k: &str| {
                json.as_ref()
                    .and_then(|j| j.get(k))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            let mut message = text("message")
                .or_else(|| text("Message"))
                .unwrap_or_else(|| payload.chars().take(300).collect());
            if let Some(original) = text("originalMessage") {
                message.push_str(&format!(" (the model said: {original})"));
            }
            let hint = match kind {
                "throttlingException" => " (rate limited: wait and try again)",
                "serviceUnavailableException"
                | "internalServerException"
                | "modelStreamErrorException" => " (the provider failed: try again later)",
                _ => "",
            };
            Err(Error::provider(format!(
                "{provider}: the stream stopped with {kind}: {message}{hint}"
            )))
        }
        other => {
            let code = header(m, ":error-code").unwrap_or(other);
            let message = header(m, ":error-message").unwrap_or("no details");
            Err(Error::provider(format!(
                "{provider}: the stream stopped with {code}: {message}"
            )))
        }
    }
}

struct State {
    provider: String,
    inner: ByteStream,
    buf: BytesMut,
    decoder: MessageFrameDecoder,
    /// Part of a frame has arrived (in `buf`, or its prelude inside the decoder).
    mid_frame: bool,
    pending: VecDeque<Result<StreamEvent>>,
    done: bool,
}

/// Decodes a response body framed as an AWS event stream into events. The stream ends after
/// the first error.
pub fn events(provider: &str, body: ByteStream) -> EventStream {
    let state = State {
        provider: provider.to_string(),
        inner: body,
        buf: BytesMut::new(),
        decoder: MessageFrameDecoder::new(),
        mid_frame: false,
        pending: VecDeque::new(),
        done: false,
    };
    Box::pin(futures::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(item) = s.pending.pop_front() {
                if item.is_err() {
                    s.pending.clear();
                    s.done = true;
                }
                return Some((item, s));
            }
            if s.done {
                return None;
            }
            let had_bytes = !s.buf.is_empty();
            match s.decoder.decode_frame(&mut s.buf) {
                Ok(DecodedFrame::Complete(m)) => {
                    s.mid_frame = false;
                    s.pending.push_back(to_event(&s.provider, &m));
                    continue;
                }
                Ok(DecodedFrame::Incomplete) => s.mid_frame |= had_bytes,
                Err(e) => {
                    s.done = true;
                    return Some((
                        Err(Error::provider(format!(
                            "{}: the provider's event stream is corrupt: {e}",
                            s.provider
                        ))),
                        s,
                    ));
                }
            }
            match s.inner.next().await {
                Some(Ok(chunk)) => s.buf.extend_from_slice(&chunk),
                Some(Err(e)) => {
                    s.done = true;
                    let e = Error::new(
                        e.kind,
                        format!(
                            "{}; the stream ended before the reply was complete",
                            e.message
                        ),
                    );
                    return Some((Err(e), s));
                }
                None => {
                    s.done = true;
                    if s.mid_frame || !s.buf.is_empty() {
                        let e = Error::provider(format!(
                            "{}: the provider's stream ended before the reply was complete (cut inside an event)",
                            s.provider
                        ));
                        return Some((Err(e), s));
                    }
                    return None;
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_smithy_eventstream::frame::write_message_to;
    use aws_smithy_types::event_stream::Header;
    use bytes::Bytes;

    fn frame(headers: &[(&str, &str)], payload: &str) -> Vec<u8> {
        let mut m = Message::new(Bytes::from(payload.to_string()));
        for (k, v) in headers {
            m = m.add_header(Header::new(
                k.to_string(),
                HeaderValue::String(v.to_string().into()),
            ));
        }
        let mut out = Vec::new();
        write_message_to(&m, &mut out).unwrap();
        out
    }

    fn event(kind: &str, payload: &str) -> Vec<u8> {
        frame(
            &[
                (":event-type", kind),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            payload,
        )
    }

    /// Feeds `bytes` in pieces of `piece` bytes and collects what comes out.
    fn run(bytes: Vec<u8>, piece: usize) -> Vec<Result<StreamEvent>> {
        let chunks: Vec<Result<Bytes>> = bytes
            .chunks(piece)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let body: ByteStream = Box::pin(futures::stream::iter(chunks));
        futures::executor::block_on(events("bedrock", body).collect::<Vec<_>>())
    }

    #[test]
    fn frames_split_anywhere_decode_to_events() {
        let mut bytes = event("messageStart", r#"{"role":"assistant"}"#);
        bytes.extend(event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"text":"Hi"}}"#,
        ));
        for piece in [1, 7, 1000] {
            let out = run(bytes.clone(), piece);
            assert_eq!(out.len(), 2, "piece {piece}");
            let second = out[1].as_ref().unwrap();
            assert_eq!(second.event.as_deref(), Some("contentBlockDelta"));
            assert!(second.data.contains("\"Hi\""));
        }
    }

    #[test]
    fn exceptions_cuts_and_bad_checksums_are_clear_errors() {
        let mut bytes = event("messageStart", r#"{"role":"assistant"}"#);
        bytes.extend(frame(
            &[
                (":exception-type", "throttlingException"),
                (":content-type", "application/json"),
                (":message-type", "exception"),
            ],
            r#"{"message":"Too many requests, please wait before trying again."}"#,
        ));
        bytes.extend(event("messageStop", "{}"));
        let out = run(bytes, 5);
        assert_eq!(out.len(), 2, "the stream ends at the exception");
        let e = out[1].as_ref().unwrap_err();
        assert_eq!(
            e.message,
            "bedrock: the stream stopped with throttlingException: Too many requests, please wait before trying again. (rate limited: wait and try again)"
        );

        let whole = event("messageStop", r#"{"stopReason":"end_turn"}"#);
        let out = run(whole[..whole.len() - 3].to_vec(), 4);
        assert!(out[0]
            .as_ref()
            .unwrap_err()
            .message
            .contains("ended before the reply was complete"));

        let mut corrupt = whole.clone();
        let last = corrupt.len() - 1;
        corrupt[last] ^= 0xff; // the message CRC
        let out = run(corrupt, 64);
        let e = out[0].as_ref().unwrap_err();
        assert!(
            e.message.contains("event stream is corrupt"),
            "{}",
            e.message
        );
        let mut corrupt = whole;
        corrupt[9] ^= 0xff; // the prelude CRC
        let e = run(corrupt, 64).remove(0).unwrap_err();
        assert!(e.message.contains("corrupt"), "{}", e.message);
    }
}
