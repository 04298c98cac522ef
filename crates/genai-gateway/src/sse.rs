//! Server-sent events as `genai serve` writes them: one event's frame, and the HTTP answer
//! whose body is a stream of frames (the gateway's streamed replies and the warm local route).
//!
//! It owns the framing only. It must never decide what an event says, nor buffer a stream:
//! each frame goes out as it comes, and dropping the body drops the stream behind it (which is
//! how a client that goes away cancels the request upstream).

use crate::body::{self, HttpResponse};
use bytes::Bytes;
use futures::Stream;

use genai_core::format::StreamEvent;

/// One server-sent event: its type when it has one, and each line of its data.
pub fn frame(e: &StreamEvent) -> Bytes {
    let mut out = String::new();
    if let Some(t) = &e.event {
        out.push_str("event: ");
        out.push_str(t);
        out.push('\n');
    }
    for line in e.data.split('\n') {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

/// One server-sent event whose data is `data` as compact JSON, of type `event` when given:
/// written straight into the frame (compact JSON has no line break, so it is one data line).
pub(crate) fn json_frame(event: Option<&str>, data: &impl serde::Serialize) -> Bytes {
    let mut out = Vec::with_capacity(128);
    if let Some(t) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(t.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    // Serializing into a `Vec` fails only for a map with keys that are not strings, which
    // none of the gateway's shapes has.
    let _ = serde_json::to_writer(&mut out, data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// A `200 text/event-stream` answer sending `frames` as they come.
pub fn response(frames: impl Stream<Item = Bytes> + Send + 'static) -> HttpResponse {
    let mut r = HttpResponse::new(body::stream(frames));
    let headers = r.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_one_frame_with_each_data_line_prefixed() {
        let plain = frame(&StreamEvent::data("{\"a\":1}"));
        assert_eq!(&plain[..], b"data: {\"a\":1}\n\n");
        let typed = frame(&StreamEvent {
            event: Some("genai.progress".into()),
            data: "one\ntwo".into(),
        });
        assert_eq!(
            &typed[..],
            b"event: genai.progress\ndata: one\ndata: two\n\n"
        );
    }

    #[test]
    fn a_json_event_is_one_data_line_even_when_its_strings_hold_line_breaks() {
        let data = serde_json::json!({"text": "one\ntwo"});
        let typed = json_frame(Some("delta"), &data);
        assert_eq!(
            &typed[..],
            b"event: delta\ndata: {\"text\":\"one\\ntwo\"}\n\n"
        );
        assert_eq!(
            &json_frame(None, &data)[..],
            &typed[b"event: delta\n".len()..]
        );
    }
}
